package liteagent_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/memory"
	"github.com/lite-agent/lite-agent/internal/fakemodel"
	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/provider/anthropic"
	"github.com/lite-agent/lite-agent/provider/openai"
	"github.com/lite-agent/lite-agent/session"
	"github.com/lite-agent/lite-agent/tool"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// providers are the provider kinds every end-to-end test runs with; each
// connects to the fake model server over HTTP.
var providers = []string{"anthropic", "openai"}

var newProvider = map[string]func(srv *fakemodel.Server) (provider.Provider, error){
	"anthropic": func(srv *fakemodel.Server) (provider.Provider, error) {
		return anthropic.New(&anthropic.Options{APIKey: "test-key", BaseURL: srv.URL(), RetryBaseDelay: time.Millisecond})
	},
	"openai": func(srv *fakemodel.Server) (provider.Provider, error) {
		return openai.New(&openai.Options{APIKey: "test-key", BaseURL: srv.OpenAIURL(), RetryBaseDelay: time.Millisecond})
	},
}

// startModel starts the fake model server with replies, and a provider of
// the given kind talking to it over HTTP.
func startModel(t testing.TB, kind string, replies ...fakemodel.Reply) (*fakemodel.Server, provider.Provider) {
	t.Helper()
	srv, err := fakemodel.Start(&fakemodel.Script{Replies: replies})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	p, err := newProvider[kind](srv)
	if err != nil {
		t.Fatal(err)
	}
	return srv, p
}

// newAgent creates an agent in a fresh workdir; opts may preset fields.
func newAgent(t testing.TB, p provider.Provider, opts liteagent.Options) *liteagent.Agent {
	t.Helper()
	if opts.Workdir == "" {
		opts.Workdir = t.TempDir()
	}
	if opts.Checkpointer == nil && !opts.DisableSessions {
		opts.Checkpointer = memory.New()
	}
	opts.Provider, opts.Model = p, "test-model"
	a, err := liteagent.New(&opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

func call(id, name string, input any) fakemodel.ToolCall {
	b, _ := json.Marshal(input)
	return fakemodel.ToolCall{ID: id, Name: name, Input: b}
}

func types(t testing.TB, c checkpoint.Checkpointer, id string) []string {
	t.Helper()
	events, err := checkpoint.ReadAll(context.Background(), c, id)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range events {
		out = append(out, string(e.Type))
	}
	return out
}

func checkServer(t testing.TB, srv *fakemodel.Server) {
	t.Helper()
	if err := srv.Err(); err != nil {
		t.Fatalf("fake model: %v", err)
	}
}

func TestMultiTurnWithToolsOverHTTP(t *testing.T) {
	for _, kind := range providers {
		t.Run(kind, func(t *testing.T) {
			srv, p := startModel(t, kind,
				fakemodel.Reply{Text: "Writing it.", ToolCalls: []fakemodel.ToolCall{call("c1", "write", map[string]string{"path": "a.txt", "content": "one\n"})}},
				fakemodel.Reply{Expect: &fakemodel.Expect{ToolResultFor: []string{"c1"}}, Text: "Wrote a.txt."},
				fakemodel.Reply{Expect: &fakemodel.Expect{LastUserContains: []string{"second"}, BodyContains: []string{"first prompt", "Wrote a.txt."}, ToolResultFor: []string{"c1"}}, Text: "Still here."},
			)
			store := memory.New()
			a := newAgent(t, p, liteagent.Options{Checkpointer: store})
			updates, stop := a.Subscribe()
			defer stop()
			res, err := a.Send(t.Context(), "first prompt")
			if err != nil {
				t.Fatal(err)
			}
			if res.Text != "Wrote a.txt." || res.ModelCalls != 2 {
				t.Fatalf("result %+v", res)
			}
			if b, err := os.ReadFile(filepath.Join(a.Workdir(), "a.txt")); err != nil || string(b) != "one\n" {
				t.Fatalf("a.txt = %q, %v", b, err)
			}
			res2, err := a.Send(t.Context(), "second prompt")
			if err != nil {
				t.Fatal(err)
			}
			if res2.Session != res.Session || res2.Text != "Still here." {
				t.Fatalf("second turn %+v", res2)
			}
			checkServer(t, srv)
			want := "session_started project_context user_prompt assistant_message tool_started file_snapshot tool_finished assistant_message turn_completed user_prompt assistant_message turn_completed"
			if got := strings.Join(types(t, store, res.Session), " "); got != want {
				t.Fatalf("log:\n got %s\nwant %s", got, want)
			}
			// Subscribers saw deltas and every persisted event, in order.
			var deltas, events int
			var lastSeq int64
			timeout := time.After(5 * time.Second)
			for events < 11 {
				select {
				case u := <-updates:
					if u.Delta != nil {
						deltas++
					}
					if u.Event != nil {
						events++
						if u.Event.Seq != lastSeq+1 {
							t.Fatalf("update for seq %d after %d", u.Event.Seq, lastSeq)
						}
						lastSeq = u.Event.Seq
					}
				case <-timeout:
					t.Fatalf("only %d events reached the subscriber", events)
				}
			}
			if deltas == 0 {
				t.Fatal("no streaming deltas reached the subscriber")
			}
		})
	}
}

func TestResumeCarriesEarlierTurns(t *testing.T) {
	for _, kind := range providers {
		t.Run(kind, func(t *testing.T) {
			srv, p := startModel(t, kind,
				fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{call("c1", "write", map[string]string{"path": "x.txt", "content": "x"})}},
				fakemodel.Reply{Text: "done one"},
				fakemodel.Reply{Expect: &fakemodel.Expect{ToolResultFor: []string{"c1"}, BodyContains: []string{"make x", "done one", "x.txt"}, LastUserContains: []string{"and now"}}, Text: "resumed"},
			)
			store := memory.New()
			dir := t.TempDir()
			a := newAgent(t, p, liteagent.Options{Checkpointer: store, Workdir: dir})
			res, err := a.Send(t.Context(), "make x")
			if err != nil {
				t.Fatal(err)
			}
			a.Close()

			b := newAgent(t, p, liteagent.Options{Checkpointer: store, Workdir: dir})
			list, err := b.ListSessions(t.Context())
			if err != nil || len(list) != 1 || list[0].ID != res.Session || list[0].Messages != 3 {
				t.Fatalf("ListSessions = %+v, %v", list, err)
			}
			if err := b.Resume(t.Context(), res.Session); err != nil {
				t.Fatal(err)
			}
			res2, err := b.Send(t.Context(), "and now?")
			if err != nil {
				t.Fatal(err)
			}
			if res2.Session != res.Session || res2.Text != "resumed" {
				t.Fatalf("%+v", res2)
			}
			checkServer(t, srv)
		})
	}
}

func TestCancelMidStream(t *testing.T) {
	for _, kind := range providers {
		t.Run(kind, func(t *testing.T) {
			srv, p := startModel(t, kind,
				fakemodel.Reply{Text: strings.Repeat("slow words ", 40), DeltaDelayMS: 20},
				fakemodel.Reply{Expect: &fakemodel.Expect{LastUserContains: []string{"again"}}, Text: "fine"},
			)
			a := newAgent(t, p, liteagent.Options{})
			updates, stop := a.Subscribe()
			defer stop()
			ctx, cancel := context.WithCancel(t.Context())
			go func() {
				for u := range updates {
					if u.Delta != nil {
						cancel()
					}
				}
			}()
			_, err := a.Send(ctx, "talk")
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Send = %v, want context.Canceled", err)
			}
			st := sessionState(t, a)
			if st.Summary.Status != session.StatusInterrupted {
				t.Fatalf("status %s after a cancel", st.Summary.Status)
			}
			res, err := a.Send(t.Context(), "again")
			if err != nil || res.Text != "fine" {
				t.Fatalf("after cancel: %+v, %v", res, err)
			}
			checkServer(t, srv)
		})
	}
}

// blockTool runs until its context is cancelled.
type blockTool struct{ started chan struct{} }

func (b blockTool) Spec() tool.Spec {
	return tool.Spec{Name: "block", Description: "blocks", InputSchema: json.RawMessage(`{"type":"object"}`), Kind: tool.KindRead}
}

func (b blockTool) Run(ctx context.Context, c tool.Call) tool.Result {
	close(b.started)
	<-ctx.Done()
	return tool.Result{Output: "stopped"}
}

func TestCancelMidTool(t *testing.T) {
	_, p := startModel(t, "anthropic", fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{call("c1", "block", map[string]any{})}})
	bt := blockTool{started: make(chan struct{})}
	store := memory.New()
	a := newAgent(t, p, liteagent.Options{Checkpointer: store, Tools: []tool.Tool{bt}})
	ctx, cancel := context.WithCancel(t.Context())
	go func() { <-bt.started; cancel() }()
	if _, err := a.Send(ctx, "block"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Send = %v", err)
	}
	want := "session_started project_context user_prompt assistant_message tool_started tool_finished turn_interrupted"
	if got := strings.Join(types(t, store, a.SessionID()), " "); got != want {
		t.Fatalf("log:\n got %s\nwant %s", got, want)
	}
	if hz := a.Hazards(); len(hz) != 0 {
		t.Fatalf("a cancelled tool records its outcome, no hazard: %+v", hz)
	}
}

func TestApprovalDenied(t *testing.T) {
	srv, p := startModel(t, "anthropic",
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{call("c1", "write", map[string]string{"path": "no.txt", "content": "x"})}},
		fakemodel.Reply{Expect: &fakemodel.Expect{ToolResultFor: []string{"c1"}, BodyContains: []string{"denied"}}, Text: "ok, not writing"},
	)
	var asked []liteagent.ApprovalRequest
	a := newAgent(t, p, liteagent.Options{Approve: func(ctx context.Context, r liteagent.ApprovalRequest) (liteagent.Decision, error) {
		asked = append(asked, r)
		return liteagent.Deny, nil
	}})
	res, err := a.Send(t.Context(), "write no.txt")
	if err != nil || res.Text != "ok, not writing" {
		t.Fatalf("%+v %v", res, err)
	}
	if len(asked) != 1 || asked[0].Tool != "write" || asked[0].Kind != tool.KindEdit || len(asked[0].Paths) != 1 || asked[0].Paths[0] != "no.txt" {
		t.Fatalf("approval requests %+v", asked)
	}
	if _, err := os.Stat(filepath.Join(a.Workdir(), "no.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a denied write touched the disk")
	}
	checkServer(t, srv)
}

func TestRetryThenSuccessAndClearErrors(t *testing.T) {
	for _, kind := range providers {
		t.Run(kind+"/429 then success", func(t *testing.T) {
			srv, p := startModel(t, kind,
				fakemodel.Reply{Fault: &fakemodel.Fault{Kind: fakemodel.FaultRateLimit, RetryAfterMS: 10}},
				fakemodel.Reply{Text: "after retry"},
			)
			a := newAgent(t, p, liteagent.Options{})
			res, err := a.Send(t.Context(), "hi")
			if err != nil || res.Text != "after retry" {
				t.Fatalf("%+v %v", res, err)
			}
			if n := len(srv.Requests()); n != 2 {
				t.Fatalf("%d requests, want 2", n)
			}
		})
		t.Run(kind+"/401", func(t *testing.T) {
			_, p := startModel(t, kind, fakemodel.Reply{Fault: &fakemodel.Fault{Kind: fakemodel.FaultAuth}})
			store := memory.New()
			a := newAgent(t, p, liteagent.Options{Checkpointer: store})
			_, err := a.Send(t.Context(), "hi")
			if !errors.Is(err, provider.ErrAuth) {
				t.Fatalf("Send = %v, want ErrAuth", err)
			}
			if strings.Contains(err.Error(), "test-key") {
				t.Fatalf("the API key leaked into the error: %v", err)
			}
			events, _ := checkpoint.ReadAll(t.Context(), store, a.SessionID())
			for _, e := range events {
				if strings.Contains(string(e.Data), "test-key") {
					t.Fatalf("the API key was written to the log: %s", e.Data)
				}
			}
			if got := events[len(events)-1].Type; got != session.TypeTurnInterrupted {
				t.Fatalf("last event %s", got)
			}
		})
	}
}

func TestModelCallLimit(t *testing.T) {
	loop := fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{call("", "ls", map[string]string{"path": "."})}}
	_, p := startModel(t, "anthropic", loop, loop, loop)
	a := newAgent(t, p, liteagent.Options{MaxModelCalls: 2})
	res, err := a.Send(t.Context(), "loop forever")
	if !errors.Is(err, liteagent.ErrModelCallLimit) || res.ModelCalls != 2 {
		t.Fatalf("Send = %+v, %v", res, err)
	}
}

func TestCloseDuringTurnReturnsPromptly(t *testing.T) {
	_, p := startModel(t, "anthropic", fakemodel.Reply{Text: strings.Repeat("word ", 500), DeltaDelayMS: 50})
	a := newAgent(t, p, liteagent.Options{})
	updates, _ := a.Subscribe()
	errc := make(chan error, 1)
	go func() { _, err := a.Send(context.Background(), "long"); errc <- err }()
	for u := range updates {
		if u.Delta != nil {
			break
		}
	}
	done := make(chan struct{})
	go func() { a.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return while a turn streamed")
	}
	if err := <-errc; err == nil {
		t.Fatal("Send succeeded although the agent was closed mid-stream")
	}
	if _, err := a.Send(context.Background(), "again"); !errors.Is(err, liteagent.ErrClosed) {
		t.Fatalf("Send after Close = %v", err)
	}
	if err := a.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
}

func TestSessionsOffWritesNothing(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	t.Setenv("HOME", state)
	_, p := startModel(t, "anthropic", fakemodel.Reply{Text: "one"}, fakemodel.Reply{Expect: &fakemodel.Expect{BodyContains: []string{"first", "one"}}, Text: "two"})
	a := newAgent(t, p, liteagent.Options{DisableSessions: true})
	for _, prompt := range []string{"first", "second"} {
		if _, err := a.Send(t.Context(), prompt); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.ListSessions(t.Context()); !errors.Is(err, liteagent.ErrSessionsDisabled) {
		t.Fatalf("ListSessions = %v", err)
	}
	if err := a.Resume(t.Context(), "x"); !errors.Is(err, liteagent.ErrSessionsDisabled) {
		t.Fatalf("Resume = %v", err)
	}
	entries, _ := os.ReadDir(state)
	if len(entries) != 0 {
		t.Fatalf("sessions off wrote %v under the state directory", entries)
	}
}

func TestDefaultStoreIsFileUnderStateDir(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	_, p := startModel(t, "anthropic", fakemodel.Reply{Text: "hi"})
	a, err := liteagent.New(&liteagent.Options{Provider: p, Model: "test-model", Workdir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Send(t.Context(), "hello"); err != nil {
		t.Fatal(err)
	}
	id := a.SessionID()
	a.Close()
	if _, err := os.Stat(filepath.Join(state, "lite-agent")); err != nil {
		t.Fatalf("default store not under XDG_STATE_HOME: %v", err)
	}
	b, err := liteagent.New(&liteagent.Options{Workdir: a.Workdir()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	list, err := b.ListSessions(t.Context())
	if err != nil || len(list) != 1 || list[0].ID != id {
		t.Fatalf("sessions after reopen: %+v %v", list, err)
	}
}

// sessionState replays the agent's current session.
func sessionState(t testing.TB, a *liteagent.Agent) *liteagent.Info {
	t.Helper()
	info, err := a.SessionInfo(context.Background(), a.SessionID())
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// TestNewWritesNothing checks New's promise: no file appears in the state
// directory until the first Send, and listing before then finds nothing
// and creates nothing either.
func TestNewWritesNothing(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	_, p := startModel(t, "anthropic", fakemodel.Reply{Text: "hi"})
	a, err := liteagent.New(&liteagent.Options{Provider: p, Model: "test-model", Workdir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if list, err := a.ListSessions(t.Context()); err != nil || len(list) != 0 {
		t.Fatalf("ListSessions before any Send: %v, %v", list, err)
	}
	if _, err := a.NewSession(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if entries, err := os.ReadDir(state); err != nil || len(entries) != 0 {
		t.Fatalf("the state directory holds %v (%v) before the first Send", entries, err)
	}
	if _, err := a.Send(t.Context(), "hello"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(state, "lite-agent", "sessions")); err != nil {
		t.Fatalf("no store after the first Send: %v", err)
	}
}
