package liteagent_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/postgres"
	"github.com/lite-agent/lite-agent/internal/fakemodel"
	"github.com/lite-agent/lite-agent/session"
	"github.com/lite-agent/lite-agent/tool"
	"github.com/lite-agent/lite-agent/tool/builtin"
)

// pgSchema returns the URL of a fresh schema on the test server
// (LITE_AGENT_TEST_POSTGRES), dropped when the test ends.
func pgSchema(t *testing.T) string {
	t.Helper()
	base := os.Getenv("LITE_AGENT_TEST_POSTGRES")
	if base == "" {
		t.Skip("LITE_AGENT_TEST_POSTGRES is not set: this test needs a PostgreSQL server (see checkpoint/postgres)")
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	name := "lite_test_" + hex.EncodeToString(b[:])
	pgExec(t, base, `CREATE SCHEMA `+name)
	t.Cleanup(func() { pgExec(t, base, `DROP SCHEMA `+name+` CASCADE`) })
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", name)
	u.RawQuery = q.Encode()
	return u.String()
}

// pgExec runs one statement at loc and returns the first column of its
// first row as an int (0 if none).
func pgExec(t *testing.T, loc, sql string, args ...any) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, loc)
	if err != nil {
		t.Fatalf("connect to the test server: %v", err)
	}
	defer conn.Close(ctx)
	var n int64
	if err := conn.QueryRow(ctx, sql, args...).Scan(&n); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// endLease ends the server session holding session id's lease at loc, as
// an administrator, a network cut or a restart would, and waits until the
// lock is free.
func endLease(t *testing.T, loc string, s *postgres.Store, id string) {
	t.Helper()
	n := pgExec(t, loc, `WITH k AS (SELECT hashtextextended('lite-agent session lease ' || current_schema() || ' ' || $1, 0) AS key)
		SELECT count(pg_terminate_backend(l.pid)) FROM k, pg_locks l WHERE l.locktype = 'advisory' AND l.objsubid = 1 AND l.granted
		AND l.classid = ((k.key >> 32) & 4294967295)::oid AND l.objid = (k.key & 4294967295)::oid`, id)
	if n == 0 {
		t.Error("found no lease connection to end")
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		h, err := s.LeaseHolder(context.Background(), id)
		if err != nil {
			t.Error(err)
			return
		}
		if h == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("the lease of %s is still held by %+v", id, h)
			return
		}
	}
}

// holdTool is a tool that may write: it blocks until its gate is closed
// (or the turn is cancelled), then writes held.txt.
type holdTool struct {
	ran  chan struct{}
	gate chan struct{}
}

func (h *holdTool) Spec() tool.Spec {
	return tool.Spec{Name: "hold", Description: "waits, then writes held.txt", InputSchema: json.RawMessage(`{"type":"object"}`), Kind: tool.KindExec}
}

func (h *holdTool) Run(ctx context.Context, c tool.Call) tool.Result {
	close(h.ran)
	select {
	case <-h.gate:
	case <-ctx.Done():
	}
	if err := os.WriteFile(filepath.Join(c.Root.Dir(), "held.txt"), []byte("held\n"), 0o644); err != nil {
		return tool.Result{Output: err.Error(), IsError: true}
	}
	return tool.Result{Output: "held"}
}

// leaseLoss is what loseLease saw: the turn's error, the workdir, the log
// as another store reads it after the turn, and the log's head when the
// lease was lost.
type leaseLoss struct {
	err      error
	workdir  string
	events   []session.Event
	lostHead int64
}

// loseLease runs one turn on a PostgreSQL store whose lease's server
// session ends at the point lose picks (lose runs in its own goroutine and
// returns at that point); if takeOver, another store takes the lease then
// and holds it until the turn returns.
func loseLease(t *testing.T, takeOver bool, replies []fakemodel.Reply, hold *holdTool, lose func(srv *fakemodel.Server)) leaseLoss {
	t.Helper()
	loc := pgSchema(t)
	ctx := t.Context()
	open := func() *postgres.Store {
		s, err := postgres.Open(ctx, loc, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	store, other := open(), open()
	srv, p := startModel(t, "anthropic", replies...)
	tools := builtin.All()
	if hold != nil {
		tools = append(tools, hold)
	}
	a := newAgent(t, p, liteagent.Options{Checkpointer: store, Tools: tools, Approve: func(context.Context, liteagent.ApprovalRequest) (liteagent.Decision, error) {
		return liteagent.AllowOnce, nil
	}})
	var out leaseLoss
	lost := make(chan struct{})
	var release func()
	go func() {
		defer close(lost)
		lose(srv)
		id := a.SessionID()
		endLease(t, loc, other, id)
		sum, err := other.Head(context.Background(), id)
		if err != nil {
			t.Error(err)
		}
		out.lostHead = sum.Head
		if takeOver {
			r, err := other.Lease(context.Background(), id)
			if err != nil {
				t.Errorf("another store could not take the lost lease: %v", err)
				return
			}
			release = r
		}
		if hold != nil {
			close(hold.gate)
		}
	}()
	_, out.err = a.Send(ctx, "go")
	<-lost
	if release != nil {
		release()
	}
	events, err := checkpoint.ReadAll(ctx, other, a.SessionID())
	if err != nil {
		t.Fatalf("the log does not read whole after the turn: %v", err)
	}
	out.events, out.workdir = events, a.Workdir()
	return out
}

// duringStream waits until the model has the turn's first request: its
// reply is delayed, so the lease is lost while the turn waits for the
// stream.
func duringStream(srv *fakemodel.Server) {
	for len(srv.Requests()) == 0 {
		time.Sleep(5 * time.Millisecond)
	}
}

func exists(dir, name string) bool {
	_, err := os.Stat(filepath.Join(dir, name))
	return err == nil
}

func eventTypes(events []session.Event) []session.Type {
	var out []session.Type
	for _, e := range events {
		out = append(out, e.Type)
	}
	return out
}

// TestLeaseLostDuringTheModelStream: the server session holding a turn's
// lease ends while the model streams. If nobody took the lease meanwhile,
// the turn takes it back and finishes; if another process took it, the
// turn stops with checkpoint.ErrLeaseLost naming it, writes nothing more
// to the log, and its write tool does not run.
func TestLeaseLostDuringTheModelStream(t *testing.T) {
	replies := func() []fakemodel.Reply {
		return []fakemodel.Reply{
			{DelayMS: 1500, ToolCalls: []fakemodel.ToolCall{call("c1", "write", map[string]string{"path": "a.txt", "content": "a\n"})}},
			{Text: "wrote a.txt"},
		}
	}
	t.Run("taken back", func(t *testing.T) {
		r := loseLease(t, false, replies(), nil, duringStream)
		if r.err != nil {
			t.Fatalf("the turn failed: %v", r.err)
		}
		if !exists(r.workdir, "a.txt") || !slices.Contains(eventTypes(r.events), session.TypeTurnCompleted) {
			t.Fatalf("the turn did not finish: a.txt %v, log %v", exists(r.workdir, "a.txt"), eventTypes(r.events))
		}
	})
	t.Run("taken over", func(t *testing.T) {
		r := loseLease(t, true, replies(), nil, duringStream)
		var held *checkpoint.LeaseHeldError
		if !errors.Is(r.err, checkpoint.ErrLeaseLost) || !errors.As(r.err, &held) || held.Holder.PID != os.Getpid() {
			t.Fatalf("the turn's error = %v; want ErrLeaseLost and the new holder", r.err)
		}
		t.Logf("the turn's error: %v", r.err)
		if exists(r.workdir, "a.txt") {
			t.Error("the write tool ran after the turn lost its lease")
		}
		if int64(len(r.events)) != r.lostHead {
			t.Errorf("the log went from %d events when the lease was lost to %d: %v", r.lostHead, len(r.events), eventTypes(r.events))
		}
	})
}

// TestLeaseLostWhileAToolRuns: the server session holding a turn's lease
// ends between a tool's start and its receipt. If nobody took the lease,
// the receipt is written and the turn goes on; if another process took
// it, the turn stops with ErrLeaseLost: no receipt, nothing after what
// the tool's start wrote (an interrupted call, as after a crash), and the next tool of the same message (a write) does not
// run.
func TestLeaseLostWhileAToolRuns(t *testing.T) {
	replies := func() []fakemodel.Reply {
		return []fakemodel.Reply{
			{ToolCalls: []fakemodel.ToolCall{call("c1", "hold", map[string]string{}), call("c2", "write", map[string]string{"path": "b.txt", "content": "b\n"})}},
			{Text: "done"},
		}
	}
	whileHeld := func(h *holdTool) func(*fakemodel.Server) {
		return func(*fakemodel.Server) { <-h.ran }
	}
	t.Run("taken back", func(t *testing.T) {
		h := &holdTool{ran: make(chan struct{}), gate: make(chan struct{})}
		r := loseLease(t, false, replies(), h, whileHeld(h))
		if r.err != nil {
			t.Fatalf("the turn failed: %v", r.err)
		}
		if !exists(r.workdir, "b.txt") || !slices.Contains(eventTypes(r.events), session.TypeTurnCompleted) {
			t.Fatalf("the turn did not finish: b.txt %v, log %v", exists(r.workdir, "b.txt"), eventTypes(r.events))
		}
	})
	t.Run("taken over", func(t *testing.T) {
		h := &holdTool{ran: make(chan struct{}), gate: make(chan struct{})}
		r := loseLease(t, true, replies(), h, whileHeld(h))
		if !errors.Is(r.err, checkpoint.ErrLeaseLost) {
			t.Fatalf("the turn's error = %v; want ErrLeaseLost", r.err)
		}
		if exists(r.workdir, "b.txt") {
			t.Error("the next write tool ran after the turn lost its lease")
		}
		got := eventTypes(r.events)
		if int64(len(r.events)) != r.lostHead || !slices.Contains(got, session.TypeToolStarted) || slices.Contains(got, session.TypeToolFinished) {
			t.Errorf("the log went from %d events when the lease was lost to %v; want the held tool's start and no receipt", r.lostHead, got)
		}
	})
}
