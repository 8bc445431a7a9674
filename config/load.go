package config

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Levels a value can come from, lowest precedence first.
const (
	LevelDefault = "default"
	LevelUser    = "user"
	LevelProject = "project"
	LevelFlag    = "flag"
)

// Source says where a value came from: a level, and the file for the user
// and project levels.
type Source struct {
	Level string
	Path  string
}

func (s Source) String() string {
	if s.Path != "" {
		return s.Level + " " + s.Path
	}
	return s.Level
}

// Value is one merged setting and where it came from. Set is false for a
// value nobody gave.
type Value struct {
	Value  string
	Source Source
	Set    bool
}

// SourcedRule is a permission rule with its list ("allow", "ask" or
// "deny") and where it came from.
type SourcedRule struct {
	Rule
	List   string
	Source Source
}

// SourcedServer is an MCP server with where it came from.
type SourcedServer struct {
	MCPServer
	Source Source
}

// Config is the merged configuration.
type Config struct {
	Provider, Model, BaseURL, SessionDB Value
	SandboxMode, SandboxNetwork         Value
	SandboxRequire                      Value
	NoStream                            Value // "true" or "false" when set
	// Rules from every level, user first, then project, then flags.
	Rules []SourcedRule
	// Servers by name; a project server replaces a user one of that name.
	Servers map[string]SourcedServer
	// UserFile and ProjectFile are the files looked at ("" for none found
	// at the project level); Read says which ones existed.
	UserFile, ProjectFile string
	Read                  []string
}

// Options tunes Load. The zero value (or nil) reads the user's file from
// $XDG_CONFIG_HOME (or ~/.config).
type Options struct {
	// UserFile overrides the user file's path; "-" reads none.
	UserFile string
}

// UserFile returns the user-level configuration file's path.
func UserFile() string {
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "lite-agent", "config.toml")
}

// ProjectFile returns the nearest .lite-agent/config.toml from workdir up
// to the repository root (the first directory holding .git), or the path
// it would have in workdir when there is none. Outside a repository only
// workdir itself is looked at.
func ProjectFile(workdir string) string {
	abs, err := filepath.Abs(workdir)
	if err != nil {
		abs = workdir
	}
	own := filepath.Join(abs, ".lite-agent", "config.toml")
	if root := repoRoot(abs); root != "" {
		for dir := abs; ; dir = filepath.Dir(dir) {
			p := filepath.Join(dir, ".lite-agent", "config.toml")
			if _, err := os.Stat(p); err == nil {
				return p
			}
			if dir == root || dir == filepath.Dir(dir) {
				break
			}
		}
	}
	return own
}

func repoRoot(dir string) string {
	for {
		if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			return ""
		}
		dir = up
	}
}

// Load reads the user file and the project file for workdir and merges
// them. Missing files are fine; a bad one is an *Error.
func Load(workdir string, opts *Options) (*Config, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	c := &Config{Servers: map[string]SourcedServer{}}
	c.UserFile = o.UserFile
	if c.UserFile == "" {
		c.UserFile = UserFile()
	}
	if c.UserFile == "-" {
		c.UserFile = ""
	}
	c.ProjectFile = ProjectFile(workdir)
	for _, lv := range []Source{{LevelUser, c.UserFile}, {LevelProject, c.ProjectFile}} {
		if lv.Path == "" {
			continue
		}
		f, err := Read(lv.Path)
		if err != nil {
			return nil, err
		}
		if f == nil {
			continue
		}
		c.Read = append(c.Read, lv.Path)
		c.apply(f, lv)
	}
	return c, nil
}

// apply lays f over c.
func (c *Config) apply(f *File, src Source) {
	c.SetString(&c.Provider, f.Provider, src)
	c.SetString(&c.Model, f.Model, src)
	c.SetString(&c.BaseURL, f.BaseURL, src)
	c.SetString(&c.SessionDB, f.SessionDB, src)
	c.SetString(&c.SandboxMode, f.Sandbox.Mode, src)
	if f.Sandbox.Network != nil {
		c.SetString(&c.SandboxNetwork, strconv.FormatBool(*f.Sandbox.Network), src)
	}
	if f.NoStream != nil {
		c.SetString(&c.NoStream, strconv.FormatBool(*f.NoStream), src)
	}
	if f.Sandbox.Require != nil {
		c.SetString(&c.SandboxRequire, strconv.FormatBool(*f.Sandbox.Require), src)
	}
	for _, l := range []struct {
		name  string
		rules []Rule
	}{{"allow", f.Permissions.Allow}, {"ask", f.Permissions.Ask}, {"deny", f.Permissions.Deny}} {
		for _, r := range l.rules {
			c.Rules = append(c.Rules, SourcedRule{Rule: r, List: l.name, Source: src})
		}
	}
	for name, s := range f.MCP.Servers {
		c.Servers[name] = SourcedServer{MCPServer: s, Source: src}
	}
}

// SetString sets *v to s from src, unless s is empty.
func (c *Config) SetString(v *Value, s string, src Source) {
	if s != "" {
		*v = Value{Value: s, Source: src, Set: true}
	}
}

// Print writes the merged configuration, one setting a line with where it
// came from, in TOML a user can copy into a file.
func (c *Config) Print(w io.Writer) {
	fmt.Fprintf(w, "# user file:    %s%s\n", c.UserFile, missing(c, c.UserFile))
	fmt.Fprintf(w, "# project file: %s%s\n", c.ProjectFile, missing(c, c.ProjectFile))
	for _, kv := range []struct {
		key string
		v   Value
	}{{"provider", c.Provider}, {"model", c.Model}, {"base_url", c.BaseURL}, {"session_db", c.SessionDB}} {
		printValue(w, kv.key, kv.v, true)
	}
	printValue(w, "no_stream", c.NoStream, false)
	fmt.Fprintln(w, "\n[permissions]")
	for _, list := range []string{"allow", "ask", "deny"} {
		fmt.Fprintf(w, "%s = [\n", list)
		for _, r := range c.Rules {
			if r.List != list {
				continue
			}
			item := strconv.Quote(r.Pattern)
			if r.Reason != "" {
				item = fmt.Sprintf("{ pattern = %s, reason = %s }", item, strconv.Quote(r.Reason))
			}
			fmt.Fprintf(w, "  %s, # %s\n", item, r.Source)
		}
		fmt.Fprintln(w, "]")
	}
	fmt.Fprintln(w, "\n[sandbox]")
	printValue(w, "mode", c.SandboxMode, true)
	printValue(w, "network", c.SandboxNetwork, false)
	printValue(w, "require", c.SandboxRequire, false)
	names := make([]string, 0, len(c.Servers))
	for n := range c.Servers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		s := c.Servers[n]
		fmt.Fprintf(w, "\n[mcp.servers.%s] # %s\n", strconv.Quote(n), s.Source)
		if s.Command != "" {
			fmt.Fprintf(w, "command = %s\n", strconv.Quote(s.Command))
		}
		if len(s.Args) > 0 {
			q := make([]string, len(s.Args))
			for i, a := range s.Args {
				q[i] = strconv.Quote(a)
			}
			fmt.Fprintf(w, "args = [%s]\n", strings.Join(q, ", "))
		}
		if s.URL != "" {
			fmt.Fprintf(w, "url = %s\n", strconv.Quote(s.URL))
		}
		if s.Cwd != "" {
			fmt.Fprintf(w, "cwd = %s\n", strconv.Quote(s.Cwd))
		}
		if s.PerSession {
			fmt.Fprintln(w, "per_session = true")
		}
		// Env and header values may be secrets: only their names are shown.
		for _, m := range []struct {
			key string
			m   map[string]string
		}{{"env", s.Env}, {"headers", s.Headers}} {
			if len(m.m) > 0 {
				keys := make([]string, 0, len(m.m))
				for k := range m.m {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				fmt.Fprintf(w, "# %s: %s (values hidden)\n", m.key, strings.Join(keys, ", "))
			}
		}
		if s.Timeout.Duration > 0 {
			fmt.Fprintf(w, "timeout = %q\n", s.Timeout.String())
		}
	}
}

func missing(c *Config, path string) string {
	if path == "" {
		return "(none)"
	}
	for _, r := range c.Read {
		if r == path {
			return ""
		}
	}
	return " (not present)"
}

func printValue(w io.Writer, key string, v Value, quote bool) {
	if !v.Set {
		fmt.Fprintf(w, "# %s is not set\n", key)
		return
	}
	val := v.Value
	if quote {
		val = strconv.Quote(val)
	}
	fmt.Fprintf(w, "%s = %s # %s\n", key, val, v.Source)
}
