package liteagent_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/memory"
	"github.com/lite-agent/lite-agent/checkpoint/sqlite"
	"github.com/lite-agent/lite-agent/internal/fakemodel"
	"github.com/lite-agent/lite-agent/provider/anthropic"
	"github.com/lite-agent/lite-agent/session"
	"github.com/lite-agent/lite-agent/tool"
)

// TestSendDeliversEveryUpdateBeforeItReturns checks the contract clients
// rely on instead of timeouts: when Send returns, OnUpdate has seen every
// event the turn appended, in log order, and the approval it asked.
func TestSendDeliversEveryUpdateBeforeItReturns(t *testing.T) {
	for _, kind := range providers {
		t.Run(kind, func(t *testing.T) {
			srv, p := startModel(t, kind,
				fakemodel.Reply{Text: "Writing.", ToolCalls: []fakemodel.ToolCall{call("c1", "write", map[string]string{"path": "a.txt", "content": "a"})}},
				fakemodel.Reply{Text: "Done."},
			)
			store := memory.New()
			approve := func(ctx context.Context, req liteagent.ApprovalRequest) (liteagent.Decision, error) {
				return liteagent.AllowOnce, nil
			}
			a := newAgent(t, p, liteagent.Options{Checkpointer: store, Approve: approve})
			s, err := a.NewSession(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if s.Head() != 0 {
				t.Fatalf("a new session has head %d before its first Send", s.Head())
			}
			if _, err := store.Head(t.Context(), s.ID()); !errors.Is(err, checkpoint.ErrNotFound) {
				t.Fatalf("a new session's log exists before its first Send: %v", err)
			}
			var seqs []int64
			var text strings.Builder
			approvals := 0
			res, err := s.Send(t.Context(), "write a", &liteagent.SendOptions{OnUpdate: func(u liteagent.Update) {
				if u.Session != s.ID() {
					t.Errorf("update of session %s in a Send of %s", u.Session, s.ID())
				}
				switch {
				case u.Event != nil:
					seqs = append(seqs, u.Event.Seq)
				case u.Delta != nil && u.Delta.Kind == "text":
					text.WriteString(u.Delta.Text)
				case u.Approval != nil:
					approvals++
				}
			}})
			if err != nil {
				t.Fatal(err)
			}
			events, err := checkpoint.ReadAll(t.Context(), store, s.ID())
			if err != nil {
				t.Fatal(err)
			}
			if int64(len(seqs)) != res.Head || int64(len(events)) != res.Head {
				t.Fatalf("OnUpdate saw %d events, the log has %d, head %d", len(seqs), len(events), res.Head)
			}
			for i, seq := range seqs {
				if seq != int64(i+1) {
					t.Fatalf("event %d delivered with seq %d: %v", i, seq, seqs)
				}
			}
			if text.String() != "Writing.Done." || approvals != 1 {
				t.Fatalf("deltas %q, %d approvals asked", text.String(), approvals)
			}
			checkServer(t, srv)
		})
	}
}

// TestManySessionsOneAgentSQLite is the server shape: one Agent and one
// SQLite store serving 8 conversations at once, each from its own
// goroutine. Every log stays contiguous and every update reaches only the
// callback of its own session.
func TestManySessionsOneAgentSQLite(t *testing.T) {
	const sessions, turns = 8, 20
	srv, err := fakemodel.Start(&fakemodel.Script{Replies: []fakemodel.Reply{{Text: "ok"}}, WhenDone: fakemodel.WhenDoneRepeatLast})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	p, err := newProvider["anthropic"](srv)
	if err != nil {
		t.Fatal(err)
	}
	store, err := sqlite.Open(filepath.Join(t.TempDir(), "s.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	a := newAgent(t, p, liteagent.Options{Checkpointer: store})
	ids := make([]string, sessions)
	var wg sync.WaitGroup
	for g := range sessions {
		wg.Go(func() {
			s, err := a.NewSession(t.Context(), nil)
			if err != nil {
				t.Error(err)
				return
			}
			defer s.Close()
			ids[g] = s.ID()
			for i := range turns {
				prompt := fmt.Sprintf("session %d turn %d", g, i)
				_, err := s.Send(t.Context(), prompt, &liteagent.SendOptions{OnUpdate: func(u liteagent.Update) {
					if u.Session != s.ID() {
						t.Errorf("session %s got an update of %s", s.ID(), u.Session)
					}
					var up session.UserPrompt
					if u.Event != nil && u.Event.Type == session.TypeUserPrompt && (u.Event.Decode(&up) != nil || up.Text != prompt) {
						t.Errorf("session %d got the prompt %q in its turn %d", g, up.Text, i)
					}
				}})
				if err != nil {
					t.Errorf("session %d turn %d: %v", g, i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	for g, id := range ids {
		events, err := checkpoint.ReadAll(t.Context(), store, id)
		if err != nil {
			t.Fatal(err)
		}
		// session_started, project_context, then user_prompt,
		// assistant_message, turn_completed per turn.
		if len(events) != 2+3*turns {
			t.Fatalf("session %d has %d events, want %d", g, len(events), 2+3*turns)
		}
		n := 0
		for i, e := range events {
			if e.Seq != int64(i+1) {
				t.Fatalf("session %d: event %d has seq %d", g, i, e.Seq)
			}
			var up session.UserPrompt
			if e.Type == session.TypeUserPrompt {
				if e.Decode(&up) != nil || up.Text != fmt.Sprintf("session %d turn %d", g, n) {
					t.Fatalf("session %d: prompt %q at seq %d, want its turn %d", g, up.Text, e.Seq, n)
				}
				n++
			}
		}
	}
	list, err := a.ListSessions(t.Context())
	if err != nil || len(list) != sessions {
		t.Fatalf("ListSessions: %d sessions, %v", len(list), err)
	}
}

const envConflictChild = "LITE_AGENT_TEST_CONFLICT_CHILD"

// TestConflictChild is the other process of TestTwoProcessesOneSession:
// it opens the session and sends one turn.
func TestConflictChild(t *testing.T) {
	spec := os.Getenv(envConflictChild)
	if spec == "" {
		t.Skip("run by TestTwoProcessesOneSession")
	}
	parts := strings.Split(spec, "|") // db, workdir, session, model URL
	store, err := sqlite.Open(parts[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	// The server lives in the other process: no connection may stay open
	// for goleak to find.
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	p, err := anthropic.New(&anthropic.Options{APIKey: "test-key", BaseURL: parts[3], RetryBaseDelay: time.Millisecond, HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	a, err := liteagent.New(&liteagent.Options{Provider: p, Model: "m", Workdir: parts[1], Checkpointer: store})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	s, err := a.OpenSession(t.Context(), parts[2], nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Send(t.Context(), "from the child", nil); err != nil {
		t.Fatal(err)
	}
}

// TestTwoProcessesOneSession opens one session in this process and in
// another: the other sends first and succeeds; this one's Send then finds
// the log moved and stops with the conflict error, writing nothing. Its
// first model call goes out while the prompt's append is made (README:
// "One turn against its physical floor") and may reach the model before
// the append fails: the third reply is that call's, which nobody sees.
func TestTwoProcessesOneSession(t *testing.T) {
	srv, p := startModel(t, "anthropic", fakemodel.Reply{Text: "first"}, fakemodel.Reply{Text: "child"}, fakemodel.Reply{Text: "unseen"})
	db := filepath.Join(t.TempDir(), "s.db")
	dir := t.TempDir()
	store, err := sqlite.Open(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	a := newAgent(t, p, liteagent.Options{Checkpointer: store, Workdir: dir})
	res, err := a.Send(t.Context(), "first")
	if err != nil {
		t.Fatal(err)
	}
	mine, err := a.OpenSession(t.Context(), res.Session, nil)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestConflictChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), envConflictChild+"="+strings.Join([]string{db, dir, res.Session, srv.URL()}, "|"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the other process: %v\n%s", err, out)
	}
	before := types(t, store, res.Session)
	_, err = mine.Send(t.Context(), "from this process", nil)
	var ce *checkpoint.ConflictError
	var ae *liteagent.AppendError
	if !errors.As(err, &ce) || !errors.As(err, &ae) || ae.Session != res.Session {
		t.Fatalf("Send on a session another process moved: %v, want an *AppendError wrapping a *ConflictError", err)
	}
	if after := types(t, store, res.Session); len(after) != len(before) {
		t.Fatalf("the losing Send wrote to the log: %v, then %v", before, after)
	}
	checkServer(t, srv)
}

// TestOpenSessionWorkdir checks that a recorded workdir is information:
// an opened session runs where its log says, a caller naming another
// directory is refused with both named, and Retarget moves it.
func TestOpenSessionWorkdir(t *testing.T) {
	_, p := startModel(t, "anthropic", fakemodel.Reply{Text: "ok"})
	store := memory.New()
	recorded, other := t.TempDir(), t.TempDir()
	a := newAgent(t, p, liteagent.Options{Checkpointer: store, Workdir: recorded})
	res, err := a.Send(t.Context(), "hello")
	if err != nil {
		t.Fatal(err)
	}
	b := newAgent(t, p, liteagent.Options{Checkpointer: store, Workdir: other})
	s, err := b.OpenSession(t.Context(), res.Session, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := tool.Canonical(recorded)
	if s.Workdir() != want {
		t.Fatalf("opened session runs in %s, want the recorded %s", s.Workdir(), want)
	}
	_, err = b.OpenSession(t.Context(), res.Session, &liteagent.SessionOptions{Workdir: other})
	var we *liteagent.WorkdirError
	otherCanon, _ := tool.Canonical(other)
	if !errors.As(err, &we) || we.Recorded != want || we.Workdir != otherCanon || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), otherCanon) {
		t.Fatalf("opening in another workdir: %v, want a *WorkdirError naming %s and %s", err, want, otherCanon)
	}
	if _, err := b.OpenSession(t.Context(), res.Session, &liteagent.SessionOptions{Workdir: recorded}); err != nil {
		t.Fatalf("naming the recorded workdir: %v", err)
	}
	if got := strings.Join(types(t, store, res.Session), " "); strings.Contains(got, "workdir_changed") {
		t.Fatalf("opening wrote to the log: %s", got)
	}
	s2, err := b.OpenSession(t.Context(), res.Session, &liteagent.SessionOptions{Workdir: other, Retarget: true})
	if err != nil || s2.Workdir() != otherCanon {
		t.Fatalf("retargeted: %v, workdir %v", err, s2)
	}
	// The move is in the log: the session now belongs to the other
	// directory, and naming the old one is refused.
	if got := types(t, store, res.Session); got[len(got)-1] != "workdir_changed" {
		t.Fatalf("the retarget is not recorded: %v", got)
	}
	if _, err := b.OpenSession(t.Context(), res.Session, &liteagent.SessionOptions{Workdir: recorded}); !errors.As(err, &we) {
		t.Fatalf("naming the old workdir after the move: %v", err)
	}
}
