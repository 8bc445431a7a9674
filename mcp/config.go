package mcp

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// ServerConfig describes one MCP server: either a command to run (a stdio
// server) or a URL (a streamable HTTP server, or an SSE server).
type ServerConfig struct {
	// Name identifies the server in tool names (mcp__<Name>__<tool>):
	// letters, digits, '-' and '_', without "__".
	Name string
	// Command and Args run a stdio server; Env is added to lite-agent's own
	// environment and Dir is its working directory ("" the workdir of
	// lite-agent).
	Command string
	Args    []string
	Env     map[string]string
	Dir     string
	// URL is a streamable HTTP (or SSE) endpoint; Headers go with every
	// request (for example Authorization). They are never logged.
	URL     string
	Headers map[string]string
	// Transport is "" (stdio with Command; with URL streamable HTTP, then
	// SSE if that fails), "stdio", "http" or "sse".
	Transport string
	// PerSession gives each Session of an Agent its own copy of the
	// server (its own process or connection, so its own state), started
	// with the Session and stopped by its Close. Otherwise one server,
	// started with the Agent, serves all its Sessions.
	PerSession bool
	// Timeout bounds the start (process start, initialize, the first
	// listings; 0 gives Options.StartTimeout) and, when set, each tool call
	// (0: a call runs until it ends or its turn is cancelled).
	Timeout time.Duration
}

// validName reports whether name is 1 to 40 of A-Z, a-z, 0-9, _ and -.
// (A loop, not a regexp: a package-level regexp is compiled at every
// process start, 0.2 ms for this one under GODEBUG=inittrace=1.)
func validName(name string) bool {
	if len(name) == 0 || len(name) > 40 {
		return false
	}
	for i := range len(name) {
		if !nameByte(name[i]) {
			return false
		}
	}
	return true
}

// nameByte reports whether b may be part of a server's or a tool's name.
func nameByte(b byte) bool {
	return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || b == '_' || b == '-'
}

// Check reports what is wrong with c, if anything.
func (c ServerConfig) Check() error {
	switch {
	case !validName(c.Name) || strings.Contains(c.Name, "__"):
		return fmt.Errorf("mcp server name %q: use 1 to 40 letters, digits, '-' or '_', without \"__\"", c.Name)
	case c.Command == "" && c.URL == "":
		return fmt.Errorf("mcp server %q: give a command (a stdio server) or a url (an HTTP server)", c.Name)
	case c.Command != "" && c.URL != "":
		return fmt.Errorf("mcp server %q: give a command or a url, not both", c.Name)
	case c.Timeout < 0:
		return fmt.Errorf("mcp server %q: negative timeout %s", c.Name, c.Timeout)
	}
	switch c.Transport {
	case "", "stdio", "http", "sse":
	default:
		return fmt.Errorf("mcp server %q: transport %q: use stdio, http or sse", c.Name, c.Transport)
	}
	if (c.Transport == "stdio") != (c.Command != "") && c.Transport != "" {
		return fmt.Errorf("mcp server %q: transport %s needs a %s", c.Name, c.Transport, map[bool]string{true: "command", false: "url"}[c.Transport == "stdio"])
	}
	return nil
}

// CheckAll checks every config and that no two share a name.
func CheckAll(servers []ServerConfig) error {
	seen := map[string]bool{}
	var errs []error
	for _, s := range servers {
		if err := s.Check(); err != nil {
			errs = append(errs, err)
			continue
		}
		if seen[s.Name] {
			errs = append(errs, fmt.Errorf("two mcp servers are named %q", s.Name))
		}
		seen[s.Name] = true
	}
	return errors.Join(errs...)
}

// describe names what runs the server, for messages: its command line or
// its URL (without query, which may hold a secret).
func (c ServerConfig) describe() string {
	if c.Command != "" {
		return "command " + strings.Join(append([]string{c.Command}, c.Args...), " ")
	}
	u := c.URL
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		u = u[:i]
	}
	return "url " + u
}

// ToolName is the name the model sees for a server's tool:
// mcp__<server>__<tool>, with characters model APIs refuse replaced by '_'
// and cut to 64 characters.
func ToolName(server, tool string) string {
	n := "mcp__" + server + "__" + strings.Map(func(r rune) rune {
		if r < 0x80 && nameByte(byte(r)) {
			return r
		}
		return '_'
	}, tool)
	if len(n) > 64 {
		n = n[:64]
	}
	return n
}

// SplitToolName returns the server and the tool of an mcp__server__tool
// name; ok is false for other names.
func SplitToolName(name string) (server, tool string, ok bool) {
	rest, ok := strings.CutPrefix(name, "mcp__")
	if !ok {
		return "", "", false
	}
	server, tool, ok = strings.Cut(rest, "__")
	return server, tool, ok && server != "" && tool != ""
}
