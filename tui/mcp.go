package tui

import (
	"context"
	"errors"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/lite-agent/lite-agent/mcp"
)

// mcpStatus is /mcp: the servers, their state, tools and prompts, shown
// once their start is over.
func (m *model) mcpStatus() tea.Cmd {
	a := m.agent
	return m.do("starting the MCP servers", func(ctx context.Context) func(*model) tea.Cmd {
		sets, err := a.MCPSets(ctx)
		if err != nil {
			return failed("/mcp", err)
		}
		if len(sets) == 0 {
			return func(m *model) tea.Cmd {
				m.tr.notice("no MCP servers are configured (give --mcp-config FILE)")
				return nil
			}
		}
		var all []mcp.ServerStatus
		for _, set := range sets {
			all = append(all, set.Servers()...)
		}
		var b strings.Builder
		mcp.WriteStatus(&b, all)
		text := strings.TrimRight(b.String(), "\n")
		return func(m *model) tea.Cmd { m.tr.notice(text); return nil }
	})
}

// mcpPrompt is /mcp__server__prompt ARGS: the server fills in its prompt,
// which is then sent as if typed.
func (m *model) mcpPrompt(line string) tea.Cmd {
	a := m.agent
	command, args, _ := strings.Cut(strings.TrimPrefix(line, "/"), " ")
	return m.do("getting the MCP prompt", func(ctx context.Context) func(*model) tea.Cmd {
		sets, err := a.MCPSets(ctx)
		if err == nil && len(sets) == 0 {
			err = errors.New("no MCP servers are configured (give --mcp-config FILE)")
		}
		var text string
		if err == nil {
			text, err = mcp.GetPromptIn(ctx, sets, command, args)
		}
		if err != nil {
			return failed("/"+command, err)
		}
		return func(m *model) tea.Cmd { return m.startTurn(text) }
	})
}
