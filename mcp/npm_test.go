package mcp_test

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/internal/mcptest"
	"github.com/lite-agent/lite-agent/mcp"
	"github.com/lite-agent/lite-agent/tool"
)

// These tests run against MCP servers nobody on this project wrote, from
// npm (see mcptest.EnvNPM); they skip with a message when not installed.

func everything(t *testing.T) *mcp.Set {
	t.Helper()
	bin := mcptest.NPMServer(t, "mcp-server-everything")
	set := start(t, nil, mcp.ServerConfig{Name: "everything", Command: bin, Args: []string{"stdio"}})
	if st := set.Servers()[0]; st.State != mcp.StateReady {
		t.Fatalf("server-everything did not start: %v", st.Err)
	}
	return set
}

func TestEverythingTools(t *testing.T) {
	set := everything(t)
	if r := run(t, findTool(t, set, "mcp__everything__echo"), `{"message":"hello from lite-agent"}`); r.IsError || !strings.Contains(r.Output, "hello from lite-agent") {
		t.Errorf("echo: %+v", r)
	}
	if r := run(t, findTool(t, set, "mcp__everything__get-sum"), `{"a": 2, "b": 40}`); r.IsError || !strings.Contains(r.Output, "42") {
		t.Errorf("get-sum: %+v", r)
	}
	sc := findTool(t, set, "mcp__everything__get-structured-content")
	if !sc.Spec().ReadOnly {
		t.Error("get-structured-content is annotated read-only")
	}
	if r := run(t, sc, `{"location":"Chicago"}`); r.IsError || !strings.Contains(r.Output, `"temperature"`) || !strings.Contains(r.Output, `"humidity"`) {
		t.Errorf("get-structured-content: %+v", r)
	}
	if r := run(t, findTool(t, set, "mcp__everything__get-tiny-image"), `{}`); r.IsError || !strings.Contains(r.Output, "[image 1, image/png,") ||
		len(r.Images) != 1 || r.Images[0].MediaType != "image/png" || !strings.HasPrefix(string(r.Images[0].Data), "\x89PNG") {
		t.Errorf("get-tiny-image: %q, %d images", r.Output, len(r.Images))
	}
	// Arguments the server's schema refuses come back as a tool error.
	if r := run(t, sc, `{"location":"Atlantis"}`); !r.IsError {
		t.Errorf("a bad location: %+v", r)
	}
}

func TestEverythingLongRunningAndCancel(t *testing.T) {
	set := everything(t)
	long := findTool(t, set, "mcp__everything__trigger-long-running-operation")
	if r := run(t, long, `{"duration": 1, "steps": 2}`); r.IsError || !strings.Contains(strings.ToLower(r.Output), "completed") {
		t.Errorf("a 1 s operation: %+v", r)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	began := time.Now()
	r := long.Run(ctx, tool.Call{ID: "c2", Input: json.RawMessage(`{"duration": 120, "steps": 4}`)})
	if !r.IsError || !strings.Contains(r.Output, "cancelled") {
		t.Errorf("a cancelled operation: %+v", r)
	}
	if time.Since(began) > 60*time.Second {
		t.Errorf("cancelling took %s", time.Since(began))
	}
	// The server still answers after the cancellation.
	if r := run(t, findTool(t, set, "mcp__everything__echo"), `{"message":"still here"}`); !strings.Contains(r.Output, "still here") {
		t.Errorf("echo after cancel: %+v", r)
	}
}

func TestEverythingPromptsAndResources(t *testing.T) {
	set := everything(t)
	prompts, err := set.Prompts(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var commands []string
	for _, p := range prompts {
		commands = append(commands, p.Command)
	}
	if !slices.Contains(commands, "mcp__everything__simple-prompt") || !slices.Contains(commands, "mcp__everything__args-prompt") {
		t.Fatalf("prompts %v", commands)
	}
	text, err := set.GetPrompt(t.Context(), "mcp__everything__args-prompt", "city=Paris")
	if err != nil || !strings.Contains(text, "Paris") {
		t.Errorf("args-prompt city=Paris: %q %v", text, err)
	}
	if _, err := set.GetPrompt(t.Context(), "mcp__everything__args-prompt", ""); err == nil || !strings.Contains(err.Error(), "needs city") {
		t.Errorf("args-prompt without city: %v", err)
	}
	if _, err := set.GetPrompt(t.Context(), "mcp__everything__nope", ""); err == nil || !strings.Contains(err.Error(), "/mcp lists") {
		t.Errorf("unknown prompt: %v", err)
	}

	res := findTool(t, set, mcp.ResourceToolName)
	list := run(t, res, `{}`)
	if list.IsError || !strings.Contains(list.Output, "demo://resource/static/document/") {
		t.Fatalf("resource list: %+v", list)
	}
	var uri string
	for _, f := range strings.Fields(list.Output) {
		if strings.HasPrefix(f, "demo://resource/static/document/") {
			uri = f
			break
		}
	}
	b, _ := json.Marshal(map[string]string{"uri": uri})
	if r := run(t, res, string(b)); r.IsError || !strings.Contains(r.Output, "resource "+uri) || len(r.Output) < 100 {
		t.Errorf("read %s: %+v", uri, r)
	}
	if r := run(t, res, `{"uri":"demo://no/such/thing"}`); !r.IsError {
		t.Errorf("read a missing resource: %+v", r)
	}
}

func TestFilesystemServer(t *testing.T) {
	bin := mcptest.NPMServer(t, "mcp-server-filesystem")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("buy milk\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	set := start(t, nil, mcp.ServerConfig{Name: "fs", Command: bin, Args: []string{dir}})
	if st := set.Servers()[0]; st.State != mcp.StateReady {
		t.Fatalf("server-filesystem did not start: %v", st.Err)
	}
	read := findTool(t, set, "mcp__fs__read_text_file")
	if !read.Spec().ReadOnly || read.Spec().Kind != tool.KindMCP {
		t.Errorf("read_text_file spec %+v", read.Spec())
	}
	b, _ := json.Marshal(map[string]string{"path": filepath.Join(dir, "notes.txt")})
	if r := run(t, read, string(b)); r.IsError || !strings.Contains(r.Output, "buy milk") {
		t.Errorf("read_text_file: %+v", r)
	}
	write := findTool(t, set, "mcp__fs__write_file")
	if write.Spec().ReadOnly {
		t.Error("write_file is not read-only")
	}
	b, _ = json.Marshal(map[string]string{"path": filepath.Join(dir, "out.txt"), "content": "written over MCP"})
	if r := run(t, write, string(b)); r.IsError || !r.Untracked {
		t.Errorf("write_file: %+v", r)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "out.txt")); string(got) != "written over MCP" {
		t.Errorf("out.txt = %q", got)
	}
	// Outside its allowed directory the server refuses: a tool error.
	b, _ = json.Marshal(map[string]string{"path": "/etc/hostname"})
	if r := run(t, read, string(b)); !r.IsError {
		t.Errorf("read outside: %+v", r)
	}
}

// httpEverything runs server-everything with an HTTP transport (mode
// streamableHttp or sse) on a free port and returns its base URL.
func httpEverything(t *testing.T, mode string) string {
	t.Helper()
	bin := mcptest.NPMServer(t, "mcp-server-everything")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, mode)
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
			c.Close()
			return base
		}
		if time.Now().After(deadline) {
			t.Fatalf("server-everything %s never listened on %d", mode, port)
		}
	}
}

func TestEverythingOverHTTP(t *testing.T) {
	for _, tc := range []struct{ mode, path, transport string }{
		{"streamableHttp", "/mcp", "http"},
		{"sse", "/sse", "sse"}, // reached by falling back from streamable HTTP
	} {
		t.Run(tc.mode, func(t *testing.T) {
			base := httpEverything(t, tc.mode)
			set := start(t, nil, mcp.ServerConfig{Name: "web", URL: base + tc.path, Headers: map[string]string{"X-Test": "1"}})
			st := set.Servers()[0]
			if st.State != mcp.StateReady || st.Transport != tc.transport {
				t.Fatalf("state %s transport %q err %v", st.State, st.Transport, st.Err)
			}
			if r := run(t, findTool(t, set, "mcp__web__echo"), `{"message":"over http"}`); r.IsError || !strings.Contains(r.Output, "over http") {
				t.Errorf("echo: %+v", r)
			}
		})
	}
}
