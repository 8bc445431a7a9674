package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/lite-agent/lite-agent/internal/fakemodel"
)

// buildCommands builds the named commands (directories under cmd/) into a
// temporary directory and returns it.
func buildCommands(t *testing.T, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	args := []string{"build", "-o", dir + string(filepath.Separator)}
	for _, n := range names {
		args = append(args, "./cmd/"+n)
	}
	build := exec.Command("go", args...)
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return dir
}

// TestServeHandedToLiteAgentServe: the built lite-agent links no server
// (nothing of package server, html/template or the reflection that makes
// the linker keep every method), hands `serve` to lite-agent-serve beside
// it, which answers HTTP and stops on SIGTERM, and says how to build it
// when it is missing.
func TestServeHandedToLiteAgentServe(t *testing.T) {
	if testing.Short() {
		t.Skip("builds lite-agent and lite-agent-serve; skipped with -short")
	}
	dir := buildCommands(t, "lite-agent", "lite-agent-serve")
	bin := filepath.Join(dir, "lite-agent")

	nm, err := exec.Command("go", "tool", "nm", bin).Output()
	if err != nil {
		t.Fatalf("go tool nm: %v", err)
	}
	for _, sym := range []string{"github.com/lite-agent/lite-agent/server.", "html/template.", "text/template.", "reflect.Value.MethodByName"} {
		if strings.Contains(string(nm), " "+sym) {
			t.Errorf("lite-agent links %s...; the server belongs in lite-agent-serve only", sym)
		}
	}

	model := startModel(t, fakemodel.Reply{Text: "served by lite-agent-serve"})
	work := t.TempDir()
	s := startServeBin(t, bin, model, work, filepath.Join(t.TempDir(), "s.db"))
	code, body := s.call(t, "POST", "/api/sessions", map[string]any{"prompt": "hello"})
	if code != 202 {
		t.Fatalf("POST /api/sessions through lite-agent serve: %d %s", code, body)
	}
	var c struct{ Session string }
	json.Unmarshal(body, &c)
	if got := s.watch(t, c.Session)(1); len(got) == 0 {
		t.Fatal("the stream delivered no events")
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	if err := s.cmd.Wait(); err != nil {
		t.Fatalf("lite-agent serve after SIGTERM: %v; stderr: %s", err, s.log())
	}

	if err := os.Remove(filepath.Join(dir, "lite-agent-serve")); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", "--session-db", filepath.Join(t.TempDir(), "s.db"))
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("lite-agent serve without lite-agent-serve exited 0: %s", out)
	}
	if want := "lite-agent-serve is not installed beside " + bin + " (build it with: go build -o " + dir + " ./cmd/lite-agent-serve)"; !strings.Contains(string(out), want) {
		t.Fatalf("lite-agent serve without lite-agent-serve said %q, want it to contain %q", out, want)
	}
}
