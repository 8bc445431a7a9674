package liteagent_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/checkpoint/memory"
	"github.com/lite-agent/lite-agent/internal/fakemodel"
	"github.com/lite-agent/lite-agent/session"
)

// claimingStore is a real memory store (no leases) on which another
// process's restore claims the session right after a tool's intent is
// appended, before the tool runs.
type claimingStore struct {
	*memory.Store
	claimed bool
}

func (c *claimingStore) Append(ctx context.Context, id string, head int64, events []session.Event) (int64, error) {
	n, err := c.Store.Append(ctx, id, head, events)
	if err != nil || c.claimed {
		return n, err
	}
	for _, e := range events {
		if e.Type == session.TypeToolStarted {
			c.claimed = true
			claim := session.MustNew(session.TypeRestoreStarted, session.RestoreStarted{ToSeq: 1, Head: n, Undo: id + "-r1"})
			if _, err := c.Store.Append(ctx, id, n, []session.Event{claim}); err != nil {
				return 0, err
			}
			return n, nil // the writer's own append ended at n
		}
	}
	return n, err
}

// TestToolDoesNotWriteAfterARestoreClaimed: with a store without leases,
// a tool whose session a restore claimed after its intent was logged does
// not run, so it cannot write over what the restore puts back.
func TestToolDoesNotWriteAfterARestoreClaimed(t *testing.T) {
	srv, p := startModel(t, "anthropic",
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{call("w1", "write", map[string]any{"path": "a.txt", "content": "late write\n"})}},
		fakemodel.Reply{Text: "done"},
	)
	store := &claimingStore{Store: memory.New()}
	a := newAgent(t, p, liteagent.Options{Checkpointer: store})
	_, err := a.Send(context.Background(), "write it")
	if err == nil {
		t.Fatal("the turn went on after a restore claimed its session")
	}
	if !store.claimed {
		t.Fatal("the store never claimed the session; the test did not exercise the race")
	}
	if _, err := os.Stat(filepath.Join(a.Workdir(), "a.txt")); !os.IsNotExist(err) {
		t.Fatalf("the tool wrote a.txt after the restore claimed the session (stat: %v)", err)
	}
	if srv.Err() != nil {
		t.Logf("fake model: %v (the turn stopped before its second call)", srv.Err())
	}
}
