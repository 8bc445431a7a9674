package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/checkpoint/memory"
	"github.com/lite-agent/lite-agent/internal/fakemodel"
	"github.com/lite-agent/lite-agent/server"
	"github.com/lite-agent/lite-agent/session"
)

// TestRewindPreviewForkDelete: the rewind preview names the files and
// writes nothing; the rewind puts them back and tells streams to reload;
// a fork copies the session; delete removes it.
func TestRewindPreviewForkDelete(t *testing.T) {
	m := startModel(t,
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{toolCall("w1", "write", map[string]any{"path": "a.txt", "content": "new\n"})}},
		fakemodel.Reply{Text: "done"},
	)
	w := startWorker(t, workerOptions{model: m})
	c, st := w.approvedTurn("write a", "w1", "session")
	var cps struct{ Checkpoints []struct{ Seq int64 } }
	w.must(200, "GET", "/api/sessions/"+c.Session+"/checkpoints", nil).decode(t, &cps)
	cp := cps.Checkpoints[0].Seq

	headBefore := logTypes(t, w.store, c.Session)
	var prev struct {
		Preview bool
		Result  struct {
			Files []struct{ Path, Action string }
			Drift []string
		}
	}
	w.must(200, "POST", "/api/sessions/"+c.Session+"/rewind", map[string]any{"seq": cp, "preview": true}).decode(t, &prev)
	if !prev.Preview || len(prev.Result.Files) != 1 || prev.Result.Files[0].Path != "a.txt" || prev.Result.Files[0].Action != "remove" {
		t.Fatalf("preview: %+v", prev)
	}
	if _, err := os.Stat(filepath.Join(w.work, "a.txt")); err != nil {
		t.Fatal("the preview removed the file")
	}
	if got := logTypes(t, w.store, c.Session); len(got) != len(headBefore) {
		t.Fatalf("the preview changed the log: %d → %d events", len(headBefore), len(got))
	}
	// Someone edits the file: the preview shows the drift and the rewind
	// refuses with 409 until forced.
	os.WriteFile(filepath.Join(w.work, "a.txt"), []byte("mine\n"), 0o644)
	w.must(200, "POST", "/api/sessions/"+c.Session+"/rewind", map[string]any{"seq": cp, "preview": true}).decode(t, &prev)
	if len(prev.Result.Drift) != 1 {
		t.Fatalf("preview after an edit shows no drift: %+v", prev)
	}
	var e apiErr
	r := w.call("POST", "/api/sessions/"+c.Session+"/rewind", map[string]any{"seq": cp})
	r.decode(t, &e)
	if r.status != 409 || e.Code != "drift" || len(e.Drift) != 1 {
		t.Fatalf("rewind over drift: %d %s", r.status, r.body)
	}
	w.must(200, "POST", "/api/sessions/"+c.Session+"/rewind", map[string]any{"seq": cp, "force": true})
	if _, err := os.Stat(filepath.Join(w.work, "a.txt")); !os.IsNotExist(err) {
		t.Fatalf("a.txt after the rewind: %v", err)
	}
	st.waitFor("the reset", func(m sse) bool { return m.event == "reset" })
	var info struct{ Head int64 }
	w.must(200, "GET", "/api/sessions/"+c.Session, nil).decode(t, &info)
	if info.Head != cp {
		t.Fatalf("head after the rewind %d, want %d", info.Head, cp)
	}

	var fork struct{ Session, Parent string }
	w.must(201, "POST", "/api/sessions/"+c.Session+"/fork", map[string]any{}).decode(t, &fork)
	var finfo struct {
		Parent struct{ Session string }
		Head   int64
	}
	w.must(200, "GET", "/api/sessions/"+fork.Session, nil).decode(t, &finfo)
	if fork.Parent != c.Session || finfo.Parent.Session != c.Session || finfo.Head != cp {
		t.Fatalf("fork: %+v %+v", fork, finfo)
	}
	w.must(200, "DELETE", "/api/sessions/"+fork.Session, nil)
	if r := w.call("GET", "/api/sessions/"+fork.Session, nil); r.status != 404 {
		t.Fatalf("deleted session: %d", r.status)
	}
}

// TestCancelAndBusy: a second prompt while a turn runs is 409 with the
// head and writes nothing; cancel stops the turn and its log ends with
// turn_interrupted; the session then takes prompts again.
func TestCancelAndBusy(t *testing.T) {
	m := startModel(t,
		fakemodel.Reply{Text: strings.Repeat("slow ", 200), ChunkSize: 5, DeltaDelayMS: 20},
		fakemodel.Reply{Text: "again"},
	)
	w := startWorker(t, workerOptions{model: m})
	var c created
	w.must(202, "POST", "/api/sessions", map[string]any{"prompt": "go slowly"}).decode(t, &c)
	st := w.follow("/api/sessions/" + c.Session + "/stream")
	st.waitFor("a delta", func(m sse) bool { return m.event == "delta" })
	before := logTypes(t, w.store, c.Session)
	var e apiErr
	r := w.call("POST", "/api/sessions/"+c.Session+"/prompts", map[string]any{"prompt": "and this"})
	r.decode(t, &e)
	if r.status != 409 || e.Code != "turn_running" || e.ActualHead == nil || *e.ActualHead != int64(len(before)) {
		t.Fatalf("second prompt: %d %s (log has %d events)", r.status, r.body, len(before))
	}
	if r := w.call("POST", "/api/sessions/"+c.Session+"/rewind", map[string]any{"seq": 1}); r.status != 409 {
		t.Fatalf("rewind while running: %d %s", r.status, r.body)
	}
	if r := w.call("DELETE", "/api/sessions/"+c.Session, nil); r.status != 409 {
		t.Fatalf("delete while running: %d %s", r.status, r.body)
	}
	w.must(200, "POST", "/api/sessions/"+c.Session+"/cancel", nil)
	types := logTypes(t, w.store, c.Session)
	if types[len(types)-1] != string(session.TypeTurnInterrupted) || count(types, string(session.TypeUserPrompt)) != 1 {
		t.Fatalf("log after cancel: %v", types)
	}
	var again created
	w.must(200, "POST", "/api/sessions/"+c.Session+"/prompts", map[string]any{"prompt": "again", "wait": true}).decode(t, &again)
	if again.Error != "" || again.Result == nil || again.Result.Text != "again" {
		t.Fatalf("prompt after cancel: %+v", again)
	}
}

// TestAskUserOverHTTP: the model's question goes out on the stream and
// the answer posted comes back to the model as the tool's result.
func TestAskUserOverHTTP(t *testing.T) {
	m := startModel(t,
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{toolCall("q1", "ask_user", map[string]any{"question": "Which colour?", "choices": []string{"red", "blue"}})}},
		fakemodel.Reply{Expect: &fakemodel.Expect{ToolResultFor: []string{"q1"}, BodyContains: []string{"blue, please"}}, Text: "Blue it is."},
	)
	w := startWorker(t, workerOptions{model: m})
	var c created
	w.must(202, "POST", "/api/sessions", map[string]any{"prompt": "paint it"}).decode(t, &c)
	st := w.follow("/api/sessions/" + c.Session + "/stream")
	q := st.waitFor("the question", func(m sse) bool { return m.event == "question" })
	if !strings.Contains(q.data, "Which colour?") || !strings.Contains(q.data, `"q1"`) {
		t.Fatalf("question: %s", q.data)
	}
	if r := w.call("POST", "/api/sessions/"+c.Session+"/approvals/q1", map[string]any{"decision": "once"}); r.status != 404 {
		t.Fatalf("a question answered as an approval: %d %s", r.status, r.body)
	}
	w.must(200, "POST", "/api/sessions/"+c.Session+"/questions/q1", map[string]any{"answer": "blue, please"})
	st.waitEvent("turn_completed")
	if err := m.Err(); err != nil {
		t.Fatal(err)
	}
}

// TestHazardAcknowledge: a log cut off mid-tool (as a crash leaves it)
// refuses prompts with 409 and the hazards; acknowledging the token lets
// the session go on.
func TestHazardAcknowledge(t *testing.T) {
	m := startModel(t, fakemodel.Reply{Text: "carried on"})
	w := startWorker(t, workerOptions{model: m})
	ctx := context.Background()
	id := "crashed-session"
	use, _ := json.Marshal(map[string]any{"command": "make"})
	_, err := w.store.Append(ctx, id, 0, []session.Event{
		session.MustNew(session.TypeSessionStarted, session.SessionStarted{ID: id, Namespace: w.agent.Namespace(), Workdir: w.agent.Workdir()}),
		session.MustNew(session.TypeUserPrompt, session.UserPrompt{Text: "build it"}),
		session.MustNew(session.TypeAssistantMessage, session.AssistantMessage{Blocks: []session.Block{{Type: session.BlockToolUse, ID: "b1", Name: "bash", Input: use}}}),
		session.MustNew(session.TypeToolStarted, session.ToolStarted{CallID: "b1", Tool: "bash", Input: use}),
	})
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		Hazards []struct {
			Token  string
			CallID string `json:"call_id"`
		}
	}
	w.must(200, "GET", "/api/sessions/"+id, nil).decode(t, &info)
	if len(info.Hazards) != 1 || info.Hazards[0].CallID != "b1" {
		t.Fatalf("hazards: %+v", info)
	}
	var e struct {
		Code    string
		Hazards []struct{ Token string }
	}
	r := w.call("POST", "/api/sessions/"+id+"/prompts", map[string]any{"prompt": "carry on"})
	r.decode(t, &e)
	if r.status != 409 || e.Code != "hazards" || len(e.Hazards) != 1 || e.Hazards[0].Token != info.Hazards[0].Token {
		t.Fatalf("prompt with a hazard: %d %s", r.status, r.body)
	}
	w.must(200, "POST", "/api/sessions/"+id+"/acknowledge", map[string]any{"tokens": []string{info.Hazards[0].Token}})
	var c created
	w.must(200, "POST", "/api/sessions/"+id+"/prompts", map[string]any{"prompt": "carry on", "wait": true}).decode(t, &c)
	if c.Error != "" || c.Result.Text != "carried on" {
		t.Fatalf("after acknowledging: %+v", c)
	}
}

// TestSlowStreamClientDoesNotBlockTurns: a stream client that never
// reads does not slow the turn or another client: the turn ends, the
// reading client gets every event once and in order, and the stuck one is
// cut from the live feed.
func TestSlowStreamClientDoesNotBlockTurns(t *testing.T) {
	big := strings.Repeat("0123456789abcdef", 16<<10) // 256 KiB in 1-rune deltas: far past any socket buffer
	m := startModel(t, fakemodel.Reply{Text: "warm"}, fakemodel.Reply{Text: big, ChunkSize: 64})
	var logBuf syncBuffer
	w := startWorker(t, workerOptions{model: m, server: &server.Options{SubscriberBuffer: 8, WriteTimeout: 300 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&logBuf, nil))}})
	c := w.newSession("warm up")

	// The stuck client: a raw connection that sends the request and never
	// reads a byte.
	conn, err := net.Dial("tcp", strings.TrimPrefix(w.http.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /api/sessions/%s/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n\r\n", c.Session, w.srv.Token())
	reader := w.follow("/api/sessions/" + c.Session + "/stream")
	reader.waitEvent("turn_completed")

	done := make(chan created, 1)
	go func() {
		var res created
		w.must(200, "POST", "/api/sessions/"+c.Session+"/prompts", map[string]any{"prompt": "a long answer", "wait": true}).decode(t, &res)
		done <- res
	}()
	select {
	case res := <-done:
		if res.Error != "" || len(res.Result.Text) != len(big) {
			t.Fatalf("the turn: %q, %d bytes", res.Error, len(res.Result.Text))
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the turn did not end while a stream client was stuck")
	}
	reader.waitFor("the second turn's end", func(sse) bool {
		n := 0
		for _, m := range reader.snapshot() {
			if m.event == "event" && eventType(m) == "turn_completed" {
				n++
			}
		}
		return n == 2
	})
	contiguous(t, reader.events(), 1)
	waitLog(t, &logBuf, "fell behind")
}

// syncBuffer is a bytes.Buffer safe for a logger and a test at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func waitLog(t testing.TB, b *syncBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(b.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("the server log never said %q; it has:\n%s", want, b.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestShutdownFinishesOrInterrupts: Shutdown lets a turn that ends within
// the grace period finish, and cancels one that does not, whose log then
// ends with turn_interrupted; the log line says which.
func TestShutdownFinishesOrInterrupts(t *testing.T) {
	for _, tc := range []struct {
		name        string
		delay       int
		grace       time.Duration
		interrupted bool
		last        session.Type
		says        string
	}{
		{"finishes", 300, 20 * time.Second, false, session.TypeTurnCompleted, "turn finished during shutdown"},
		{"interrupted", 60000, 200 * time.Millisecond, true, session.TypeTurnInterrupted, "turn interrupted by shutdown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := startModel(t, fakemodel.Reply{Text: "late answer", DelayMS: tc.delay})
			var logBuf syncBuffer
			w := startWorker(t, workerOptions{model: m, server: &server.Options{Logger: slog.New(slog.NewTextHandler(&logBuf, nil))}})
			var c created
			w.must(202, "POST", "/api/sessions", map[string]any{"prompt": "answer slowly"}).decode(t, &c)
			st := w.follow("/api/sessions/" + c.Session + "/stream")
			st.waitEvent("user_prompt")
			ctx, cancel := context.WithTimeout(context.Background(), tc.grace)
			defer cancel()
			ends := w.srv.Shutdown(ctx)
			if len(ends) != 1 || ends[0].Session != c.Session || ends[0].Interrupted != tc.interrupted {
				t.Fatalf("ends: %+v", ends)
			}
			types := logTypes(t, w.store, c.Session)
			if types[len(types)-1] != string(tc.last) {
				t.Fatalf("log ends %v, want %s", types, tc.last)
			}
			if !strings.Contains(logBuf.String(), tc.says) || !strings.Contains(logBuf.String(), c.Session) {
				t.Fatalf("log %q does not say %q", logBuf.String(), tc.says)
			}
			st.waitFor("the shutdown message", func(m sse) bool { return m.event == "shutdown" })
			if r := w.call("POST", "/api/sessions/"+c.Session+"/prompts", map[string]any{"prompt": "more"}); r.status != 503 {
				t.Fatalf("prompt after shutdown: %d %s", r.status, r.body)
			}
		})
	}
}

// TestConcurrentPromptsOneTurn: prompts sent at once to one session of
// one server, among info reads and pending lists, start one turn; every
// other prompt is a 409 and the log holds one new prompt.
func TestConcurrentPromptsOneTurn(t *testing.T) {
	m := startModel(t, fakemodel.Reply{Text: "first"}, fakemodel.Reply{Text: "the one turn", DelayMS: 1500})
	w := startWorker(t, workerOptions{model: m})
	c := w.newSession("start")
	var wg sync.WaitGroup
	statuses := make(chan int, 16)
	start := make(chan struct{})
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			switch i % 4 {
			case 0:
				w.must(200, "GET", "/api/sessions/"+c.Session, nil)
			case 1:
				w.must(200, "GET", "/api/sessions/"+c.Session+"/pending", nil)
			default:
				statuses <- w.call("POST", "/api/sessions/"+c.Session+"/prompts", map[string]any{"prompt": "race"}).status
			}
		}()
	}
	close(start)
	wg.Wait()
	close(statuses)
	got := map[int]int{}
	for st := range statuses {
		got[st]++
	}
	if got[202] != 1 || got[409] != 7 {
		t.Fatalf("statuses %v: want one 202 and seven 409", got)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var info struct{ Status string }
		w.must(200, "GET", "/api/sessions/"+c.Session, nil).decode(t, &info)
		if info.Status != "running" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the raced turn never ended")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if types := logTypes(t, w.store, c.Session); count(types, string(session.TypeUserPrompt)) != 2 {
		t.Fatalf("log %v: want the first prompt and one raced prompt", types)
	}
}

// TestStreamFollowsAnotherWorker: a stream on one worker delivers the
// turns another worker on the same store runs, once each and in order,
// and says reset when that worker rewinds or deletes the session.
func TestStreamFollowsAnotherWorker(t *testing.T) {
	m := startModel(t, fakemodel.Reply{Text: "one"}, fakemodel.Reply{Text: "two"})
	db, work := filepath.Join(t.TempDir(), "s.db"), t.TempDir()
	fast := &server.Options{PollInterval: 20 * time.Millisecond}
	a := startWorker(t, workerOptions{model: m, store: openSQLite(t, db), work: work, server: fast})
	b := startWorker(t, workerOptions{model: m, store: openSQLite(t, db), work: work, server: fast})
	c := a.newSession("first")
	st := b.follow("/api/sessions/" + c.Session + "/stream")
	a.must(200, "POST", "/api/sessions/"+c.Session+"/prompts", map[string]any{"prompt": "second", "wait": true})
	st.waitFor("the second turn", func(sse) bool {
		n := 0
		for _, m := range st.snapshot() {
			if m.event == "event" && eventType(m) == "turn_completed" {
				n++
			}
		}
		return n == 2
	})
	contiguous(t, st.events(), 1)
	var cps struct{ Checkpoints []struct{ Seq int64 } }
	a.must(200, "GET", "/api/sessions/"+c.Session+"/checkpoints", nil).decode(t, &cps)
	a.must(200, "POST", "/api/sessions/"+c.Session+"/rewind", map[string]any{"seq": cps.Checkpoints[1].Seq})
	st.waitFor("the reset after the rewind", func(m sse) bool {
		return m.event == "reset" && m.data == `{"head":`+strconv.FormatInt(cps.Checkpoints[1].Seq, 10)+`}`
	})
	a.must(200, "DELETE", "/api/sessions/"+c.Session, nil)
	st.waitFor("the reset after the delete", func(m sse) bool { return m.event == "reset" && m.data == `{"head":0}` })
}

// TestInfoFollowsTheLog: session info, answered from a cache while the
// log stands still, changes with every append (of this worker or another
// on the same store), with a rewind, and with the lease of a running
// turn.
func TestInfoFollowsTheLog(t *testing.T) {
	m := startModel(t, fakemodel.Reply{Text: "one"}, fakemodel.Reply{Text: "two", DelayMS: 500}, fakemodel.Reply{Text: "three"})
	db, work := filepath.Join(t.TempDir(), "s.db"), t.TempDir()
	a := startWorker(t, workerOptions{model: m, store: openSQLite(t, db), work: work})
	b := startWorker(t, workerOptions{model: m, store: openSQLite(t, db), work: work})
	c := a.newSession("first")
	type infoJSON struct {
		Head    int64
		Status  string
		Running *struct{ PID int }
	}
	info := func() infoJSON {
		var in infoJSON
		a.must(200, "GET", "/api/sessions/"+c.Session, nil).decode(t, &in)
		return in
	}
	first := info()
	if again := info(); again != first || first.Status != "completed" || first.Running != nil {
		t.Fatalf("info twice: %+v %+v", first, again)
	}
	// Worker B runs a turn: A's info shows it running, then done.
	b.must(202, "POST", "/api/sessions/"+c.Session+"/prompts", map[string]any{"prompt": "second"})
	running := info()
	if running.Status != "running" || running.Running == nil || running.Head <= first.Head {
		t.Fatalf("info while B's turn runs: %+v (before %+v)", running, first)
	}
	deadline := time.Now().Add(30 * time.Second)
	// The turn lets go of its lease just after its last append: wait for
	// both.
	for in := info(); in.Status == "running" || in.Running != nil; in = info() {
		if time.Now().After(deadline) {
			t.Fatal("B's turn never ended in A's info")
		}
		time.Sleep(20 * time.Millisecond)
	}
	done := info()
	if done.Status != "completed" || done.Running != nil || done.Head <= running.Head {
		t.Fatalf("info after B's turn: %+v", done)
	}
	var cps struct{ Checkpoints []struct{ Seq int64 } }
	a.must(200, "GET", "/api/sessions/"+c.Session+"/checkpoints", nil).decode(t, &cps)
	a.must(200, "POST", "/api/sessions/"+c.Session+"/rewind", map[string]any{"seq": cps.Checkpoints[1].Seq})
	if back := info(); back.Head != cps.Checkpoints[1].Seq {
		t.Fatalf("info after the rewind: %+v, want head %d", back, cps.Checkpoints[1].Seq)
	}
}

// TestTakeOverARunningTurn: on a store that holds no liveness lease, a
// log whose last turn never ended (its process died, or runs elsewhere)
// refuses prompts with 409 turn_running; take_over closes that turn as
// interrupted and goes on.
func TestTakeOverARunningTurn(t *testing.T) {
	m := startModel(t, fakemodel.Reply{Text: "taken over"})
	w := startWorker(t, workerOptions{model: m, store: memory.New()})
	id := "left-running"
	_, err := w.store.Append(context.Background(), id, 0, []session.Event{
		session.MustNew(session.TypeSessionStarted, session.SessionStarted{ID: id, Namespace: w.agent.Namespace(), Workdir: w.agent.Workdir()}),
		session.MustNew(session.TypeUserPrompt, session.UserPrompt{Text: "started elsewhere"}),
	})
	if err != nil {
		t.Fatal(err)
	}
	var e apiErr
	r := w.call("POST", "/api/sessions/"+id+"/prompts", map[string]any{"prompt": "go on"})
	r.decode(t, &e)
	if r.status != 409 || e.Code != "turn_running" || e.ActualHead == nil || *e.ActualHead != 2 || !strings.Contains(e.Error, "take_over") {
		t.Fatalf("prompt to a running session: %d %s", r.status, r.body)
	}
	var c created
	w.must(200, "POST", "/api/sessions/"+id+"/prompts", map[string]any{"prompt": "go on", "wait": true, "take_over": true}).decode(t, &c)
	types := logTypes(t, w.store, id)
	want := []string{"session_started", "user_prompt", "turn_interrupted", "user_prompt", "assistant_message", "turn_completed"}
	if c.Error != "" || strings.Join(types, " ") != strings.Join(want, " ") {
		t.Fatalf("after take_over: %+v, log %v", c, types)
	}
}

// TestStreamOpenedAfterTheApproval: a client that opens the session's
// stream only once a call already waits for approval (a fast turn gets
// there first) is sent that approval, once, and answering it ends the
// turn. Before, the approval went out live before it was pending, so a
// stream opened in between saw neither.
func TestStreamOpenedAfterTheApproval(t *testing.T) {
	m := startModel(t,
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{toolCall("w1", "write", map[string]any{"path": "a.txt", "content": "new\n"})}},
		fakemodel.Reply{Text: "done"},
	)
	w := startWorker(t, workerOptions{model: m})
	var c created
	w.must(202, "POST", "/api/sessions", map[string]any{"prompt": "write a"}).decode(t, &c)
	w.waitPending(c.Session, "w1 waiting", func(approvals, _ []string) bool { return len(approvals) == 1 && approvals[0] == "w1" })
	st := w.follow("/api/sessions/" + c.Session + "/stream")
	st.waitFor("the approval", func(m sse) bool { return m.event == "approval" && strings.Contains(m.data, `"call_id":"w1"`) })
	w.must(200, "POST", "/api/sessions/"+c.Session+"/approvals/w1", map[string]any{"decision": "session"})
	st.waitEvent("turn_completed")
	n := 0
	for _, m := range st.snapshot() {
		if m.event == "approval" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("the stream sent the approval %d times, want once", n)
	}
}
