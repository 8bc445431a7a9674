package liteagent_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/sqlite"
	"github.com/lite-agent/lite-agent/internal/fakemodel"
	"github.com/lite-agent/lite-agent/session"
)

// TestResumeFromFold: a session long enough gets a saved state
// (checkpoint.FoldKeeper) at the end of a turn; a resume starts from it and
// the model is sent the whole conversation; a damaged fold is ignored and
// saved again by the resume that replayed the log; a restore before it
// drops it and the model is sent only what the restore kept.
func TestResumeFromFold(t *testing.T) {
	ctx := context.Background()
	store, err := sqlite.Open(filepath.Join(t.TempDir(), "s.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	work := t.TempDir()
	const turns = 24 // 3 events a turn: past checkpoint.FoldEvery
	var replies []fakemodel.Reply
	for i := range turns {
		replies = append(replies, fakemodel.Reply{Text: fmt.Sprintf("answer-%d", i)})
	}
	_, p := startModel(t, "anthropic", replies...)
	a := newAgent(t, p, liteagent.Options{Checkpointer: store, Workdir: work})
	for i := range turns {
		if _, err := a.Send(ctx, fmt.Sprintf("prompt-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	id := a.SessionID()
	f, err := store.LoadFold(ctx, id)
	if err != nil {
		t.Fatalf("no fold saved after %d turns: %v", turns, err)
	}
	events, err := checkpoint.ReadAll(ctx, store, id)
	if err != nil {
		t.Fatal(err)
	}
	if f.Seq < checkpoint.FoldEvery || events[f.Seq-1].Type != session.TypeTurnCompleted {
		t.Fatalf("the fold covers seq %d, not a turn's end past %d", f.Seq, checkpoint.FoldEvery)
	}
	a.Close()

	// resume opens the session in a new agent and sends one more turn,
	// returning the request body the model got.
	resume := func(prompt string) string {
		t.Helper()
		srv, p := startModel(t, "anthropic", fakemodel.Reply{Text: "ok"})
		a := newAgent(t, p, liteagent.Options{Checkpointer: store, Workdir: work})
		defer a.Close()
		if err := a.Resume(ctx, id); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Send(ctx, prompt); err != nil {
			t.Fatal(err)
		}
		checkServer(t, srv)
		reqs := srv.Requests()
		return string(reqs[len(reqs)-1].Body)
	}
	wantAll := func(body string, n int) {
		t.Helper()
		for i := range n {
			for _, w := range []string{fmt.Sprintf(`"prompt-%d"`, i), fmt.Sprintf(`"answer-%d"`, i)} {
				if !strings.Contains(body, w) {
					t.Fatalf("the resumed request lacks %s", w)
				}
			}
		}
	}
	st, info, err := checkpoint.LoadState(ctx, store, id)
	if err != nil || info.From != f.Seq || st.Summary.Head != int64(len(events)) {
		t.Fatalf("LoadState: from %d (%s), head %d, %v; want from %d, head %d", info.From, info.Ignored, st.Summary.Head, err, f.Seq, len(events))
	}
	wantAll(resume("one more"), turns)

	// Damaged: ignored, and the resume's replay saves a good one.
	f, _ = store.LoadFold(ctx, id)
	f.State[len(f.State)/2] ^= 1
	if err := store.SaveFold(ctx, id, f); err != nil {
		t.Fatal(err)
	}
	wantAll(resume("again"), turns)
	if _, info, _ := checkpoint.LoadState(ctx, store, id); info.From == 0 || info.Ignored != "" {
		t.Fatalf("after a resume that replayed the log, LoadState starts from %d (%s)", info.From, info.Ignored)
	}

	// A restore to the third prompt drops the fold.
	a = newAgent(t, p, liteagent.Options{Checkpointer: store, Workdir: work})
	cps, err := a.ListCheckpoints(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Restore(ctx, id, cps[2].Seq, nil); err != nil {
		t.Fatal(err)
	}
	a.Close()
	if _, err := store.LoadFold(ctx, id); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("LoadFold after a restore before it: %v, want ErrNotFound", err)
	}
	body := resume("after the restore")
	wantAll(body, 2)
	if strings.Contains(body, `"prompt-2"`) || strings.Contains(body, `"answer-5"`) {
		t.Fatal("the request after the restore carries what the restore dropped")
	}
}
