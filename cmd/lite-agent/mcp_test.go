package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/lite-agent/lite-agent/internal/fakemodel"
	"github.com/lite-agent/lite-agent/internal/mcptest"
)

// mcpConfig writes an --mcp-config file with the test server as "t"
// (writing its markers to dir) and returns its path.
func mcpConfig(t *testing.T, dir string, extra string) string {
	t.Helper()
	cfg := fmt.Sprintf("[mcp.servers.t]\ncommand = %q\nargs = [\"-dir\", %q]\n%s", mcptest.Server(t), dir, extra)
	path := filepath.Join(t.TempDir(), "mcp.toml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// killServerLater makes sure the test server of dir is gone when the test
// ends, whatever happened to lite-agent.
func killServerLater(t *testing.T, dir string) {
	t.Cleanup(func() {
		if b, err := os.ReadFile(filepath.Join(dir, "server.pid")); err == nil {
			if pid, err := strconv.Atoi(string(b)); err == nil && pid > 0 {
				syscall.Kill(-pid, syscall.SIGKILL)
			}
		}
	})
}

// TestKillMidMCPCallLeavesHazard: lite-agent is SIGKILLed while an MCP
// tool runs; the session shows a hazard naming the server and the tool,
// resume refuses until it is acknowledged, and the call is not re-run.
func TestKillMidMCPCallLeavesHazard(t *testing.T) {
	srv := startModel(t,
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{toolCall("m1", "mcp__t__slow", map[string]any{"seconds": 600})}},
		fakemodel.Reply{Expect: &fakemodel.Expect{ToolResultFor: []string{"m1"}, BodyContains: []string{"outcome of this tool call is unknown"}}, Text: "checked the deploy"},
	)
	work, dir := t.TempDir(), t.TempDir()
	killServerLater(t, dir)
	cfg := mcpConfig(t, dir, "")
	db := filepath.Join(t.TempDir(), "s.db")
	p := start(t, srv, work, "--session-db", db, "--mcp-config", cfg, "--allow", "mcp__t__slow", "deploy it")
	waitFor(t, "the MCP call to start", func() bool { _, err := os.Stat(filepath.Join(dir, "slow.started")); return err == nil })
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.cmd.Wait()

	id := onlySession(t, work, db)
	in := sessionInfo(t, work, db, id)
	if len(in.Hazards) != 1 || in.Hazards[0].Tool != "mcp__t__slow" || in.Hazards[0].CallID != "m1" {
		t.Fatalf("--session-info hazards: %+v", in)
	}
	code, out, errs := run(t, nil, work, "--session-db", db, "--recovery-info", id)
	var rec struct {
		Hazards []struct {
			Token     string `json:"token"`
			MCPServer string `json:"mcp_server"`
			MCPTool   string `json:"mcp_tool"`
		} `json:"hazards"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &rec) != nil || len(rec.Hazards) != 1 || rec.Hazards[0].MCPServer != "t" || rec.Hazards[0].MCPTool != "slow" {
		t.Fatalf("--recovery-info: %d %q %q", code, out, errs)
	}
	code, _, errs = run(t, srv, work, "--session-db", db, "--mcp-config", cfg, "--resume", id, "go on")
	if code != 3 || !strings.Contains(errs, "mcp__t__slow") {
		t.Fatalf("resume with a hazard: exit %d, stderr %q", code, errs)
	}
	os.Remove(filepath.Join(dir, "slow.started"))
	code, out, errs = run(t, srv, work, "--session-db", db, "--mcp-config", cfg, "--resume", id, "--acknowledge", rec.Hazards[0].Token, "go on")
	if code != 0 || !strings.Contains(out, "checked the deploy") {
		t.Fatalf("resume after acknowledging: %d %q %q", code, out, errs)
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "slow.started")); err == nil {
		t.Fatal("the interrupted MCP call was re-run")
	}
}

// TestMCPListShowsServersAndFailures: --mcp prints each server with its
// state and tools; a server that exits at start is shown with its stderr,
// and the exit status says not all started.
func TestMCPListShowsServersAndFailures(t *testing.T) {
	dir := t.TempDir()
	killServerLater(t, dir)
	cfg := mcpConfig(t, dir, fmt.Sprintf("\n[mcp.servers.broken]\ncommand = %q\nargs = [\"-mode\", \"exit\"]\n", mcptest.Server(t)))
	code, out, errs := run(t, nil, t.TempDir(), "--mcp-config", cfg, "--mcp")
	for _, want := range []string{"t: ready (stdio", "mcp__t__echo", "mcp__t__slow", "prompts: /mcp__t__review", "broken: failed", "exit status 3", "cannot open the config file /nonexistent/db.toml"} {
		if !strings.Contains(out, want) {
			t.Errorf("--mcp output lacks %q:\n%s", want, out)
		}
	}
	if code != 1 || !strings.Contains(errs, "1 of 2 MCP servers did not start") {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
}

// TestMCPOneShotApprovalAndBadConfig: a one-shot run denies an MCP tool,
// read-only or not, unless --allow names it; a bad config file is a usage
// error that names the file and writes nothing.
func TestMCPOneShotApprovalAndBadConfig(t *testing.T) {
	srv := startModel(t,
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{toolCall("e1", "mcp__t__echo", map[string]string{"text": "one"})}},
		fakemodel.Reply{Expect: &fakemodel.Expect{ToolResultFor: []string{"e1"}, BodyContains: []string{"denied"}}, Text: "was denied"},
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{toolCall("e2", "mcp__t__echo", map[string]string{"text": "two"})}},
		fakemodel.Reply{Expect: &fakemodel.Expect{ToolResultFor: []string{"e2"}, BodyContains: []string{"echo: two"}}, Text: "echoed"},
	)
	dir := t.TempDir()
	killServerLater(t, dir)
	cfg := mcpConfig(t, dir, "")
	work := t.TempDir()
	code, out, errs := run(t, srv, work, "--mcp-config", cfg, "echo one")
	if code != 0 || !strings.Contains(out, "was denied") || !strings.Contains(errs, "denied mcp__t__echo") || !strings.Contains(errs, "--allow mcp__t__echo") {
		t.Fatalf("without --allow: %d %q %q", code, out, errs)
	}
	code, out, errs = run(t, srv, work, "--mcp-config", cfg, "--allow", "mcp__t", "echo two")
	if code != 0 || !strings.Contains(out, "echoed") {
		t.Fatalf("with --allow mcp__t: %d %q %q", code, out, errs)
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}

	bad := filepath.Join(t.TempDir(), "bad.toml")
	os.WriteFile(bad, []byte("[mcp.servers.x]\ncomand = \"typo\"\n"), 0o644)
	db := filepath.Join(t.TempDir(), "s.db")
	code, _, errs = run(t, nil, work, "--session-db", db, "--mcp-config", bad, "hi")
	if code != 2 || !strings.Contains(errs, bad) || !strings.Contains(errs, "comand") || !strings.Contains(errs, "command, args") {
		t.Fatalf("bad config: %d %q", code, errs)
	}
	if _, err := os.Stat(db); err == nil {
		t.Fatal("a bad config file still created the database")
	}
}

// TestMCPLineModePromptAndStatus: in the line mode /mcp shows the servers,
// and /mcp__t__review sends the server's prompt, filled in, to the model.
func TestMCPLineModePromptAndStatus(t *testing.T) {
	srv := startModel(t, fakemodel.Reply{Expect: &fakemodel.Expect{LastUserContains: []string{"Review main.go carefully, looking at errors."}}, Text: "reviewed"})
	dir := t.TempDir()
	killServerLater(t, dir)
	cfg := mcpConfig(t, dir, "")
	p := startIn(t, srv, t.TempDir(), strings.NewReader("/mcp\n/mcp__t__review\n/mcp__t__review main.go errors\n"), nil, "--mcp-config", cfg, "--plain")
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("%v: %s", err, p.stderr)
	}
	out, errs := p.stdout.String(), p.stderr.String()
	for _, want := range []string{"t: ready", "mcp__t__echo", "prompts: /mcp__t__review", "/mcp__t__review needs file; usage: /mcp__t__review <file> [focus]"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	if !strings.Contains(out, "reviewed") {
		t.Errorf("stdout %q", out)
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
}

// TestMCPServersFromConfigFiles: servers come from the user and the
// project configuration files (a project server replaces the user's of the
// same name) and --mcp-config adds its own; a server in a file that cannot
// work stops the run with status 2, naming the file.
func TestMCPServersFromConfigFiles(t *testing.T) {
	dir := t.TempDir()
	killServerLater(t, dir)
	bin := mcptest.Server(t)
	user := fmt.Sprintf("[mcp.servers.u]\ncommand = %q\nargs = [\"-dir\", %q]\n\n[mcp.servers.p]\ncommand = %q\nargs = [\"-mode\", \"exit\"]\n", bin, dir, bin)
	proj := fmt.Sprintf("[mcp.servers.p]\ncommand = %q\nargs = [\"-dir\", %q]\n", bin, dir)
	work := project(t, user, proj)
	code, out, errs := run(t, nil, work, "--mcp")
	for _, want := range []string{"u: ready (stdio", "mcp__u__echo", "p: ready (stdio", "mcp__p__echo"} {
		if !strings.Contains(out, want) {
			t.Errorf("--mcp output lacks %q:\n%s", want, out)
		}
	}
	if code != 0 || strings.Contains(out, "failed") {
		t.Errorf("the project's p should replace the user's failing p: exit %d\n%s\n%s", code, out, errs)
	}
	code, out, _ = run(t, nil, work, "--mcp-config", mcpConfig(t, dir, ""), "--mcp")
	if code != 0 || !strings.Contains(out, "mcp__t__echo") || !strings.Contains(out, "mcp__u__echo") {
		t.Errorf("--mcp-config should add its servers to the files': exit %d\n%s", code, out)
	}

	bad := project(t, "", "[mcp.servers.x]\nargs = [\"-v\"]\n")
	code, _, errs = run(t, nil, bad, "--mcp")
	if code != 2 || !strings.Contains(errs, filepath.Join(bad, ".lite-agent", "config.toml")) {
		t.Errorf("a server with no command or url: exit %d, stderr %q; want 2 naming the project file", code, errs)
	}
}
