package liteagent_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/checkpoint"
	filestore "github.com/lite-agent/lite-agent/checkpoint/file"
	"github.com/lite-agent/lite-agent/internal/fakemodel"
)

// TestJobOutlivesItsTurnsLease: a background job still running when its
// turn returns holds no lease (another process sees the session idle and
// could take it), and the completion turn its end starts takes the lease
// again while it runs.
func TestJobOutlivesItsTurnsLease(t *testing.T) {
	_, p := startModel(t, "anthropic",
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{call("c1", "bash", map[string]any{"command": "while [ ! -e go ]; do sleep 0.05; done", "background": true})}},
		fakemodel.Reply{Text: "started"},
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{call("c2", "write", map[string]string{"path": "report.txt", "content": "ok\n"})}},
		fakemodel.Reply{Text: "wrote the report"},
	)
	root := filepath.Join(t.TempDir(), "sessions")
	store, err := filestore.Open(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	// Another process's view of the leases: a store of its own on the root.
	other, err := filestore.Open(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	var a *liteagent.Agent
	var inCompletion *checkpoint.Holder
	var holderErr error
	a = newAgent(t, p, liteagent.Options{Checkpointer: store, Approve: func(ctx context.Context, r liteagent.ApprovalRequest) (liteagent.Decision, error) {
		if r.Background {
			inCompletion, holderErr = other.LeaseHolder(ctx, a.SessionID())
		}
		return liteagent.AllowOnce, nil
	}})
	if _, err := a.Send(t.Context(), "build, then write a report"); err != nil {
		t.Fatal(err)
	}
	id := a.SessionID()
	if h, err := other.LeaseHolder(t.Context(), id); h != nil || err != nil {
		t.Fatalf("with the job running after its turn, the lease is held by %+v (%v); want nobody", h, err)
	}
	release, err := other.Lease(t.Context(), id)
	if err != nil {
		t.Fatalf("another process cannot lease the session while only a job runs: %v", err)
	}
	release()
	if err := os.WriteFile(filepath.Join(a.Workdir(), "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if res := waitJobs(t, a); len(res) != 1 || res[0].Text != "wrote the report" {
		t.Fatalf("completion results %+v", res)
	}
	if holderErr != nil || inCompletion == nil || inCompletion.PID != os.Getpid() {
		t.Fatalf("during the completion turn the lease holder was %+v (%v); want this process (%d)", inCompletion, holderErr, os.Getpid())
	}
	if h, err := other.LeaseHolder(t.Context(), id); h != nil || err != nil {
		t.Fatalf("after the completion turn the lease is held by %+v (%v)", h, err)
	}
}
