package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/internal/fakemodel"
	"github.com/lite-agent/lite-agent/internal/mcptest"
)

// everythingConfig writes an --mcp-config file running npm's
// server-everything as "everything".
func everythingConfig(t *testing.T) string {
	t.Helper()
	bin := mcptest.NPMServer(t, "mcp-server-everything")
	path := filepath.Join(t.TempDir(), "mcp.toml")
	if err := os.WriteFile(path, []byte(fmt.Sprintf("[mcp.servers.everything]\ncommand = %q\nargs = [\"stdio\"]\n", bin)), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestMCPImageReachesTheModel: the image server-everything's
// get-tiny-image returns goes to the model as an image (an image block in
// the tool result for Anthropic, an image_url data URL after the tool
// message for OpenAI), a PNG that decodes, not a text description; the log
// keeps it, and a resume in a new process sends it again.
func TestMCPImageReachesTheModel(t *testing.T) {
	cfg := everythingConfig(t)
	for _, prov := range []string{"anthropic", "openai"} {
		t.Run(prov, func(t *testing.T) {
			srv := startModel(t,
				fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{toolCall("img1", "mcp__everything__get-tiny-image", map[string]any{})}},
				fakemodel.Reply{Expect: &fakemodel.Expect{ToolResultFor: []string{"img1"}, Images: []string{"image/png"}, BodyContains: []string{"Here's the image you requested"}}, Text: "It is the MCP logo."},
				fakemodel.Reply{Expect: &fakemodel.Expect{Images: []string{"image/png"}, LastUserContains: []string{"again"}}, Text: "Still the logo."},
			)
			work, db := t.TempDir(), filepath.Join(t.TempDir(), "s.db")
			env := []string{"OPENAI_BASE_URL=" + srv.OpenAIURL()}
			args := []string{"--session-db", db, "--provider", prov, "--model", "m", "--mcp-config", cfg, "--allow", "mcp__everything__get-tiny-image"}
			code, out, errs := runEnv(t, srv, work, env, append(args, "show me the image")...)
			if code != 0 || !strings.Contains(out, "It is the MCP logo.") {
				t.Fatalf("run: %d %q %q\nfake model: %v", code, out, errs, srv.Failures())
			}
			id := onlySession(t, work, db)
			code, out, errs = runEnv(t, srv, work, env, append(args, "--resume", id, "look again")...)
			if code != 0 || !strings.Contains(out, "Still the logo.") {
				t.Fatalf("resume: %d %q %q\nfake model: %v", code, out, errs, srv.Failures())
			}
			if err := srv.Err(); err != nil {
				t.Fatal(err)
			}
			_, export, _ := run(t, nil, work, "--session-db", db, "--export", id)
			if !strings.Contains(export, `"images":[{"media_type":"image/png","data":"iVBORw0KGgo`) {
				t.Fatalf("the log does not keep the image:\n%.2000s", export)
			}
		})
	}
}

// TestMCPPerSessionServerFromConfig: a server with per_session = true in
// the config file runs for the session beside the shared ones: --mcp and
// the line mode's /mcp list it, and its tools are offered with theirs.
func TestMCPPerSessionServerFromConfig(t *testing.T) {
	dir := t.TempDir()
	killServerLater(t, dir)
	cfg := mcpConfig(t, dir, fmt.Sprintf("\n[mcp.servers.own]\ncommand = %q\nper_session = true\n", mcptest.Server(t)))
	code, out, errs := run(t, nil, t.TempDir(), "--mcp-config", cfg, "--mcp")
	if code != 0 || !strings.Contains(out, "t: ready (stdio") || !strings.Contains(out, "own: ready (stdio") || !strings.Contains(out, "mcp__own__echo") {
		t.Fatalf("--mcp: %d\n%s\n%s", code, out, errs)
	}
	srv := startModel(t, fakemodel.Reply{Expect: &fakemodel.Expect{Tools: []string{"mcp__t__echo", "mcp__own__echo"}}, Text: "both"})
	p := startInput(t, srv, t.TempDir(), nil, "/mcp\nwhich tools?\n", "--mcp-config", cfg, "--plain")
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("line mode: %v\n%s", err, p.stderr)
	}
	if s := p.stderr.String(); !strings.Contains(s, "own: ready") || !strings.Contains(s, "t: ready") || !strings.Contains(p.stdout.String(), "both") {
		t.Fatalf("line mode:\nstdout %s\nstderr %s\nfake model %v", p.stdout, s, srv.Failures())
	}
}
