package main

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/lite-agent/lite-agent/internal/fakemodel"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// Values that differ from run to run, and what the golden files hold instead.
var (
	ulidRE = regexp.MustCompile(`\b[0-9a-hjkmnp-tv-z]{26}\b`)
	timeRE = regexp.MustCompile(`"time":"[^"]+"`)
	dateRE = regexp.MustCompile(`Today's date: [0-9-]+|Platform: [a-z0-9]+/[a-z0-9]+`)
)

// golden compares out, normalised, with testdata/name.
func golden(t *testing.T, name, work, out string) {
	t.Helper()
	out = strings.ReplaceAll(out, work, "WORKDIR")
	out = ulidRE.ReplaceAllString(out, "SESSION")
	out = timeRE.ReplaceAllString(out, `"time":"TIME"`)
	out = dateRE.ReplaceAllStringFunc(out, func(s string) string { return s[:strings.Index(s, ":")] + ": X" })
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(p, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), out); diff != "" {
		t.Errorf("%s (-want +got):\n%s", name, diff)
	}
}

// outputTurn is a turn with text, a tool call and a final answer.
func outputTurn(t *testing.T) (*fakemodel.Server, string) {
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "notes.txt"), []byte("remember the milk\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := startModel(t,
		fakemodel.Reply{Text: "Reading.", ChunkSize: 20, ToolCalls: []fakemodel.ToolCall{toolCall("r1", "read", map[string]string{"path": "notes.txt"})},
			Usage: &fakemodel.Usage{InputTokens: 100, OutputTokens: 10}},
		fakemodel.Reply{Text: "It says: remember the milk.", ChunkSize: 40, Usage: &fakemodel.Usage{InputTokens: 150, OutputTokens: 8}},
	)
	return srv, work
}

// TestStreamJSONSchema pins every stream-json line type: snake_case, a
// version on every line, one JSON object per line.
func TestStreamJSONSchema(t *testing.T) {
	srv, work := outputTurn(t)
	r := liteAgent(t, srv, work, "", nil, "--output", "stream-json", "what do my notes say?")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.errs)
	}
	for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %q is not one JSON object: %v", l, err)
		}
		if m["version"] != float64(1) {
			t.Errorf("line without version 1: %s", l)
		}
		for k := range m {
			if strings.ToLower(k) != k {
				t.Errorf("field %q is not snake_case: %s", k, l)
			}
		}
	}
	golden(t, "stream-json.golden", work, r.stdout)
}

func TestJSONSchema(t *testing.T) {
	srv, work := outputTurn(t)
	r := liteAgent(t, srv, work, "", nil, "--output", "json", "what do my notes say?")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.errs)
	}
	golden(t, "json.golden", work, r.stdout)
}

// TestEmptyAnswerFails: a model that answers nothing at all makes the run
// fail with a warning, in every output format.
func TestEmptyAnswerFails(t *testing.T) {
	for _, format := range []string{"text", "json", "stream-json"} {
		srv := startModel(t, fakemodel.Reply{Text: ""})
		r := liteAgent(t, srv, t.TempDir(), "", nil, "--output", format, "hello?")
		if r.code != 1 || !strings.Contains(r.errs, "lite-agent: warning: the model returned an empty answer") {
			t.Errorf("%s: exit %d, stderr %q; want 1 and the warning", format, r.code, r.errs)
		}
		if format != "text" && !strings.Contains(r.stdout, `"is_error":true`) {
			t.Errorf("%s: the result line does not say it failed: %s", format, r.stdout)
		}
	}
	// The line mode too, at the end of its piped input.
	srv := startModel(t, fakemodel.Reply{Text: ""})
	r := liteAgent(t, srv, t.TempDir(), "hello?\n", nil, "--plain")
	if r.code != 1 || !strings.Contains(r.errs, "empty answer") {
		t.Errorf("line mode: exit %d, stderr %q; want 1 and the warning", r.code, r.errs)
	}
}

// TestApprovalOnClosedStdinFails: piped prompts whose input ends before a
// tool call could be approved stop the run with status 1, and the tool
// does not run.
func TestApprovalOnClosedStdinFails(t *testing.T) {
	work := t.TempDir()
	srv := startModel(t,
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{toolCall("b1", "bash", map[string]string{"command": "touch made"})}},
		fakemodel.Reply{Text: "never asked for"},
	)
	r := liteAgent(t, srv, work, "make a file\n", nil)
	if r.code != 1 || !strings.Contains(r.errs, "standard input ended before a tool call could be approved") {
		t.Errorf("exit %d, stderr %q; want 1 and why", r.code, r.errs)
	}
	if _, err := os.Stat(filepath.Join(work, "made")); !os.IsNotExist(err) {
		t.Error("the command ran without approval")
	}
}
