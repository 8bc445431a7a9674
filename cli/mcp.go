package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	liteagent "github.com/lite-agent/lite-agent"
	configfile "github.com/lite-agent/lite-agent/config"
	"github.com/lite-agent/lite-agent/mcp"
)

// loadMCPConfig reads the [mcp.servers.NAME] tables of a config file
// (the shared configuration format of package config). A file that is
// missing or does not parse, a key it does not know or a server that
// cannot work is a usage error naming the file.
func loadMCPConfig(path string) ([]mcp.ServerConfig, error) {
	f, err := configfile.Read(path)
	if err != nil {
		return nil, usagef("--mcp-config: %v", err)
	}
	if f == nil {
		return nil, usagef("--mcp-config %s: no such file", path)
	}
	out := mcpServers(f.MCP.Servers)
	if err := mcp.CheckAll(out); err != nil {
		return nil, usagef("--mcp-config %s: %v", path, err)
	}
	if len(out) == 0 {
		return nil, usagef("--mcp-config %s has no [mcp.servers.NAME] table", path)
	}
	return out, nil
}

// settingsMCPServers is the [mcp.servers.NAME] tables of the user and
// project configuration files (a project server replaces a user one of
// the same name), checked; a server that cannot work is a usage error
// naming the file it came from.
func settingsMCPServers(s *configfile.Config) ([]mcp.ServerConfig, error) {
	plain := make(map[string]configfile.MCPServer, len(s.Servers))
	for name, srv := range s.Servers {
		plain[name] = srv.MCPServer
	}
	out := mcpServers(plain)
	for _, sc := range out {
		if err := sc.Check(); err != nil {
			return nil, usagef("config %s: %v", s.Servers[sc.Name].Source.Path, err)
		}
	}
	return out, nil
}

// mergeMCPServers is base with the servers of over added, each replacing
// one of base of the same name.
func mergeMCPServers(base, over []mcp.ServerConfig) []mcp.ServerConfig {
	out := slices.DeleteFunc(slices.Clone(base), func(b mcp.ServerConfig) bool {
		return slices.ContainsFunc(over, func(o mcp.ServerConfig) bool { return o.Name == b.Name })
	})
	return append(out, over...)
}

// mcpServers maps the config file's servers to the MCP client's, sorted
// by name.
func mcpServers(servers map[string]configfile.MCPServer) []mcp.ServerConfig {
	names := make([]string, 0, len(servers))
	for n := range servers {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]mcp.ServerConfig, 0, len(names))
	for _, n := range names {
		s := servers[n]
		out = append(out, mcp.ServerConfig{Name: n, Command: s.Command, Args: s.Args, Env: s.Env, Dir: s.Cwd, URL: s.URL, Headers: s.Headers, Timeout: s.Timeout.Duration, PerSession: s.PerSession})
	}
	return out
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
		return usagef("--mcp: no MCP servers are configured (add [mcp.servers.NAME] to a config file, or give --mcp-config FILE)")
	}
	e, err := newAgent(ctx, c, "", false, false)
	if err != nil {
		return err
	}
	defer e.close()
	sets, err := e.agent.MCPSets(ctx)
	if err != nil {
		return err
	}
	if failed, n := printMCP(std.Stdout, sets); failed > 0 {
		return fmt.Errorf("%d of %d MCP servers did not start", failed, n)
	}
	return nil
}

// printMCP writes the servers' status (the shared ones, then the
// session's own) and returns how many failed of how many. The line mode's
// /mcp and --mcp share it.
func printMCP(w io.Writer, sets []*mcp.Set) (failed, n int) {
	var all []mcp.ServerStatus
	for _, set := range sets {
		all = append(all, set.Servers()...)
	}
	if len(all) == 0 {
		fmt.Fprintln(w, "no MCP servers are configured (add [mcp.servers.NAME] to a config file, or give --mcp-config FILE)")
		return 0, 0
	}
	return mcp.WriteStatus(w, all), len(all)
}

// mcpPrompt turns a /mcp__server__prompt line into the prompt to send.
func mcpPrompt(ctx context.Context, a *liteagent.Agent, line string) (string, error) {
	command, args, _ := strings.Cut(strings.TrimPrefix(line, "/"), " ")
	sets, err := a.MCPSets(ctx)
	if err != nil {
		return "", err
	}
	if len(sets) == 0 {
		return "", errors.New("no MCP servers are configured (add [mcp.servers.NAME] to a config file, or give --mcp-config FILE)")
	}
	return mcp.GetPromptIn(ctx, sets, command, args)
}
