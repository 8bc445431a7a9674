package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	cfgpkg "github.com/lite-agent/lite-agent/config"
	"github.com/lite-agent/lite-agent/internal/fakemodel"
)

// Lines typed while an approval is open that are not an answer ("what
// about tests", "/sessions") take no decision: they are kept and run as
// the next prompt and command. A deny can carry a reason the model reads.
func TestLineModeApprovalKeepsTextAndTakesReasons(t *testing.T) {
	isolate(t)
	srv := model(t,
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{toolCall("c1", "bash", map[string]any{"command": "rm -f hello.txt"})}},
		fakemodel.Reply{Expect: &fakemodel.Expect{ToolResultFor: []string{"c1"}, BodyContains: []string{"The user denied this tool call: keep that file."}}, Text: "Kept it."},
		fakemodel.Reply{Expect: &fakemodel.Expect{LastUserContains: []string{"what about tests"}}, Text: "Tests next."},
	)
	work := t.TempDir()
	os.WriteFile(filepath.Join(work, "hello.txt"), []byte("hi"), 0o644)
	s := startLineMode(t, work)
	s.typeLine("remove hello.txt")
	s.waitFor("stderr", s.err, "allow bash")
	s.typeLine("what about tests")
	s.waitFor("stderr", s.err, `kept "what about tests" as your next prompt`)
	s.typeLine("/sessions")
	s.waitFor("stderr", s.err, `kept "/sessions" as your next prompt`)
	if _, err := os.Stat(filepath.Join(work, "hello.txt")); err != nil {
		t.Fatal("typed text answered the approval")
	}
	s.typeLine("n keep that file")
	s.waitFor("stdout", s.out, "Kept it.")
	s.waitFor("stdout", s.out, "Tests next.")
	s.waitFor("stderr", s.err, "needs --session-db")
	if code := s.end(); code != 0 {
		t.Fatalf("exit %d\n%s", code, s.err.String())
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(work, "hello.txt")); err != nil {
		t.Fatal("the denied rm ran")
	}
}

// "s" allows the call, adds the pattern for the rest of the run and saves
// it to the project's config file; the next matching call is not asked.
func TestLineModeApprovalSavesPattern(t *testing.T) {
	isolate(t)
	srv := model(t,
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{toolCall("c1", "bash", map[string]any{"command": "echo one > one.txt"})}},
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{toolCall("c2", "bash", map[string]any{"command": "echo two > two.txt"})}},
		fakemodel.Reply{Text: "Both written."},
	)
	work := t.TempDir()
	os.Mkdir(filepath.Join(work, ".git"), 0o755)
	s := startLineMode(t, work)
	s.typeLine("write them")
	s.waitFor("stderr", s.err, "[s] save bash(echo *)")
	s.typeLine("s")
	s.waitFor("stdout", s.out, "Both written.")
	if code := s.end(); code != 0 {
		t.Fatalf("exit %d\n%s", code, s.err.String())
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(s.err.String(), "allow bash {"); n != 1 {
		t.Fatalf("asked %d times, want once:\n%s", n, s.err.String())
	}
	f, err := cfgpkg.Read(filepath.Join(work, ".lite-agent", "config.toml"))
	if err != nil || f == nil || len(f.Permissions.Allow) != 1 || f.Permissions.Allow[0].Pattern != "bash(echo *)" {
		t.Fatalf("project file %+v %v", f, err)
	}
	for _, name := range []string{"one.txt", "two.txt"} {
		if _, err := os.Stat(filepath.Join(work, name)); err != nil {
			t.Fatal(err)
		}
	}
}
