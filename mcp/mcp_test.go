package mcp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lite-agent/lite-agent/internal/mcptest"
	"github.com/lite-agent/lite-agent/mcp"
	"github.com/lite-agent/lite-agent/tool"
)

// start starts servers and closes them when the test ends.
func start(t *testing.T, opts *mcp.Options, servers ...mcp.ServerConfig) *mcp.Set {
	t.Helper()
	set := mcp.Start(t.Context(), servers, opts)
	t.Cleanup(func() { set.Close() })
	return set
}

func findTool(t *testing.T, set *mcp.Set, name string) tool.Tool {
	t.Helper()
	tools, err := set.Tools(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools {
		if tl.Spec().Name == name {
			return tl
		}
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Spec().Name)
	}
	t.Fatalf("no tool %s among %v", name, names)
	return nil
}

func run(t *testing.T, tl tool.Tool, input string) tool.Result {
	t.Helper()
	return tl.Run(t.Context(), tool.Call{ID: "c1", Input: json.RawMessage(input)})
}

func TestStartFailuresAreReportedAndTheRestGoOn(t *testing.T) {
	bin := mcptest.Server(t)
	set := start(t, &mcp.Options{StartTimeout: 2 * time.Second, StopGrace: 200 * time.Millisecond},
		mcp.ServerConfig{Name: "good", Command: bin},
		mcp.ServerConfig{Name: "exits", Command: bin, Args: []string{"-mode", "exit"}},
		mcp.ServerConfig{Name: "silent", Command: bin, Args: []string{"-mode", "silent"}},
		mcp.ServerConfig{Name: "garbage", Command: bin, Args: []string{"-mode", "garbage"}},
		mcp.ServerConfig{Name: "missing", Command: filepath.Join(t.TempDir(), "no-such-server")},
		mcp.ServerConfig{Name: "bad name", Command: bin},
		mcp.ServerConfig{Name: "nothing"},
	)
	want := map[string][]string{
		"exits":    {`mcp server "exits"`, "command " + bin + " -mode exit", "exited during start", "exit status 3", "cannot open the config file /nonexistent/db.toml"},
		"silent":   {`mcp server "silent"`, "no answer to initialize within 2s", "never answering"},
		"garbage":  {`mcp server "garbage"`, "not JSON-RPC", "this is not JSON-RPC {{{"},
		"missing":  {`mcp server "missing"`, "could not start it", "no-such-server"},
		"bad name": {`mcp server name "bad name"`, "letters, digits"},
		"nothing":  {`mcp server "nothing"`, "give a command"},
	}
	for _, st := range set.Servers() {
		if st.Name == "good" {
			if st.State != mcp.StateReady || st.Err != nil || !slices.Contains(st.Tools, "mcp__good__echo") {
				t.Errorf("good server: %+v", st)
			}
			continue
		}
		if st.State != mcp.StateFailed || st.Err == nil {
			t.Errorf("%s: state %s, err %v; want failed", st.Name, st.State, st.Err)
			continue
		}
		for _, w := range want[st.Name] {
			if !strings.Contains(st.Err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", st.Name, st.Err, w)
			}
		}
	}
	if n := len(set.Failed()); n != 6 {
		t.Errorf("Failed() has %d errors, want 6", n)
	}
	// The good server works although the others failed.
	if r := run(t, findTool(t, set, "mcp__good__echo"), `{"text":"hi"}`); r.Output != "echo: hi" || r.IsError {
		t.Errorf("echo: %+v", r)
	}
}

func TestToolsSpecsResultsAndErrors(t *testing.T) {
	set := start(t, nil, mcp.ServerConfig{Name: "t", Command: mcptest.Server(t)})
	echo := findTool(t, set, "mcp__t__echo")
	s := echo.Spec()
	if s.Kind != tool.KindMCP || s.Server != "t" || !s.ReadOnly {
		t.Errorf("echo spec: %+v", s)
	}
	var schema struct {
		Type       string
		Properties map[string]any
	}
	if err := json.Unmarshal(s.InputSchema, &schema); err != nil || schema.Type != "object" || schema.Properties["text"] == nil {
		t.Errorf("echo schema %s: %v", s.InputSchema, err)
	}
	if fail := findTool(t, set, "mcp__t__fail"); fail.Spec().ReadOnly {
		t.Error("fail is not annotated read-only")
	}
	r := run(t, findTool(t, set, "mcp__t__fail"), `{}`)
	if !r.IsError || !strings.Contains(r.Output, "project FOO is archived") || !r.Untracked {
		t.Errorf("fail: %+v", r)
	}
	// Arguments the schema refuses are a tool error the model reads.
	if r := run(t, echo, `{"text": 5}`); !r.IsError {
		t.Errorf("echo with a number: %+v", r)
	}
}

func TestListChangedBetweenCalls(t *testing.T) {
	set := start(t, nil, mcp.ServerConfig{Name: "t", Command: mcptest.Server(t)})
	tools, _ := set.Tools(t.Context())
	for _, tl := range tools {
		if tl.Spec().Name == "mcp__t__added" {
			t.Fatal("added is there before add_tool")
		}
	}
	if r := run(t, findTool(t, set, "mcp__t__add_tool"), `{}`); r.IsError {
		t.Fatal(r.Output)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := set.Servers()[0]
		if slices.Contains(st.Tools, "mcp__t__added") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the tool list never changed: %v", st.Tools)
		}
		set.Tools(t.Context())
		time.Sleep(20 * time.Millisecond)
	}
	if r := run(t, findTool(t, set, "mcp__t__added"), `{}`); r.Output != "added: here" {
		t.Errorf("added: %+v", r)
	}
}

func TestCancelTellsTheServer(t *testing.T) {
	dir := t.TempDir()
	set := start(t, nil, mcp.ServerConfig{Name: "t", Command: mcptest.Server(t), Args: []string{"-dir", dir}})
	slow := findTool(t, set, "mcp__t__slow")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan tool.Result, 1)
	go func() { done <- slow.Run(ctx, tool.Call{ID: "c1", Input: json.RawMessage(`{"seconds": 600}`)}) }()
	waitFile(t, filepath.Join(dir, "slow.started"))
	cancel()
	if r := <-done; !r.IsError || !strings.Contains(r.Output, "cancelled") {
		t.Errorf("cancelled call: %+v", r)
	}
	waitFile(t, filepath.Join(dir, "slow.cancelled"))
}

func TestCloseLeavesNoProcess(t *testing.T) {
	bin := mcptest.Server(t)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"polite", nil},
		{"ignores stdin", []string{"-ignore-stdin"}},
		{"ignores SIGTERM", []string{"-ignore-stdin", "-ignore-term"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			set := mcp.Start(t.Context(), []mcp.ServerConfig{{Name: "t", Command: bin, Args: append([]string{"-dir", dir, "-child"}, tc.args...)}}, &mcp.Options{StopGrace: 200 * time.Millisecond})
			st := set.Servers()[0]
			if st.State != mcp.StateReady {
				t.Fatalf("not ready: %v", st.Err)
			}
			child, err := strconv.Atoi(strings.TrimSpace(string(waitFile(t, filepath.Join(dir, "child.pid")))))
			if err != nil {
				t.Fatal(err)
			}
			if !alive(st.PID) || !alive(child) {
				t.Fatal("server or child not running before Close")
			}
			if err := set.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			if alive(st.PID) || alive(child) {
				t.Errorf("after Close: server alive %v, child alive %v", alive(st.PID), alive(child))
			}
			if got := set.Servers()[0].State; got != mcp.StateClosed {
				t.Errorf("state after Close: %s", got)
			}
		})
	}
}

func TestServerDyingLaterIsReported(t *testing.T) {
	set := start(t, nil, mcp.ServerConfig{Name: "t", Command: mcptest.Server(t)})
	st := set.Servers()[0]
	echo := findTool(t, set, "mcp__t__echo")
	syscall.Kill(st.PID, syscall.SIGKILL)
	deadline := time.Now().Add(10 * time.Second)
	for set.Servers()[0].State != mcp.StateFailed {
		if time.Now().After(deadline) {
			t.Fatal("a killed server is still shown as ready")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := set.Servers()[0].Err; err == nil || !strings.Contains(err.Error(), `mcp server "t"`) || !strings.Contains(err.Error(), "exited") {
		t.Errorf("err: %v", err)
	}
	if r := run(t, echo, `{"text":"x"}`); !r.IsError || !strings.Contains(r.Output, `mcp server "t"`) {
		t.Errorf("call to a dead server: %+v", r)
	}
}

// alive reports whether pid is a process that is not a zombie.
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(stat), ')')
	return i > 0 && len(stat) > i+2 && stat[i+2] != 'Z' && stat[i+2] != 'X'
}

func waitFile(t *testing.T, path string) []byte {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		b, err := os.ReadFile(path)
		if err == nil && len(b) > 0 {
			return b
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestUnreachableHTTPServer(t *testing.T) {
	set := start(t, &mcp.Options{StartTimeout: 5 * time.Second}, mcp.ServerConfig{Name: "gone", URL: "http://127.0.0.1:1/mcp?token=secret"})
	err := set.Servers()[0].Err
	if err == nil || !strings.Contains(err.Error(), `mcp server "gone" (url http://127.0.0.1:1/mcp)`) || !strings.Contains(err.Error(), "SSE") {
		t.Errorf("unreachable server: %v", err)
	}
	if err != nil && strings.Contains(err.Error(), "secret") {
		t.Errorf("the error shows the URL's query: %v", err)
	}
}

// TestSSEFallback: a server that speaks only the older SSE transport (the
// Go SDK's own SSE handler, over real HTTP) is reached by falling back from
// streamable HTTP, with the configured headers on every request.
func TestSSEFallback(t *testing.T) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "old", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "hello"}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "hello over SSE"}}}, nil, nil
	})
	sse := sdk.NewSSEHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	var mu sync.Mutex
	var auth []string
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		if r.Method == http.MethodPost && r.URL.Query().Get("sessionid") == "" {
			http.Error(w, "this server speaks SSE only", http.StatusMethodNotAllowed)
			return
		}
		sse.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	set := start(t, nil, mcp.ServerConfig{Name: "old", URL: hs.URL, Headers: map[string]string{"Authorization": "Bearer xyz"}})
	st := set.Servers()[0]
	if st.State != mcp.StateReady || st.Transport != "sse" {
		t.Fatalf("state %s transport %q err %v", st.State, st.Transport, st.Err)
	}
	if r := run(t, findTool(t, set, "mcp__old__hello"), `{}`); r.Output != "hello over SSE" {
		t.Errorf("hello: %+v", r)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, a := range auth {
		if a != "Bearer xyz" {
			t.Errorf("a request went without the header: %q", auth)
			break
		}
	}
}
