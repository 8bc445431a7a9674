package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/mcp"
)

// mcpFile is the part of a config file --mcp-config reads: the
// [mcp.servers.NAME] tables.
type mcpFile struct {
	MCP struct {
		Servers map[string]struct {
			Command string            `toml:"command"`
			Args    []string          `toml:"args"`
			Env     map[string]string `toml:"env"`
			Cwd     string            `toml:"cwd"`
			URL     string            `toml:"url"`
			Headers map[string]string `toml:"headers"`
			// Transport is stdio, http or sse; it is rarely needed.
			Transport string `toml:"transport"`
			Timeout   string `toml:"timeout"`
		} `toml:"servers"`
	} `toml:"mcp"`
}

// loadMCPConfig reads the MCP servers of a config file. A file that does
// not parse, a key it does not know or a server that cannot work is a
// usage error naming the file.
func loadMCPConfig(path string) ([]mcp.ServerConfig, error) {
	var f mcpFile
	md, err := toml.DecodeFile(path, &f)
	if err != nil {
		return nil, usagef("--mcp-config %s: %v", path, err)
	}
	if un := md.Undecoded(); len(un) > 0 {
		keys := make([]string, len(un))
		for i, k := range un {
			keys[i] = k.String()
		}
		return nil, usagef("--mcp-config %s: unknown key(s) %s; an MCP server takes command, args, env, cwd, url, headers, transport and timeout under [mcp.servers.NAME]", path, strings.Join(keys, ", "))
	}
	names := make([]string, 0, len(f.MCP.Servers))
	for n := range f.MCP.Servers {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []mcp.ServerConfig
	for _, n := range names {
		s := f.MCP.Servers[n]
		c := mcp.ServerConfig{Name: n, Command: s.Command, Args: s.Args, Env: s.Env, Dir: s.Cwd, URL: s.URL, Headers: s.Headers, Transport: s.Transport}
		if s.Timeout != "" {
			d, err := time.ParseDuration(s.Timeout)
			if err != nil {
				return nil, usagef("--mcp-config %s: [mcp.servers.%s] timeout %q: use a duration such as \"30s\"", path, n, s.Timeout)
			}
			c.Timeout = d
		}
		out = append(out, c)
	}
	if err := mcp.CheckAll(out); err != nil {
		return nil, usagef("--mcp-config %s: %v", path, err)
	}
	if len(out) == 0 {
		return nil, usagef("--mcp-config %s has no [mcp.servers.NAME] table", path)
	}
	return out, nil
}

// reportMCP waits for the servers' start and tells the user about those
// that failed; the agent goes on without them.
func reportMCP(ctx context.Context, a *liteagent.Agent, stderr io.Writer) {
	set, err := a.MCP(ctx)
	if set == nil || err != nil {
		return
	}
	for _, err := range set.Failed() {
		fmt.Fprintf(stderr, "lite-agent: %s; going on without it (--mcp shows the servers)\n", oneLine(err.Error()))
	}
}

// listMCP is --mcp: start the configured servers, print each with its
// state and what it offers, and stop them.
func listMCP(ctx context.Context, c *config, std IO) error {
	if len(c.mcpServers) == 0 {
		return usagef("--mcp: no MCP servers are configured (give --mcp-config FILE)")
	}
	e, err := newAgent(ctx, c, "", false, false)
	if err != nil {
		return err
	}
	defer e.close()
	set, err := e.agent.MCP(ctx)
	if err != nil {
		return err
	}
	failed := printMCP(std.Stdout, set)
	if failed > 0 {
		return fmt.Errorf("%d of %d MCP servers did not start", failed, len(set.Servers()))
	}
	return nil
}

// printMCP writes the servers' status and returns how many failed. The
// line mode's /mcp and --mcp share it.
func printMCP(w io.Writer, set *mcp.Set) (failed int) {
	if set == nil {
		fmt.Fprintln(w, "no MCP servers are configured (give --mcp-config FILE)")
		return 0
	}
	return mcp.WriteStatus(w, set.Servers())
}

// mcpPrompt turns a /mcp__server__prompt line into the prompt to send.
func mcpPrompt(ctx context.Context, a *liteagent.Agent, line string) (string, error) {
	command, args, _ := strings.Cut(strings.TrimPrefix(line, "/"), " ")
	set, err := a.MCP(ctx)
	if err != nil {
		return "", err
	}
	if set == nil {
		return "", errors.New("no MCP servers are configured (give --mcp-config FILE)")
	}
	return set.GetPrompt(ctx, command, args)
}
