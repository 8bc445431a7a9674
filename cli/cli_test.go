package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/internal/fakemodel"
)

// runCLI runs the command line in-process in workdir and returns its exit
// status, stdout and stderr.
func runCLI(t testing.TB, workdir string, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	if workdir != "" {
		args = append([]string{"--workdir", workdir}, args...)
	}
	code := Main(context.Background(), args, IO{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb})
	return code, out.String(), errb.String()
}

// model starts the fake model server with replies and points the
// anthropic provider at it through the environment.
func model(t testing.TB, replies ...fakemodel.Reply) *fakemodel.Server {
	t.Helper()
	srv, err := fakemodel.Start(&fakemodel.Script{Replies: replies})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	t.Setenv("ANTHROPIC_BASE_URL", srv.URL())
	t.Setenv("ANTHROPIC_API_KEY", "test-key")
	t.Setenv("OPENAI_API_KEY", "")
	return srv
}

func toolCall(id, name string, input any) fakemodel.ToolCall {
	b, _ := json.Marshal(input)
	return fakemodel.ToolCall{ID: id, Name: name, Input: b}
}

// isolate points HOME and XDG dirs at an empty temp dir and returns it.
func isolate(t testing.TB) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_STATE_HOME", filepath.Join(home, "state"))
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, "config"))
	return home
}

func TestFlagRules(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "s.db")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"two operations", []string{"--session-db", db, "--sessions", "--session-info", "x"}, "at most one session operation"},
		{"resume and list", []string{"--session-db", db, "--resume", "x", "--sessions"}, "at most one session operation"},
		{"operation without db", []string{"--sessions"}, "--sessions requires --session-db"},
		{"resume without db", []string{"--resume", "abc", "hi"}, "--resume requires --session-db"},
		{"recovery without db", []string{"--recovery-info", "abc"}, "requires --session-db"},
		{"acknowledge without resume", []string{"--session-db", db, "--acknowledge", "rv-1", "hi"}, "--acknowledge goes with --resume"},
		{"restore without to", []string{"--session-db", db, "--restore", "x"}, "needs --to"},
		{"inspection with prompt", []string{"--session-db", db, "--sessions", "hello"}, "takes no prompt"},
		{"bad output", []string{"--output", "xml", "hi"}, "--output must be"},
		{"bad allow", []string{"--allow", "everything", "hi"}, "--allow takes"},
		{"unknown flag", []string{"--frobnicate"}, "flag provided but not defined"},
		{"no model calls", []string{"--max-model-calls", "0", "hi"}, "--max-model-calls must be at least 1, not 0"},
		{"negative model calls", []string{"--max-model-calls", "-1", "hi"}, "--max-model-calls must be at least 1, not -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runCLI(t, dir, "", tt.args...)
			if code != ExitUsage {
				t.Fatalf("exit %d, want %d (stderr %q)", code, ExitUsage, errs)
			}
			if !strings.Contains(errs, tt.want) || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
				t.Fatalf("stderr %q: want one line containing %q", errs, tt.want)
			}
			if out != "" {
				t.Fatalf("stdout %q on a usage error", out)
			}
			if _, err := os.Stat(db); !os.IsNotExist(err) {
				t.Fatal("a usage error created the session database")
			}
		})
	}
}

func TestHelpListsEveryFlagAndExitCodes(t *testing.T) {
	code, out, _ := runCLI(t, "", "", "--help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"--session-db", "--resume", "--sessions", "--session-info", "--recovery-info", "--checkpoints",
		"--restore", "--fork", "--delete-session", "--export", "--import", "--acknowledge", "--allow", "--output", "--demo",
		"Exit status", "130"} {
		if !strings.Contains(out, want) {
			t.Errorf("--help does not mention %s", want)
		}
	}
}

func TestWithoutSessionDBNothingIsWritten(t *testing.T) {
	home := isolate(t)
	model(t, fakemodel.Reply{Text: "hello there"})
	work := t.TempDir()
	code, out, errs := runCLI(t, work, "", "say hi")
	if code != 0 || !strings.Contains(out, "hello there") {
		t.Fatalf("exit %d out %q err %q", code, out, errs)
	}
	for _, d := range []string{home, work} {
		entries, _ := os.ReadDir(d)
		if len(entries) != 0 {
			t.Fatalf("a run without --session-db wrote %v in %s", entries, d)
		}
	}
}

func TestMissingKeyPointsAtDemo(t *testing.T) {
	isolate(t)
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("ANTHROPIC_BASE_URL", "")
	t.Setenv("OPENAI_API_KEY", "")
	code, _, errs := runCLI(t, t.TempDir(), "", "hi")
	if code != ExitError || !strings.Contains(errs, "ANTHROPIC_API_KEY") || !strings.Contains(errs, "--demo") {
		t.Fatalf("exit %d stderr %q", code, errs)
	}
}

// TestSessionDBMissingDirectory: a --session-db whose directory does not
// exist is a bad argument (exit 2, as README says), with the fix to run.
func TestSessionDBMissingDirectory(t *testing.T) {
	isolate(t)
	model(t)
	db := filepath.Join(t.TempDir(), "no", "such", "dir", "s.db")
	code, _, errs := runCLI(t, t.TempDir(), "", "--session-db", db, "hi")
	if code != ExitUsage || !strings.Contains(errs, "does not exist") || !strings.Contains(errs, "mkdir -p") {
		t.Fatalf("exit %d stderr %q", code, errs)
	}
}

// fileBytes reads the database and its WAL and SHM files ("" when absent).
func fileBytes(t testing.TB, db string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
		b, err := os.ReadFile(db + suffix)
		if err == nil {
			out[suffix] = string(b)
		} else if !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	return out
}

func TestSessionsLifecycleAndReadOnlyInspection(t *testing.T) {
	isolate(t)
	srv := model(t,
		fakemodel.Reply{Text: "Writing.", ToolCalls: []fakemodel.ToolCall{toolCall("w1", "write", map[string]string{"path": "f.txt", "content": "one\n"})}},
		fakemodel.Reply{Text: "first done"},
		fakemodel.Reply{Text: "second session"},
		fakemodel.Reply{Expect: &fakemodel.Expect{BodyContains: []string{"make f", "first done"}, LastUserContains: []string{"again"}}, Text: "resumed fine"},
	)
	work := t.TempDir()
	db := filepath.Join(t.TempDir(), "sessions.db")

	code, out, errs := runCLI(t, work, "", "--session-db", db, "--allow", "edit", "make f")
	if code != 0 || !strings.Contains(out, "first done") {
		t.Fatalf("first run: exit %d out %q err %q", code, out, errs)
	}
	fi, err := os.Stat(db)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("database mode %v, %v; want 0600", fi.Mode().Perm(), err)
	}
	if code, _, errs := runCLI(t, work, "", "--session-db", db, "other"); code != 0 {
		t.Fatalf("second run: %d %s", code, errs)
	}

	before := fileBytes(t, db)
	code, out, errs = runCLI(t, work, "", "--session-db", db, "--sessions")
	if code != 0 {
		t.Fatalf("--sessions: %d %s", code, errs)
	}
	var list []struct {
		ID       string `json:"id"`
		Revision int64  `json:"revision"`
		Messages int    `json:"messages"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list) != 2 {
		t.Fatalf("--sessions output %q: %v", out, err)
	}
	first := list[1] // newest first
	if first.Messages != 3 || first.Revision < 8 || list[0].Messages != 2 {
		t.Fatalf("sessions %+v", list)
	}
	for _, args := range [][]string{
		{"--session-info", first.ID}, {"--recovery-info", first.ID}, {"--checkpoints", first.ID}, {"--export", first.ID},
		{"--session-info", first.ID[:10]},
	} {
		code, out, errs := runCLI(t, work, "", append([]string{"--session-db", db}, args...)...)
		if code != 0 || out == "" {
			t.Fatalf("%v: exit %d err %q", args, code, errs)
		}
		if after := fileBytes(t, db); len(after) != len(before) || after[""] != before[""] || after["-wal"] != before["-wal"] || after["-shm"] != before["-shm"] {
			t.Fatalf("%v changed the database files", args)
		}
	}
	// Inspection never contacts the model.
	reqs := len(srv.Requests())
	code, out, _ = runCLI(t, work, "", "--session-db", db, "--checkpoints", first.ID)
	var cps []struct {
		Seq    int64  `json:"seq"`
		Prompt string `json:"prompt"`
		Time   string `json:"time"`
	}
	if err := json.Unmarshal([]byte(out), &cps); code != 0 || err != nil || len(cps) != 1 || cps[0].Prompt != "make f" || cps[0].Time == "" {
		t.Fatalf("--checkpoints %q", out)
	}
	if len(srv.Requests()) != reqs {
		t.Fatal("inspection contacted the model")
	}

	// Resume by a unique prefix continues the conversation.
	code, out, errs = runCLI(t, work, "", "--session-db", db, "--resume", first.ID[:12], "again")
	if code != 0 || !strings.Contains(out, "resumed fine") {
		t.Fatalf("resume: exit %d out %q err %q", code, out, errs)
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
	// An unknown handle is a clear error.
	code, _, errs = runCLI(t, work, "", "--session-db", db, "--resume", "zzzz", "x")
	if code != ExitError || !strings.Contains(errs, "no session matches") {
		t.Fatalf("unknown handle: %d %q", code, errs)
	}

	// Restore to before the first prompt removes f.txt, and can be undone.
	code, out, errs = runCLI(t, work, "", "--session-db", db, "--restore", first.ID, "--to", itoa(cps[0].Seq))
	if code != 0 {
		t.Fatalf("restore: %d %s", code, errs)
	}
	if _, err := os.Stat(filepath.Join(work, "f.txt")); !os.IsNotExist(err) {
		t.Fatal("restore left f.txt")
	}
	var res struct {
		UndoSession string `json:"undo_session"`
		UndoSeq     int64  `json:"undo_seq"`
	}
	json.Unmarshal([]byte(out), &res)
	if !strings.Contains(errs, "to undo") || res.UndoSession == "" {
		t.Fatalf("restore output %q %q", out, errs)
	}
	code, _, errs = runCLI(t, work, "", "--session-db", db, "--restore", res.UndoSession, "--to", itoa(res.UndoSeq))
	if b, err := os.ReadFile(filepath.Join(work, "f.txt")); code != 0 || string(b) != "one\n" {
		t.Fatalf("undo: %d %s, f.txt %q %v", code, errs, b, err)
	}

	// Export, delete, import: the session comes back event for event.
	_, exported, _ := runCLI(t, work, "", "--session-db", db, "--export", res.UndoSession)
	if code, _, errs := runCLI(t, work, "", "--session-db", db, "--delete-session", res.UndoSession); code != 0 {
		t.Fatalf("delete: %s", errs)
	}
	_, out, _ = runCLI(t, work, "", "--session-db", db, "--sessions")
	var after []struct{ ID string }
	json.Unmarshal([]byte(out), &after)
	for _, s := range after {
		if s.ID == res.UndoSession {
			t.Fatal("a deleted session is still listed")
		}
	}
	code, _, errs = runCLI(t, work, exported, "--session-db", db, "--import", "-")
	if code != 0 {
		t.Fatalf("import: %s", errs)
	}
	_, again, _ := runCLI(t, work, "", "--session-db", db, "--export", res.UndoSession)
	// The same but for the import mark on session_started (line 2).
	g, w := strings.SplitN(again, "\n", 3), strings.SplitN(exported, "\n", 3)
	if len(g) != 3 || len(w) != 3 || g[0] != w[0] || g[2] != w[2] || !strings.Contains(g[1], `"imported":{"from":"stdin"`) {
		t.Fatalf("export after import differs from the export before beyond the import mark:\n%s\nwant:\n%s", again, exported)
	}

	// Fork copies a prefix into a new session.
	code, out, errs = runCLI(t, work, "", "--session-db", db, "--fork", first.ID, "--to", itoa(cps[0].Seq))
	if code != 0 || !strings.Contains(out, `"parent"`) {
		t.Fatalf("fork: %d %q %q", code, out, errs)
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

func TestOneShotDeniesWithoutAllowAndJSONOutput(t *testing.T) {
	isolate(t)
	srv := model(t,
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{toolCall("b1", "bash", map[string]string{"command": "touch made"})}},
		fakemodel.Reply{Expect: &fakemodel.Expect{ToolResultFor: []string{"b1"}, BodyContains: []string{"denied"}}, Text: "I was not allowed."},
	)
	work := t.TempDir()
	code, out, errs := runCLI(t, work, "", "--output", "json", "make a file")
	if code != 0 {
		t.Fatalf("exit %d %s", code, errs)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil || res["text"] != "I was not allowed." || res["is_error"] != false {
		t.Fatalf("json output %q: %v", out, err)
	}
	if !strings.Contains(errs, "--allow bash") {
		t.Fatalf("stderr does not say how to allow: %q", errs)
	}
	if _, err := os.Stat(filepath.Join(work, "made")); !os.IsNotExist(err) {
		t.Fatal("a denied command ran")
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
}

func TestStreamJSONOutput(t *testing.T) {
	isolate(t)
	model(t, fakemodel.Reply{Text: "streamed answer"})
	code, out, errs := runCLI(t, t.TempDir(), "", "--output", "stream-json", "hi")
	if code != 0 {
		t.Fatalf("exit %d %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var kinds []string
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %q is not JSON: %v", l, err)
		}
		kinds = append(kinds, m["type"].(string))
	}
	if kinds[len(kinds)-1] != "result" || !strings.Contains(strings.Join(kinds, ","), "delta") || !strings.Contains(strings.Join(kinds, ","), "event") {
		t.Fatalf("stream kinds %v", kinds)
	}
}

func TestLineModeCommands(t *testing.T) {
	isolate(t)
	model(t, fakemodel.Reply{Text: "hi back"})
	code, out, errs := runCLI(t, t.TempDir(), "/sessions\n/help\nhello\n/exit\n")
	if code != 0 {
		t.Fatalf("exit %d %s", code, errs)
	}
	if !strings.Contains(errs, "/sessions needs --session-db") || !strings.Contains(errs, "/checkpoints") || !strings.Contains(out, "hi back") {
		t.Fatalf("line mode:\nout %q\nerr %q", out, errs)
	}
}

func TestLineModeSessionsPicker(t *testing.T) {
	isolate(t)
	srv := model(t,
		fakemodel.Reply{Text: "alpha answer"},
		fakemodel.Reply{Text: "beta answer"},
		fakemodel.Reply{Expect: &fakemodel.Expect{BodyContains: []string{"alpha prompt", "alpha answer"}}, Text: "back in alpha"},
	)
	work := t.TempDir()
	db := filepath.Join(t.TempDir(), "s.db")
	runCLI(t, work, "", "--session-db", db, "alpha prompt")
	runCLI(t, work, "", "--session-db", db, "beta prompt")
	// Newest first: beta is 1, alpha is 2.
	code, out, errs := runCLI(t, work, "/sessions\n2\ncontinue alpha\n/exit\n", "--session-db", db)
	if code != 0 || !strings.Contains(out, "back in alpha") || !strings.Contains(errs, "loaded session") {
		t.Fatalf("exit %d\nout %q\nerr %q", code, out, errs)
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
}

func TestLineModeAnswersAskUser(t *testing.T) {
	isolate(t)
	srv := model(t,
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{toolCall("q1", "ask_user", map[string]any{"question": "Which color?", "choices": []string{"red", "blue"}})}},
		fakemodel.Reply{Expect: &fakemodel.Expect{ToolResultFor: []string{"q1"}, BodyContains: []string{"blue, please"}}, Text: "Blue it is."},
	)
	code, out, errs := runCLI(t, t.TempDir(), "paint it\nblue, please\n/exit\n")
	if code != 0 || !strings.Contains(errs, "Which color? (red / blue)") || !strings.Contains(out, "Blue it is.") {
		t.Fatalf("exit %d\nout %q\nerr %q", code, out, errs)
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
}
