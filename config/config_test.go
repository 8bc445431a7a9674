package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func write(t testing.TB, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestParseEveryKey(t *testing.T) {
	f, err := Parse("c.toml", []byte(`
provider = "openai"
model = "qwen3"
base_url = "http://127.0.0.1:11434/v1"
session_db = "/tmp/s.db"

[permissions]
allow = ["bash(go test *)", "read(**)"]
ask = ["write(**/*.md)"]
deny = [{ pattern = "bash(git push *)", reason = "pushes go through CI" }]

[sandbox]
mode = "workspace-write"
network = false
require = true

[mcp.servers.files]
command = "mcp-files"
args = ["--root", "."]
env = { TOKEN = "x" }
cwd = "/srv"
timeout = "30s"

[mcp.servers.web]
url = "http://127.0.0.1:9000/mcp"
headers = { Authorization = "Bearer y" }
`))
	if err != nil {
		t.Fatal(err)
	}
	no, yes := false, true
	want := &File{
		Provider: "openai", Model: "qwen3", BaseURL: "http://127.0.0.1:11434/v1", SessionDB: "/tmp/s.db",
		Permissions: Permissions{
			Allow: []Rule{{Pattern: "bash(go test *)"}, {Pattern: "read(**)"}},
			Ask:   []Rule{{Pattern: "write(**/*.md)"}},
			Deny:  []Rule{{Pattern: "bash(git push *)", Reason: "pushes go through CI"}},
		},
		Sandbox: Sandbox{Mode: "workspace-write", Network: &no, Require: &yes},
		MCP: MCP{Servers: map[string]MCPServer{
			"files": {Command: "mcp-files", Args: []string{"--root", "."}, Env: map[string]string{"TOKEN": "x"}, Cwd: "/srv", Timeout: Duration{30e9}},
			"web":   {URL: "http://127.0.0.1:9000/mcp", Headers: map[string]string{"Authorization": "Bearer y"}},
		}},
	}
	if d := cmp.Diff(want, f); d != "" {
		t.Fatalf("parsed (-want +got):\n%s", d)
	}
}

func TestParseErrorsNameFileLineAndKey(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		line       int
		key, msg   string
	}{
		{"unknown top key", "model = \"m\"\nmodle = \"x\"\n", 2, "modle", "unknown key"},
		{"unknown table key", "[sandbox]\nmode = \"off\"\nnetwrk = true\n", 3, "sandbox.netwrk", "unknown key"},
		{"wrong type", "provider = \"openai\"\nmodel = 7\n", 2, "model", "incompatible types"},
		{"wrong type in table", "[sandbox]\n\nrequire = \"yes\"\n", 3, "sandbox.require", "incompatible types"},
		{"bad mode", "[sandbox]\nmode = \"strict\"\n", 2, "sandbox.mode", "must be read-only, workspace-write, off"},
		{"bad provider", "provider = \"gemini\"\n", 1, "provider", "must be anthropic or openai"},
		{"bad rule", "[permissions]\nallow = [3]\n", 2, "permissions.allow", "a rule is a string"},
		{"bad pattern", "[permissions]\n\ndeny = [\"bash(rm *\"]\n", 3, "permissions.deny", "lacks its closing )"},
		{"syntax", "model = \"m\n", 1, "model", "newlines"},
		{"bad duration", "[mcp.servers.a]\ncommand = \"x\"\ntimeout = \"soon\"\n", 3, "mcp.servers.a.timeout", "duration"},
		{"server without command", "[mcp.servers.a]\nargs = [\"x\"]\n", 1, "mcp.servers.a", "either command"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("/p/config.toml", []byte(tc.text))
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("got %v, want a *config.Error", err)
			}
			if e.Path != "/p/config.toml" || e.Line != tc.line || e.Key != tc.key || !strings.Contains(e.Msg, tc.msg) {
				t.Fatalf("got %+v (%v), want line %d key %q message with %q", e, err, tc.line, tc.key, tc.msg)
			}
			if !strings.Contains(err.Error(), "/p/config.toml:") {
				t.Fatalf("error %q does not name the file and line", err)
			}
		})
	}
}

func TestLoadMergesUserProjectAndSources(t *testing.T) {
	dir := t.TempDir()
	user := filepath.Join(dir, "xdg", "lite-agent", "config.toml")
	write(t, user, "provider = \"openai\"\nmodel = \"user-model\"\n[permissions]\nallow = [\"bash(go test *)\"]\n[mcp.servers.a]\ncommand = \"a-user\"\n")
	repo := filepath.Join(dir, "repo")
	write(t, filepath.Join(repo, ".git", "HEAD"), "ref: x\n")
	project := filepath.Join(repo, ".lite-agent", "config.toml")
	write(t, project, "model = \"project-model\"\n[permissions]\ndeny = [\"bash(rm *)\"]\n[sandbox]\nmode = \"read-only\"\n[mcp.servers.a]\ncommand = \"a-project\"\n")
	sub := filepath.Join(repo, "pkg", "sub")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "xdg"))
	c, err := Load(sub, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.ProjectFile != project || c.UserFile != user {
		t.Fatalf("files %q %q, want %q %q", c.UserFile, c.ProjectFile, user, project)
	}
	if c.Provider.Value != "openai" || c.Provider.Source != (Source{LevelUser, user}) {
		t.Fatalf("provider %+v", c.Provider)
	}
	if c.Model.Value != "project-model" || c.Model.Source.Level != LevelProject {
		t.Fatalf("model %+v: the project must override the user", c.Model)
	}
	c.SetString(&c.Model, "flag-model", Source{Level: LevelFlag})
	if c.Model.Value != "flag-model" {
		t.Fatalf("a flag must override the project: %+v", c.Model)
	}
	want := []SourcedRule{
		{Rule{Pattern: "bash(go test *)"}, "allow", Source{LevelUser, user}},
		{Rule{Pattern: "bash(rm *)"}, "deny", Source{LevelProject, project}},
	}
	if d := cmp.Diff(want, c.Rules); d != "" {
		t.Fatalf("rules (-want +got):\n%s", d)
	}
	if c.Servers["a"].Command != "a-project" {
		t.Fatalf("server a %+v: the project's must win", c.Servers["a"])
	}
	var b strings.Builder
	c.Print(&b)
	for _, s := range []string{
		`model = "flag-model" # flag`,
		`provider = "openai" # user ` + user,
		`"bash(rm *)", # project ` + project,
		`mode = "read-only" # project ` + project,
		"# session_db is not set",
	} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("--config output lacks %q:\n%s", s, b.String())
		}
	}
}

func TestLoadOutsideRepoLooksOnlyAtWorkdir(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "none"))
	write(t, filepath.Join(dir, ".lite-agent", "config.toml"), "model = \"parent\"\n")
	sub := filepath.Join(dir, "sub")
	os.MkdirAll(sub, 0o755)
	c, err := Load(sub, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Model.Set || len(c.Read) != 0 {
		t.Fatalf("outside a repository a parent's project file was read: %+v", c)
	}
}

func TestLoadBadFileIsError(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	write(t, filepath.Join(dir, "lite-agent", "config.toml"), "[permisions]\nallow = []\n")
	_, err := Load(dir, nil)
	if err == nil || !strings.Contains(err.Error(), "config.toml:1: permisions") {
		t.Fatalf("got %v", err)
	}
}

func TestSaveRuleKeepsTheFile(t *testing.T) {
	for _, tc := range []struct{ name, before string }{
		{"new file", ""},
		{"no permissions table", "# mine\nmodel = \"m\"\n"},
		{"table without the list", "[permissions]\ndeny = [\"bash(rm *)\"]\n[sandbox]\nmode = \"off\"\n"},
		{"list on one line", "# keep me\n[permissions]\nallow = [\"read(**)\"] # trailing\n"},
		{"empty list", "[permissions]\nallow = []\n"},
		{"multi-line list", "[permissions]\nallow = [\n  \"read(**)\",\n]\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), ".lite-agent", "config.toml")
			if tc.before != "" {
				write(t, path, tc.before)
			}
			for range 2 {
				if err := SaveRule(path, "allow", "bash(go test ./...)"); err != nil {
					t.Fatal(err)
				}
			}
			data, _ := os.ReadFile(path)
			f, err := Parse(path, data)
			if err != nil {
				t.Fatalf("%v\n%s", err, data)
			}
			n := 0
			for _, r := range f.Permissions.Allow {
				if r.Pattern == "bash(go test ./...)" {
					n++
				}
			}
			if n != 1 {
				t.Fatalf("rule present %d times:\n%s", n, data)
			}
			for _, line := range strings.Split(tc.before, "\n") {
				if strings.HasPrefix(line, "#") && !strings.Contains(string(data), line) {
					t.Fatalf("comment %q lost:\n%s", line, data)
				}
			}
		})
	}
}

func TestSaveRuleRefusesABrokenFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.toml")
	write(t, path, "model = 3\n")
	if err := SaveRule(path, "allow", "bash(ls)"); err == nil {
		t.Fatal("saved into a file that does not parse")
	}
	if data, _ := os.ReadFile(path); string(data) != "model = 3\n" {
		t.Fatalf("file changed: %q", data)
	}
}
