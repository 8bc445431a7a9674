package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/internal/fakemodel"
)

// result is a finished lite-agent process.
type result struct {
	code         int
	stdout, errs string
}

// liteAgent runs lite-agent in workdir against srv with stdin and extra
// environment, to completion.
func liteAgent(t testing.TB, srv *fakemodel.Server, workdir, stdin string, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"--workdir", workdir}, args...)...)
	cmd.Env = append(os.Environ(), "LITE_AGENT_TEST_MAIN=1", "ANTHROPIC_API_KEY=test-key", "OPENAI_API_KEY=",
		"HOME="+t.TempDir(), "XDG_STATE_HOME=", "XDG_CONFIG_HOME=")
	if srv != nil {
		cmd.Env = append(cmd.Env, "ANTHROPIC_BASE_URL="+srv.URL())
	}
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errs strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errs
	err := cmd.Run()
	r := result{stdout: out.String(), errs: errs.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return r
}

const greeter = "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"helo, world\")\n}\n"

// TestLineModeShowsDiffs: the line mode's approval shows the edit as a
// numbered diff with its context and tabs, and the result shows it again.
func TestLineModeShowsDiffs(t *testing.T) {
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "main.go"), []byte(greeter), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := startModel(t,
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{toolCall("e1", "edit", map[string]string{"path": "main.go", "old_string": "helo", "new_string": "hello"})}},
		fakemodel.Reply{Expect: &fakemodel.Expect{ToolResultFor: []string{"e1"}, BodyContains: []string{"@@ -3,5 +3,5 @@"}}, Text: "Fixed."},
	)
	r := liteAgent(t, srv, work, "fix the greeting\ny\n/exit\n", nil, "--plain")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.errs)
	}
	diff := "    5   func main() {\n    6 - \tfmt.Println(\"helo, world\")\n    6 + \tfmt.Println(\"hello, world\")\n    7   }\n"
	if strings.Count(r.errs, diff) != 2 {
		t.Errorf("stderr should show the numbered diff in the approval and in the result:\n%s", r.errs)
	}
	if !strings.Contains(r.errs, "allow edit main.go?") {
		t.Errorf("approval does not name the file: %s", r.errs)
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
}

// TestWriteOverAFileShowsItsDiff: a one-shot write over an existing file
// reports the lines it changed, not every line as new.
func TestWriteOverAFileShowsItsDiff(t *testing.T) {
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "main.go"), []byte(greeter), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := startModel(t,
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{toolCall("w1", "write", map[string]string{"path": "main.go", "content": strings.Replace(greeter, "helo", "hi", 1)})}},
		fakemodel.Reply{Text: "Rewritten."},
	)
	r := liteAgent(t, srv, work, "", nil, "--allow", "edit", "rewrite main.go")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.errs)
	}
	if !strings.Contains(r.errs, "▸ write main.go\n  ✓ wrote main.go (70 bytes, 7 lines)\n    3   import \"fmt\"\n") ||
		!strings.Contains(r.errs, "    6 - \tfmt.Println(\"helo, world\")\n    6 + \tfmt.Println(\"hi, world\")\n") ||
		strings.Contains(r.errs, "1 + package main") {
		t.Errorf("write result should be a diff against the old file:\n%s", r.errs)
	}
}

// TestShortKeyIsNotRedactedInsideWords: with a placeholder key "x", a cut
// stream's "unexpected EOF" reads as it is; a real key in an error is
// replaced, and nothing else around it.
func TestShortKeyIsNotRedactedInsideWords(t *testing.T) {
	cut := 1
	srv := startModel(t,
		fakemodel.Reply{Text: "a long enough answer to be cut", Fault: &fakemodel.Fault{Kind: fakemodel.FaultCut, AfterDeltas: &cut}},
		fakemodel.Reply{Text: "a long enough answer to be cut", Fault: &fakemodel.Fault{Kind: fakemodel.FaultCut, AfterDeltas: &cut}},
		fakemodel.Reply{Text: "a long enough answer to be cut", Fault: &fakemodel.Fault{Kind: fakemodel.FaultCut, AfterDeltas: &cut}},
		fakemodel.Reply{Text: "a long enough answer to be cut", Fault: &fakemodel.Fault{Kind: fakemodel.FaultCut, AfterDeltas: &cut}},
		fakemodel.Reply{Text: "a long enough answer to be cut", Fault: &fakemodel.Fault{Kind: fakemodel.FaultCut, AfterDeltas: &cut}},
	)
	r := liteAgent(t, srv, t.TempDir(), "", []string{"ANTHROPIC_API_KEY=x"}, "hi")
	if r.code != 1 || !strings.Contains(r.errs, "unexpected EOF") || strings.Contains(r.errs, "redacted") {
		t.Errorf("exit %d, stderr %q; want 1 and an unredacted \"unexpected EOF\"", r.code, r.errs)
	}

	const key = "sk-ant-REAL-KEY-0123456789"
	srv = startModel(t, fakemodel.Reply{Fault: &fakemodel.Fault{Kind: fakemodel.FaultAuth, Message: "invalid x-api-key " + key + " (expected a key)"}})
	r = liteAgent(t, srv, t.TempDir(), "", []string{"ANTHROPIC_API_KEY=" + key}, "hi")
	if r.code != 1 || !strings.Contains(r.errs, "invalid x-api-key [redacted] (expected a key)") || strings.Contains(r.errs, key) {
		t.Errorf("exit %d, stderr %q; want the key alone replaced", r.code, r.errs)
	}
}

// TestPipedInputAndMentions: `echo data | lite-agent "summarize @notes.txt"`
// sends the prompt, the mentioned file and the piped input together.
func TestPipedInputAndMentions(t *testing.T) {
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "notes.txt"), []byte("remember the milk\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := startModel(t, fakemodel.Reply{
		Expect: &fakemodel.Expect{BodyContains: []string{
			`summarize @notes.txt and @missing.txt`,
			`\u003cfile path=\"notes.txt\"\u003e\nremember the milk\n\u003c/file\u003e`,
			`\u003cstdin\u003e\npiped data\n\u003c/stdin\u003e`,
		}},
		Text: "Summarized.",
	})
	r := liteAgent(t, srv, work, "piped data\n", nil, "summarize @notes.txt and @missing.txt")
	if r.code != 0 || !strings.Contains(r.stdout, "Summarized.") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.errs)
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
	// Too much piped input is cut, and the user told.
	srv = startModel(t, fakemodel.Reply{Text: "Cut."})
	r = liteAgent(t, srv, work, strings.Repeat("z", 300<<10), nil, "count the z")
	if r.code != 0 || !strings.Contains(r.errs, "standard input cut to its first 256 KiB") {
		t.Errorf("exit %d, stderr %q", r.code, r.errs)
	}
	if body := string(srv.Requests()[0].Body); strings.Count(body, "z") < 256<<10 || strings.Count(body, "z") > 257<<10 {
		t.Errorf("request carries %d z, want 256 KiB of them", strings.Count(body, "z"))
	}
}

// TestOpenAIServerThatCannotStreamToolCalls: the tool call the stream
// left out is fetched without streaming, and the turn goes on.
func TestOpenAIServerThatCannotStreamToolCalls(t *testing.T) {
	work := t.TempDir()
	call := fakemodel.Reply{NoStreamToolCalls: true, ToolCalls: []fakemodel.ToolCall{toolCall("w1", "write", map[string]string{"path": "made.txt", "content": "made\n"})}}
	answer := fakemodel.Reply{NoStreamToolCalls: true, Text: "Made it."}
	srv := startModel(t, call, call, answer, answer)
	r := liteAgent(t, srv, work, "", []string{"OPENAI_BASE_URL=" + srv.OpenAIURL()}, "--provider", "openai", "--model", "local", "--allow", "edit", "make a file")
	if r.code != 0 || !strings.Contains(r.stdout, "Made it.") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.errs)
	}
	if b, err := os.ReadFile(filepath.Join(work, "made.txt")); err != nil || string(b) != "made\n" {
		t.Errorf("made.txt = %q, %v", b, err)
	}
}

// TestOpenAINoStreamFlag: with --no-stream (or no_stream = true in a
// config file) every request asks for a whole answer, so a server that
// cannot stream tool calls is asked once per step; the flag is refused
// with the anthropic provider.
func TestOpenAINoStreamFlag(t *testing.T) {
	for _, how := range []string{"flag", "config"} {
		t.Run(how, func(t *testing.T) {
			args := []string{"--provider", "openai", "--model", "local", "--allow", "edit"}
			projectText := "no_stream = true\n"
			if how == "flag" {
				args, projectText = append(args, "--no-stream"), ""
			}
			work := project(t, "", projectText)
			call := fakemodel.Reply{NoStreamToolCalls: true, ToolCalls: []fakemodel.ToolCall{toolCall("w1", "write", map[string]string{"path": "made.txt", "content": "made\n"})}}
			answer := fakemodel.Reply{NoStreamToolCalls: true, Text: "Made it."}
			srv := startModel(t, call, answer)
			r := liteAgent(t, srv, work, "", []string{"OPENAI_BASE_URL=" + srv.OpenAIURL(), "XDG_CONFIG_HOME=" + configHome}, append(args, "make a file")...)
			if r.code != 0 || !strings.Contains(r.stdout, "Made it.") {
				t.Fatalf("exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.errs)
			}
			reqs := srv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests, want 2 (one whole answer per step)", len(reqs))
			}
			for i, req := range reqs {
				if strings.Contains(string(req.Body), `"stream":true`) {
					t.Errorf("request %d asked for a stream: %s", i+1, req.Body)
				}
			}
			if b, err := os.ReadFile(filepath.Join(work, "made.txt")); err != nil || string(b) != "made\n" {
				t.Errorf("made.txt = %q, %v", b, err)
			}
		})
	}
	r := liteAgent(t, nil, t.TempDir(), "", []string{"ANTHROPIC_BASE_URL=http://127.0.0.1:1"}, "--no-stream", "hi")
	if r.code != 2 || !strings.Contains(r.errs, "--no-stream (no_stream in a config file) is for the openai provider") {
		t.Errorf("--no-stream with anthropic: exit %d, stderr %q", r.code, r.errs)
	}
}
