package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/sqlite"
	"github.com/lite-agent/lite-agent/internal/fakemodel"
	"github.com/lite-agent/lite-agent/provider/anthropic"
	"github.com/lite-agent/lite-agent/server"
)

// worker is one server over a real store, an agent talking to the fake
// model over HTTP, and a real HTTP listener on 127.0.0.1.
type worker struct {
	t     testing.TB
	store checkpoint.Checkpointer
	agent *liteagent.Agent
	srv   *server.Server
	http  *httptest.Server
	work  string
}

type workerOptions struct {
	model   *fakemodel.Server
	store   checkpoint.Checkpointer // default: SQLite in a temp dir
	work    string                  // default: a temp dir
	server  *server.Options         // Store and Approvals are filled in
	noModel bool
}

// startModel starts the fake model with replies.
func startModel(t testing.TB, replies ...fakemodel.Reply) *fakemodel.Server {
	t.Helper()
	m, err := fakemodel.Start(&fakemodel.Script{Replies: replies})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func openSQLite(t testing.TB, path string) checkpoint.Checkpointer {
	t.Helper()
	st, err := sqlite.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func startWorker(t testing.TB, o workerOptions) *worker {
	t.Helper()
	if o.store == nil {
		o.store = openSQLite(t, filepath.Join(t.TempDir(), "s.db"))
	}
	if o.work == "" {
		o.work = t.TempDir()
	}
	ap := server.NewApprovals()
	opts := &liteagent.Options{Workdir: o.work, Checkpointer: o.store, Approve: ap.Approve, Input: ap.Input, NoProjectContext: true, Model: "claude-test"}
	if o.model != nil {
		p, err := anthropic.New(&anthropic.Options{APIKey: "test", BaseURL: o.model.URL()})
		if err != nil {
			t.Fatal(err)
		}
		opts.Provider = p
	}
	a, err := liteagent.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	var so server.Options
	if o.server != nil {
		so = *o.server
	}
	so.Store, so.Approvals = o.store, ap
	srv, err := server.New(a, &so)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	w := &worker{t: t, store: o.store, agent: a, srv: srv, http: hs, work: o.work}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		hs.CloseClientConnections()
		hs.Close()
		a.Close()
	})
	return w
}

// reply is an HTTP answer, read whole.
type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r reply) decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

// apiErr is an error body.
type apiErr struct {
	Error        string `json:"error"`
	Code         string `json:"code"`
	ExpectedHead *int64 `json:"expected_head"`
	ActualHead   *int64 `json:"actual_head"`
	Valid        []int64
	Drift        []string
}

// call sends a request with the token; body is JSON-encoded unless it is
// a string (sent as it is).
func (w *worker) call(method, path string, body any, header ...string) reply {
	w.t.Helper()
	return w.callWith(method, path, body, append([]string{"Authorization", "Bearer " + w.srv.Token()}, header...)...)
}

func (w *worker) callWith(method, path string, body any, header ...string) reply {
	w.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			w.t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, w.http.URL+path, rd)
	if err != nil {
		w.t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		if strings.EqualFold(header[i], "Host") {
			req.Host = header[i+1]
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		w.t.Fatal(err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: b}
}

// must is call that fails the test unless the status is want.
func (w *worker) must(want int, method, path string, body any) reply {
	w.t.Helper()
	r := w.call(method, path, body)
	if r.status != want {
		w.t.Fatalf("%s %s: status %d, want %d: %s", method, path, r.status, want, r.body)
	}
	return r
}

// sse is one message of a stream.
type sse struct {
	id    string
	event string
	data  string
}

// stream is a client of a session's stream, read in the background.
type stream struct {
	t      testing.TB
	cancel context.CancelFunc
	mu     sync.Mutex
	msgs   []sse
	done   chan struct{}
	status int
}

// follow opens a session's stream with extra headers (e.g.
// Last-Event-ID) and reads it until the test ends; like a browser's
// EventSource, it reconnects with Last-Event-ID when the server drops it.
func (w *worker) follow(path string, header ...string) *stream {
	w.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &stream{t: w.t, cancel: cancel, done: make(chan struct{})}
	connect := func(lastID string) (*http.Response, error) {
		req, _ := http.NewRequestWithContext(ctx, "GET", w.http.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+w.srv.Token())
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		if lastID != "" {
			req.Header.Set("Last-Event-ID", lastID)
		}
		return http.DefaultClient.Do(req)
	}
	resp, err := connect("")
	if err != nil {
		cancel()
		w.t.Fatal(err)
	}
	s.status = resp.StatusCode
	w.t.Cleanup(func() { cancel(); <-s.done })
	go func() {
		defer close(s.done)
		lastID := ""
		for {
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(make([]byte, 1<<20), 8<<20)
			var cur sse
			for sc.Scan() {
				line := sc.Text()
				switch {
				case line == "":
					if cur.event != "" {
						s.mu.Lock()
						s.msgs = append(s.msgs, cur)
						s.mu.Unlock()
					}
					if cur.id != "" {
						lastID = cur.id
					}
					cur = sse{}
				case strings.HasPrefix(line, "id: "):
					cur.id = line[4:]
				case strings.HasPrefix(line, "event: "):
					cur.event = line[7:]
				case strings.HasPrefix(line, "data: "):
					cur.data = line[6:]
				}
			}
			resp.Body.Close()
			if ctx.Err() != nil || s.status != http.StatusOK || s.ended() {
				return
			}
			time.Sleep(20 * time.Millisecond)
			if resp, err = connect(lastID); err != nil {
				return
			}
		}
	}()
	return s
}

// ended reports whether the server said it is shutting down.
func (s *stream) ended() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.msgs) > 0 && s.msgs[len(s.msgs)-1].event == "shutdown"
}

func (s *stream) snapshot() []sse {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sse(nil), s.msgs...)
}

// waitFor waits until a message satisfies ok and returns it.
func (s *stream) waitFor(what string, ok func(sse) bool) sse {
	s.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, m := range s.snapshot() {
			if ok(m) {
				return m
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.t.Fatalf("timed out waiting for %s; the stream had: %v", what, s.snapshot())
	return sse{}
}

// waitEvent waits for a persisted event of type typ.
func (s *stream) waitEvent(typ string) sse {
	s.t.Helper()
	return s.waitFor("a "+typ+" event", func(m sse) bool { return m.event == "event" && eventType(m) == typ })
}

func eventType(m sse) string {
	var e struct{ Type string }
	json.Unmarshal([]byte(m.data), &e)
	return e.Type
}

// events returns the seqs of the persisted events the stream delivered,
// in order.
func (s *stream) events() []int64 {
	var out []int64
	for _, m := range s.snapshot() {
		if m.event == "event" {
			n, _ := strconv.ParseInt(m.id, 10, 64)
			out = append(out, n)
		}
	}
	return out
}

// contiguous fails unless seqs are first, first+1, … .
func contiguous(t testing.TB, seqs []int64, first int64) {
	t.Helper()
	for i, s := range seqs {
		if s != first+int64(i) {
			t.Fatalf("stream seqs %v: want a run from %d without gaps or repeats", seqs, first)
		}
	}
}

// logTypes returns the event types of session id's log.
func logTypes(t testing.TB, st checkpoint.Checkpointer, id string) []string {
	t.Helper()
	evs, err := checkpoint.ReadAll(context.Background(), st, id)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs {
		out = append(out, string(e.Type))
	}
	return out
}

func count(xs []string, x string) int {
	n := 0
	for _, v := range xs {
		if v == x {
			n++
		}
	}
	return n
}

// created is the answer to a prompt.
type created struct {
	Session   string `json:"session"`
	PromptSeq int64  `json:"prompt_seq"`
	Stream    string `json:"stream"`
	Result    *struct {
		Text string
		Head int64
	} `json:"result"`
	Error string `json:"error"`
}

func toolCall(id, name string, input any) fakemodel.ToolCall {
	b, _ := json.Marshal(input)
	return fakemodel.ToolCall{ID: id, Name: name, Input: b}
}

// newSession creates a session whose first turn answers text, and waits
// for it to end.
func (w *worker) newSession(prompt string) created {
	w.t.Helper()
	var c created
	w.must(200, "POST", "/api/sessions", map[string]any{"prompt": prompt, "wait": true}).decode(w.t, &c)
	if c.Error != "" {
		w.t.Fatalf("first turn: %s", c.Error)
	}
	return c
}

func fmtJSON(v any) string { b, _ := json.Marshal(v); return fmt.Sprint(string(b)) }

// approvedTurn creates a session with prompt, answers its first approval
// (call) with decision, and waits for the turn's end; the stream it
// followed is returned.
func (w *worker) approvedTurn(prompt, call, decision string) (created, *stream) {
	w.t.Helper()
	var c created
	w.must(202, "POST", "/api/sessions", map[string]any{"prompt": prompt}).decode(w.t, &c)
	st := w.follow("/api/sessions/" + c.Session + "/stream")
	st.waitFor("the approval", func(m sse) bool { return m.event == "approval" })
	w.must(200, "POST", "/api/sessions/"+c.Session+"/approvals/"+call, map[string]any{"decision": decision})
	st.waitEvent("turn_completed")
	st.waitFor("the turn's end", func(m sse) bool { return m.event == "turn" && strings.Contains(m.data, `"ended"`) })
	return c, st
}
