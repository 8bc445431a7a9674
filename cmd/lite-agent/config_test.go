package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/internal/fakemodel"
	"github.com/lite-agent/lite-agent/sandbox"
)

// project makes a repository workdir with a project config file, and a
// user config file under XDG_CONFIG_HOME; either text may be empty.
func project(t *testing.T, userText, projectText string) string {
	t.Helper()
	base := t.TempDir()
	work := filepath.Join(base, "repo")
	for path, text := range map[string]string{
		filepath.Join(work, ".git", "HEAD"):                     "ref: refs/heads/main\n",
		filepath.Join(work, ".lite-agent", "config.toml"):       projectText,
		filepath.Join(base, "xdg", "lite-agent", "config.toml"): userText,
	} {
		if text == "" && !strings.HasSuffix(path, "HEAD") {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	configHome = filepath.Join(base, "xdg")
	t.Cleanup(func() { configHome = "" })
	return work
}

// configHome is the XDG_CONFIG_HOME the runs of a test get: "" (no user
// file) unless the test made one with project. The tests of this package
// do not run in parallel.
var configHome string

// Rules from the user's file and the project's file hold together in a
// one-shot run: a chained command is allowed only when every part is, a
// deny wins and its reason reaches the model, and each decision is in the
// log with its rule.
func TestConfigRulesFromUserAndProjectFiles(t *testing.T) {
	work := project(t,
		"[permissions]\nallow = [\"bash(echo *)\", \"bash(touch *)\"]\n",
		"[permissions]\ndeny = [{ pattern = \"bash(rm *)\", reason = \"files are never deleted here\" }]\n")
	os.WriteFile(filepath.Join(work, "keep.txt"), []byte("keep"), 0o644)
	srv := startModel(t,
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{
			toolCall("c1", "bash", map[string]any{"command": "echo hi && rm -f keep.txt"}),
			toolCall("c2", "bash", map[string]any{"command": "echo ok > ok.txt && touch made.txt"}),
			toolCall("c3", "bash", map[string]any{"command": "echo x; curl -s http://127.0.0.1:1/ > got.txt"}),
		}},
		fakemodel.Reply{Expect: &fakemodel.Expect{ToolResultFor: []string{"c1", "c2", "c3"},
			BodyContains: []string{"files are never deleted here", "nobody to approve it"}}, Text: "done"},
	)
	db := filepath.Join(t.TempDir(), "s.db")
	code, out, errs := run(t, srv, work, "--session-db", db, "do it")
	if code != 0 || !strings.Contains(out, "done") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(work, "keep.txt")); err != nil {
		t.Fatal("the denied rm ran")
	}
	if _, err := os.Stat(filepath.Join(work, "made.txt")); err != nil {
		t.Fatalf("the allowed chained command did not run: %v\n%s", err, errs)
	}
	if _, err := os.Stat(filepath.Join(work, "got.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a chained command with a part no rule allows ran")
	}
	if !strings.Contains(errs, "⊘ bash denied: files are never deleted here") || !strings.Contains(errs, "denied bash (one-shot runs need --allow bash") {
		t.Fatalf("stderr does not show the denials:\n%s", errs)
	}
	code, log, errs := run(t, nil, work, "--session-db", db, "--export", onlySession(t, work, db))
	if code != 0 {
		t.Fatal(errs)
	}
	for _, want := range []string{
		`"type":"permission_decided","time"`,
		`"call_id":"c1","tool":"bash","effect":"deny","rule":"bash(rm *)","source":"project ` + filepath.Join(work, ".lite-agent", "config.toml") + `","reason":"files are never deleted here"`,
		`"call_id":"c2","tool":"bash","effect":"allow","rule":"bash(touch *)","source":"user `,
		`"approval":"rule"`,
	} {
		if !strings.Contains(log, want) {
			t.Errorf("the log lacks %s:\n%s", want, log)
		}
	}
	if strings.Contains(log, `"call_id":"c3","tool":"bash","effect"`) {
		t.Errorf("a decision was recorded for c3, which no rule covers:\n%s", log)
	}
}

// A malformed file stops the run before anything is written, naming the
// file, the line and the key.
func TestConfigMalformedFile(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"unknown key", "model = \"m\"\n[sandbox]\nmod = \"off\"\n", "config.toml:3: sandbox.mod: unknown key"},
		{"wrong type", "\nsession_db = 3\n", "config.toml:2: session_db: incompatible types"},
		{"bad pattern", "[permissions]\nallow = [\"bash(ls\"]\n", "config.toml:2: permissions.allow: pattern \"bash(ls\" lacks its closing )"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			work := project(t, "", tc.text)
			db := filepath.Join(t.TempDir(), "s.db")
			code, _, errs := run(t, nil, work, "--session-db", db, "hi")
			if code != 2 || !strings.Contains(errs, filepath.Join(work, ".lite-agent", tc.want)) {
				t.Fatalf("exit %d, stderr %q; want 2 and %q", code, errs, tc.want)
			}
			if _, err := os.Stat(db); !errors.Is(err, os.ErrNotExist) {
				t.Fatal("a bad config file let the run create the session database")
			}
		})
	}
}

// --config prints the merged configuration with where each value came
// from; a flag overrides the project, the project the user.
func TestConfigPrintsSources(t *testing.T) {
	work := project(t,
		"provider = \"openai\"\nmodel = \"user-model\"\nbase_url = \"http://127.0.0.1:1\"\n[mcp.servers.files]\ncommand = \"mcp-files\"\nenv = { TOKEN = \"s3cret\" }\n",
		"model = \"project-model\"\nsession_db = \"/tmp/p.db\"\n[permissions]\nask = [\"write(**/*.md)\"]\n")
	code, out, errs := run(t, nil, work, "--config", "--base-url", "http://127.0.0.1:2", "--allow", "edit")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	user := filepath.Join(filepath.Dir(work), "xdg", "lite-agent", "config.toml")
	proj := filepath.Join(work, ".lite-agent", "config.toml")
	for _, want := range []string{
		`provider = "openai" # user ` + user,
		`model = "project-model" # project ` + proj,
		`base_url = "http://127.0.0.1:2" # flag --base-url`,
		`session_db = "/tmp/p.db" # project ` + proj,
		`"write(**/*.md)", # project ` + proj,
		`#   allow kind:edit (--allow edit)`,
		`mode = "off" # default`,
		`[mcp.servers."files"] # user ` + user,
		"# env: TOKEN (values hidden)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("--config lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "s3cret") {
		t.Errorf("--config printed a secret:\n%s", out)
	}
}

// session_db from a config file is the user's choice of database; with no
// config and no flag nothing is persisted.
func TestConfigSessionDB(t *testing.T) {
	db := filepath.Join(t.TempDir(), "cfg.db")
	work := project(t, "session_db = \""+db+"\"\n", "")
	srv := startModel(t, fakemodel.Reply{Text: "one"})
	if code, _, errs := run(t, srv, work, "hi"); code != 0 {
		t.Fatal(errs)
	}
	if _, err := os.Stat(db); err != nil {
		t.Fatalf("session_db from the user file was not used: %v", err)
	}
	if code, out, errs := run(t, nil, work, "--sessions"); code != 0 || !strings.Contains(out, `"revision"`) {
		t.Fatalf("--sessions with session_db from config: %d %s %s", code, out, errs)
	}
	bare := project(t, "", "")
	if code, _, errs := run(t, nil, bare, "--sessions"); code != 2 || !strings.Contains(errs, "requires --session-db") {
		t.Fatalf("without a config --sessions must need --session-db: %d %s", code, errs)
	}
}

func TestVersionAndShortFlags(t *testing.T) {
	code, out, _ := run(t, nil, t.TempDir(), "--version")
	if code != 0 || !strings.HasPrefix(out, "lite-agent ") || !strings.Contains(out, "go1.") {
		t.Fatalf("--version: %d %q", code, out)
	}
	work := project(t, "", "")
	db := filepath.Join(t.TempDir(), "s.db")
	srv := startModel(t,
		fakemodel.Reply{Expect: &fakemodel.Expect{LastUserContains: []string{"first"}}, Text: "one"},
		fakemodel.Reply{Expect: &fakemodel.Expect{LastUserContains: []string{"second"}, BodyContains: []string{"first", "one"}}, Text: "two"},
		fakemodel.Reply{Expect: &fakemodel.Expect{LastUserContains: []string{"third"}, BodyContains: []string{"first", "second"}}, Text: "three"},
	)
	if code, _, errs := run(t, srv, work, "--session-db", db, "-p", "first"); code != 0 {
		t.Fatal(errs)
	}
	id := onlySession(t, work, db)
	if code, out, errs := run(t, srv, work, "--session-db", db, "-c", "second"); code != 0 || !strings.Contains(out, "two") {
		t.Fatalf("-c: %d %s %s", code, out, errs)
	}
	if code, out, errs := run(t, srv, work, "--session-db", db, "-r", id[:8], "-p", "third"); code != 0 || !strings.Contains(out, "three") {
		t.Fatalf("-r: %d %s %s", code, out, errs)
	}
	if got := onlySession(t, work, db); got != id {
		t.Fatalf("-c and -r made a new session %s", got)
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"-c", "x"},
		{"--session-db", db, "-c", "--resume", id, "x"},
		{"-p", "x", "y"},
	} {
		if code, _, errs := run(t, nil, work, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2: %s", args, code, errs)
		}
	}
	if code, _, errs := run(t, nil, t.TempDir(), "--session-db", db, "--continue", "x"); code == 0 || !strings.Contains(errs, "no session in this workspace") {
		t.Fatalf("--continue with no session: %d %s", code, errs)
	}
}

// One-shot --allow bash runs commands in workspace-write: a write outside
// the workdir and the temp dir fails, one inside works, reads stay open,
// and the mode is recorded with the command.
func TestSandboxOneShotWorkspaceWrite(t *testing.T) {
	if sandbox.ABI() < 1 {
		t.Skip("this kernel has no Landlock")
	}
	base := t.TempDir()
	outside := filepath.Join(base, "outside")
	os.Mkdir(outside, 0o755)
	os.WriteFile(filepath.Join(outside, "notes"), []byte("readable"), 0o644)
	os.Mkdir(filepath.Join(base, "tmp"), 0o755)
	t.Setenv("TMPDIR", filepath.Join(base, "tmp"))
	work := project(t, "", "")
	srv := startModel(t,
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{
			toolCall("c1", "bash", map[string]any{"command": "touch ./inside && cat " + outside + "/notes"}),
			toolCall("c2", "bash", map[string]any{"command": "touch " + outside + "/x-outside"}),
		}},
		fakemodel.Reply{Expect: &fakemodel.Expect{ToolResultFor: []string{"c1", "c2"}, BodyContains: []string{"readable", "Permission denied"}}, Text: "done"},
	)
	db := filepath.Join(t.TempDir(), "s.db")
	code, _, errs := run(t, srv, work, "--session-db", db, "--allow", "bash", "go")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(work, "inside")); err != nil {
		t.Fatal("touch ./inside failed in workspace-write")
	}
	if _, err := os.Stat(filepath.Join(outside, "x-outside")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a write outside the workdir got through the sandbox")
	}
	_, log, _ := run(t, nil, work, "--session-db", db, "--export", onlySession(t, work, db))
	if strings.Count(log, `"sandbox":"workspace-write"`) != 2 {
		t.Fatalf("the sandbox mode is not recorded with each command:\n%s", log)
	}
	// --sandbox off lifts it.
	srv2 := startModel(t,
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{toolCall("c1", "bash", map[string]any{"command": "touch " + outside + "/x-outside"})}},
		fakemodel.Reply{Text: "done"},
	)
	if code, _, errs := run(t, srv2, work, "--allow", "bash", "--sandbox", "off", "go"); code != 0 {
		t.Fatal(errs)
	}
	if _, err := os.Stat(filepath.Join(outside, "x-outside")); err != nil {
		t.Fatal("--sandbox off still confined the command")
	}
}
