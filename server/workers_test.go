package server_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/postgres"
	"github.com/lite-agent/lite-agent/internal/fakemodel"
	"github.com/lite-agent/lite-agent/server"
)

// postgresURL returns a URL of a fresh schema on the test server
// (LITE_AGENT_TEST_POSTGRES), dropped when the test ends, or skips.
func postgresURL(tb testing.TB) string {
	tb.Helper()
	base := os.Getenv("LITE_AGENT_TEST_POSTGRES")
	if base == "" {
		tb.Skip("LITE_AGENT_TEST_POSTGRES is not set: the PostgreSQL workers need a server (source .ci/postgres.sh)")
	}
	var b [8]byte
	rand.Read(b[:])
	name := "lite_serve_" + hex.EncodeToString(b[:])
	admin := func(sql string) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			tb.Fatalf("connect to the test server: %v", err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, sql); err != nil {
			tb.Fatalf("%s: %v", sql, err)
		}
	}
	admin("CREATE SCHEMA " + name)
	tb.Cleanup(func() { admin("DROP SCHEMA " + name + " CASCADE") })
	u, err := url.Parse(base)
	if err != nil {
		tb.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", name)
	u.RawQuery = q.Encode()
	return u.String()
}

func openPostgres(tb testing.TB, loc string) checkpoint.Checkpointer {
	tb.Helper()
	st, err := postgres.Open(context.Background(), loc, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	return st
}

// storeKinds open two handles on one store of each kind that several
// workers share.
var storeKinds = []struct {
	name string
	loc  func(testing.TB) string
	open func(testing.TB, string) checkpoint.Checkpointer
}{
	{"sqlite", func(tb testing.TB) string { return filepath.Join(tb.TempDir(), "s.db") }, openSQLite},
	{"postgres", postgresURL, openPostgres},
}

// waitPending polls worker w's pending list of session id until ok.
func (w *worker) waitPending(id, what string, ok func(approvals, questions []string) bool) {
	w.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		var p struct {
			Approvals []struct {
				CallID string `json:"call_id"`
			}
			Questions []struct {
				CallID string `json:"call_id"`
			}
		}
		r := w.must(200, "GET", "/api/sessions/"+id+"/pending", nil)
		r.decode(w.t, &p)
		var ap, qs []string
		for _, a := range p.Approvals {
			ap = append(ap, a.CallID)
		}
		for _, q := range p.Questions {
			qs = append(qs, q.CallID)
		}
		if ok(ap, qs) {
			return
		}
		last = string(r.body)
		time.Sleep(10 * time.Millisecond)
	}
	w.t.Fatalf("timed out waiting for %s in the pending list; it had %s", what, last)
}

// TestAnswersOnAnotherWorker: a turn runs on worker A; its approval and
// its question are listed and answered on worker B of the same store. The
// tool runs once, a second answer (on either worker) is refused with 409,
// an answer after the turn with 404, and the mailbox is empty once the
// turn ends. On SQLite and on PostgreSQL.
func TestAnswersOnAnotherWorker(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind.name, func(t *testing.T) {
			m := startModel(t,
				fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{toolCall("w1", "write", map[string]any{"path": "hello.txt", "content": "hi\n"})}},
				fakemodel.Reply{Expect: &fakemodel.Expect{ToolResultFor: []string{"w1"}},
					ToolCalls: []fakemodel.ToolCall{toolCall("q1", "ask_user", map[string]any{"question": "Which colour?"})}},
				fakemodel.Reply{Expect: &fakemodel.Expect{ToolResultFor: []string{"q1"}, BodyContains: []string{"blue, please"}}, Text: "Blue it is."},
			)
			loc, work := kind.loc(t), t.TempDir()
			a := startWorker(t, workerOptions{model: m, store: kind.open(t, loc), work: work})
			b := startWorker(t, workerOptions{model: m, store: kind.open(t, loc), work: work})
			var c created
			a.must(202, "POST", "/api/sessions", map[string]any{"prompt": "write hello, then ask"}).decode(t, &c)
			id := c.Session
			st := b.follow("/api/sessions/" + id + "/stream")

			b.waitPending(id, "the approval of w1", func(ap, _ []string) bool { return slices.Equal(ap, []string{"w1"}) })
			if r := b.call("POST", "/api/sessions/"+id+"/questions/w1", map[string]any{"answer": "x"}); r.status != 404 {
				t.Fatalf("an approval answered as a question on B: %d %s", r.status, r.body)
			}
			b.must(200, "POST", "/api/sessions/"+id+"/approvals/w1", map[string]any{"decision": "once"})
			b.waitPending(id, "the question q1", func(ap, qs []string) bool { return len(ap) == 0 && slices.Equal(qs, []string{"q1"}) })
			for _, w := range []*worker{a, b} {
				r := w.call("POST", "/api/sessions/"+id+"/approvals/w1", map[string]any{"decision": "deny"})
				var e apiErr
				r.decode(t, &e)
				if r.status != 409 || e.Code != "answered" {
					t.Fatalf("a second answer to w1: %d %s; want 409 answered", r.status, r.body)
				}
			}
			b.must(200, "POST", "/api/sessions/"+id+"/questions/q1", map[string]any{"answer": "blue, please"})
			if r := a.call("POST", "/api/sessions/"+id+"/questions/q1", map[string]any{"answer": "red"}); r.status != 409 && r.status != 404 {
				t.Fatalf("a second answer to q1 on A: %d %s; want 409 (or 404 once the turn ended)", r.status, r.body)
			}
			st.waitEvent("turn_completed")
			st.waitFor("A's turn to end", func(sse) bool { return a.srv.Running() == nil })

			types := logTypes(t, a.store, id)
			if n, k := count(types, "tool_started"), count(types, "tool_finished"); n != 2 || k != 2 {
				t.Fatalf("log %v: want 2 tools started and finished (w1 once, q1 once)", types)
			}
			if got, err := os.ReadFile(filepath.Join(work, "hello.txt")); err != nil || string(got) != "hi\n" {
				t.Fatalf("hello.txt = %q, %v", got, err)
			}
			if err := m.Err(); err != nil {
				t.Fatal(err)
			}
			if r := b.call("POST", "/api/sessions/"+id+"/approvals/w1", map[string]any{"decision": "once"}); r.status != 404 {
				t.Fatalf("an answer after the turn: %d %s; want 404", r.status, r.body)
			}
			if ids, err := a.store.(checkpoint.Mailbox).Mailboxes(t.Context()); err != nil || len(ids) != 0 {
				t.Fatalf("mailboxes after the turn = %v, %v; want none", ids, err)
			}
		})
	}
}

// TestAnswerRaceAcrossWorkers: the same approval sent to two workers at
// once is taken once; the other gets 409.
func TestAnswerRaceAcrossWorkers(t *testing.T) {
	m := startModel(t,
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{toolCall("w1", "write", map[string]any{"path": "a.txt", "content": "a\n"})}},
		fakemodel.Reply{Expect: &fakemodel.Expect{ToolResultFor: []string{"w1"}}, Text: "done", DelayMS: 300},
	)
	loc, work := postgresURL(t), t.TempDir()
	a := startWorker(t, workerOptions{model: m, store: openPostgres(t, loc), work: work})
	b := startWorker(t, workerOptions{model: m, store: openPostgres(t, loc), work: work})
	var c created
	a.must(202, "POST", "/api/sessions", map[string]any{"prompt": "write a"}).decode(t, &c)
	b.waitPending(c.Session, "w1", func(ap, _ []string) bool { return len(ap) == 1 })
	statuses := make(chan int, 2)
	for i, w := range []*worker{a, b} {
		decision := []string{"once", "deny"}[i]
		go func() {
			statuses <- w.call("POST", "/api/sessions/"+c.Session+"/approvals/w1", map[string]any{"decision": decision}).status
		}()
	}
	got := []int{<-statuses, <-statuses}
	slices.Sort(got)
	if !slices.Equal(got, []int{200, 409}) {
		t.Fatalf("two answers at once: %v, want one 200 and one 409", got)
	}
	st := a.follow("/api/sessions/" + c.Session + "/stream")
	st.waitEvent("turn_completed")
	if n := count(logTypes(t, a.store, c.Session), "tool_finished"); n != 1 {
		t.Fatalf("%d tool_finished events, want 1", n)
	}
}

// TestStreamHearsAnotherWorkerOnPostgres: with polling made useless (an
// hour between polls), worker B's stream still gets every event of a turn
// worker A runs, in order, from PostgreSQL's notifications.
func TestStreamHearsAnotherWorkerOnPostgres(t *testing.T) {
	m := startModel(t, fakemodel.Reply{Text: "one"}, fakemodel.Reply{Text: "two, streamed", ChunkSize: 4})
	loc, work := postgresURL(t), t.TempDir()
	slow := &server.Options{PollInterval: time.Hour}
	a := startWorker(t, workerOptions{model: m, store: openPostgres(t, loc), work: work, server: slow})
	b := startWorker(t, workerOptions{model: m, store: openPostgres(t, loc), work: work, server: slow})
	c := a.newSession("first")
	st := b.follow("/api/sessions/" + c.Session + "/stream")
	st.waitEvent("turn_completed") // the first turn, from the log
	a.must(200, "POST", "/api/sessions/"+c.Session+"/prompts", map[string]any{"prompt": "second", "wait": true})
	st.waitFor("the second turn's end", func(sse) bool {
		n := 0
		for _, m := range st.snapshot() {
			if m.event == "event" && eventType(m) == "turn_completed" {
				n++
			}
		}
		return n == 2
	})
	contiguous(t, st.events(), 1)
	var texts []string
	for _, m := range st.snapshot() {
		if m.event == "event" && (eventType(m) == "user_prompt" || eventType(m) == "assistant_message") {
			texts = append(texts, m.data)
		}
	}
	if len(texts) != 4 || !strings.Contains(texts[2], "second") || !strings.Contains(texts[3], "two, streamed") {
		t.Fatalf("B's stream has the prompts and answers %v", texts)
	}
	// A rewind and a delete on A reach B the same way.
	var cps struct{ Checkpoints []struct{ Seq int64 } }
	a.must(200, "GET", "/api/sessions/"+c.Session+"/checkpoints", nil).decode(t, &cps)
	a.must(200, "POST", "/api/sessions/"+c.Session+"/rewind", map[string]any{"seq": cps.Checkpoints[1].Seq})
	st.waitFor("the reset after the rewind", func(m sse) bool { return m.event == "reset" && m.data != `{"head":0}` })
	a.must(200, "DELETE", "/api/sessions/"+c.Session, nil)
	st.waitFor("the reset after the delete", func(m sse) bool { return m.event == "reset" && m.data == `{"head":0}` })
}
