package config

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/lite-agent/lite-agent/permission"
)

// File is one configuration file as written. Empty fields are unset.
type File struct {
	Provider  string `toml:"provider"`
	Model     string `toml:"model"`
	BaseURL   string `toml:"base_url"`
	SessionDB string `toml:"session_db"`
	// NoStream asks OpenAI-compatible servers for whole answers (the
	// command line's --no-stream).
	NoStream    *bool       `toml:"no_stream"`
	Permissions Permissions `toml:"permissions"`
	Sandbox     Sandbox     `toml:"sandbox"`
	MCP         MCP         `toml:"mcp"`
}

// Permissions are the [permissions] table: patterns whose calls are
// allowed without asking, asked about, or denied.
type Permissions struct {
	Allow []Rule `toml:"allow"`
	Ask   []Rule `toml:"ask"`
	Deny  []Rule `toml:"deny"`
}

// Rule is one permission pattern, written either as a string
// ("bash(go test *)") or as a table with a reason the user and the model
// are shown ({ pattern = "bash(git push *)", reason = "pushes go through CI" }).
type Rule struct {
	Pattern string
	Reason  string
}

// UnmarshalTOML accepts a string or a {pattern, reason} table.
func (r *Rule) UnmarshalTOML(v any) error {
	switch v := v.(type) {
	case string:
		r.Pattern = v
		return nil
	case map[string]any:
		for k, x := range v {
			s, ok := x.(string)
			switch {
			case k != "pattern" && k != "reason":
				return fmt.Errorf("a rule table takes pattern and reason, not %q", k)
			case !ok:
				return fmt.Errorf("a rule's %s must be a string, not %T", k, x)
			case k == "pattern":
				r.Pattern = s
			default:
				r.Reason = s
			}
		}
		if r.Pattern == "" {
			return errors.New("a rule table needs a pattern")
		}
		return nil
	}
	return fmt.Errorf("a rule is a string such as \"bash(go test *)\" or a table { pattern = \"…\", reason = \"…\" }, not %T", v)
}

// Sandbox is the [sandbox] table: how shell commands are confined.
type Sandbox struct {
	// Mode is "read-only", "workspace-write" or "off".
	Mode string `toml:"mode"`
	// Network, when false, runs commands without network access.
	Network *bool `toml:"network"`
	// Require makes a kernel without Landlock an error instead of a warning.
	Require *bool `toml:"require"`
}

// SandboxModes are the values Sandbox.Mode takes.
var SandboxModes = []string{"read-only", "workspace-write", "off"}

// MCP is the [mcp] table.
type MCP struct {
	Servers map[string]MCPServer `toml:"servers"`
}

// MCPServer is one [mcp.servers.NAME] table: a server started as a
// command (Command, Args, Env, Cwd) or reached at a URL (URL, Headers).
// It is plain data; the MCP client maps it to its own configuration.
type MCPServer struct {
	Command string            `toml:"command"`
	Args    []string          `toml:"args"`
	Env     map[string]string `toml:"env"`
	Cwd     string            `toml:"cwd"`
	URL     string            `toml:"url"`
	Headers map[string]string `toml:"headers"`
	// Timeout bounds each call to the server, as a Go duration ("30s").
	Timeout Duration `toml:"timeout"`
	// PerSession runs one copy of the server per session instead of one
	// shared by the process's sessions.
	PerSession bool `toml:"per_session"`
}

// Duration is a time.Duration written as a string such as "30s".
type Duration struct{ time.Duration }

// UnmarshalText parses a Go duration.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("a duration such as \"30s\" or \"2m\", not %q", b)
	}
	d.Duration = v
	return nil
}

// MarshalText writes the duration as Go writes it.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// Error is a configuration file that cannot be used.
type Error struct {
	Path string // the file
	Line int    // 1-based; 0 when unknown
	Key  string // the key at fault, dotted; "" when the file does not parse
	Msg  string
}

func (e *Error) Error() string {
	where := e.Path
	if e.Line > 0 {
		where = fmt.Sprintf("%s:%d", e.Path, e.Line)
	}
	if e.Key != "" {
		return fmt.Sprintf("config %s: %s: %s", where, e.Key, e.Msg)
	}
	return fmt.Sprintf("config %s: %s", where, e.Msg)
}

// Read reads the file at path. A missing file gives nil and no error.
func Read(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return Parse(path, data)
}

var lastKeyRE = regexp.MustCompile(`\(last key "([^"]*)"\): (.*)$`)

// Parse parses data, read from path (used in errors only), and checks
// every key and value.
func Parse(path string, data []byte) (*File, error) {
	var f File
	md, err := toml.Decode(string(data), &f)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			e := &Error{Path: path, Line: pe.Position.Line, Key: pe.LastKey, Msg: pe.Message}
			if e.Key != "" && e.Line == 0 {
				e.Line = lineOf(data, strings.Split(e.Key, "."))
			}
			return nil, e
		}
		e := &Error{Path: path, Msg: strings.TrimPrefix(err.Error(), "toml: ")}
		if m := lastKeyRE.FindStringSubmatch(err.Error()); m != nil {
			e.Key, e.Msg = m[1], m[2]
			e.Line = lineOf(data, strings.Split(m[1], "."))
		}
		return nil, e
	}
	if u := md.Undecoded(); len(u) > 0 {
		k := u[0]
		return nil, &Error{Path: path, Line: lineOf(data, k), Key: k.String(), Msg: "unknown key (" + knownKeys(k) + ")"}
	}
	if err := f.check(); err != nil {
		err.Path = path
		err.Line = lineOf(data, strings.Split(err.Key, "."))
		return nil, err
	}
	return &f, nil
}

func knownKeys(k toml.Key) string {
	switch {
	case len(k) == 1:
		return "the top-level keys are provider, model, base_url, session_db and the tables [permissions], [sandbox], [mcp.servers.NAME]"
	case k[0] == "permissions":
		return "[permissions] takes allow, ask and deny"
	case k[0] == "sandbox":
		return "[sandbox] takes mode, network and require"
	case k[0] == "mcp" && len(k) == 2:
		return "[mcp] takes servers.NAME tables"
	case k[0] == "mcp":
		return "an MCP server takes command, args, env, cwd, url, headers, timeout and per_session"
	}
	return "see the README's configuration section"
}

// check validates values the TOML types cannot.
func (f *File) check() *Error {
	switch f.Provider {
	case "", "anthropic", "openai":
	default:
		return &Error{Key: "provider", Msg: fmt.Sprintf("must be anthropic or openai, not %q", f.Provider)}
	}
	if f.Sandbox.Mode != "" && !validMode(f.Sandbox.Mode) {
		return &Error{Key: "sandbox.mode", Msg: fmt.Sprintf("must be %s, not %q", strings.Join(SandboxModes, ", "), f.Sandbox.Mode)}
	}
	for _, l := range []struct {
		key   string
		rules []Rule
	}{{"permissions.allow", f.Permissions.Allow}, {"permissions.ask", f.Permissions.Ask}, {"permissions.deny", f.Permissions.Deny}} {
		for _, r := range l.rules {
			if _, err := permission.ParsePattern(r.Pattern); err != nil {
				return &Error{Key: l.key, Msg: err.Error()}
			}
		}
	}
	for name, s := range f.MCP.Servers {
		if (s.Command == "") == (s.URL == "") {
			return &Error{Key: "mcp.servers." + name, Msg: "give either command (a server to start) or url (a server to reach)"}
		}
	}
	return nil
}

func validMode(m string) bool {
	for _, v := range SandboxModes {
		if m == v {
			return true
		}
	}
	return false
}

// lineOf finds the line that sets key: a [table] header naming it, or an
// assignment of its last part (bare, quoted or dotted) under the table
// holding it. It returns 0 when it cannot tell.
func lineOf(data []byte, key []string) int {
	if len(key) == 0 {
		return 0
	}
	table := ""
	lines := strings.Split(string(data), "\n")
	for i, raw := range lines {
		l := strings.TrimSpace(raw)
		if strings.HasPrefix(l, "[") {
			h := strings.Trim(l, "[] \t")
			if j := strings.Index(h, "]"); j >= 0 {
				h = h[:j]
			}
			table = strings.ReplaceAll(h, " ", "")
			if table == strings.Join(key, ".") {
				return i + 1
			}
			continue
		}
		name, _, ok := strings.Cut(l, "=")
		if !ok {
			continue
		}
		full := strings.ReplaceAll(strings.Trim(strings.TrimSpace(name), `"'`), " ", "")
		if table != "" {
			full = table + "." + full
		}
		if full == strings.Join(key, ".") || strings.HasPrefix(strings.Join(key, "."), full+".") {
			return i + 1
		}
	}
	return 0
}
