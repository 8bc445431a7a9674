package liteagent

import (
	"context"
	"fmt"
	"slices"

	"github.com/lite-agent/lite-agent/mcp"
	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/session"
	"github.com/lite-agent/lite-agent/tool"
)

// mcpServers is a set of MCP servers started in the background, in
// parallel, so that the first prompt does not wait for more than the
// slowest start: the agent's shared servers (started by New, closed by
// Agent.Close) or a session's own (mcp.ServerConfig.PerSession: started
// with the Session, closed by Session.Close). Nil means there are none.
type mcpServers struct {
	ready chan struct{} // closed when Start has returned
	set   *mcp.Set      // set before ready is closed
}

// startServers starts those of configs whose PerSession is perSession;
// ctx ends their start early.
func startServers(ctx context.Context, configs []mcp.ServerConfig, opts *mcp.Options, perSession bool) *mcpServers {
	var mine []mcp.ServerConfig
	for _, c := range configs {
		if c.PerSession == perSession {
			mine = append(mine, c)
		}
	}
	if len(mine) == 0 {
		return nil
	}
	m := &mcpServers{ready: make(chan struct{})}
	go func() {
		m.set = mcp.Start(ctx, mine, opts)
		close(m.ready)
	}()
	return m
}

// wait returns the set once each server is ready or has failed, nil when
// there are none (m is nil), or ctx's error.
func (m *mcpServers) wait(ctx context.Context) (*mcp.Set, error) {
	if m == nil {
		return nil, nil
	}
	select {
	case <-m.ready:
		return m.set, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// close stops the servers, waiting for a start still under way (the
// caller has cancelled it).
func (m *mcpServers) close() error {
	if m == nil {
		return nil
	}
	<-m.ready
	if err := m.set.Close(); err != nil {
		return fmt.Errorf("stop mcp servers: %w", err)
	}
	return nil
}

// startMCP starts the shared servers; ctx ends their start early.
func (a *Agent) startMCP(ctx context.Context) {
	a.mcp = startServers(ctx, a.opts.MCPServers, a.opts.MCPOptions, false)
}

// MCP returns the agent's shared MCP servers once each is ready or has
// failed (see mcp.Set.Servers for their state, Failed for why), or nil
// when Options.MCPServers has none. It waits for the servers' start, or
// ctx. The servers each Session runs for itself are Session.MCP's.
func (a *Agent) MCP(ctx context.Context) (*mcp.Set, error) {
	return a.mcp.wait(ctx)
}

// MCP returns the MCP servers the session runs for itself (those whose
// config sets PerSession), once each is ready or has failed, or nil when
// there are none. They started with the Session and stop with its Close.
func (s *Session) MCP(ctx context.Context) (*mcp.Set, error) {
	return s.mcp.wait(ctx)
}

// MCPSets returns the MCP servers the agent's current session uses: the
// shared ones (MCP), then the session's own (Session.MCP, starting a
// current session, which writes nothing, when there is none and some
// server is per session). Sets that would be empty are left out. It waits
// for the servers' start, or ctx.
func (a *Agent) MCPSets(ctx context.Context) ([]*mcp.Set, error) {
	var out []*mcp.Set
	shared, err := a.MCP(ctx)
	if err != nil {
		return nil, err
	}
	if shared != nil {
		out = append(out, shared)
	}
	if !slices.ContainsFunc(a.opts.MCPServers, func(c mcp.ServerConfig) bool { return c.PerSession }) {
		return out, nil
	}
	s, err := a.current(true)
	if err != nil {
		return nil, err
	}
	own, err := s.MCP(ctx)
	if err != nil {
		return nil, err
	}
	if own != nil {
		out = append(out, own)
	}
	return out, nil
}

// syncMCPTools makes the tools of the MCP servers, the agent's and the
// session's own, as they list them now (tools/list_changed is honoured
// here, before each model call), part of the tools the session offers the
// model. The caller holds the session's turn. A server whose listing fails
// keeps its previous tools.
func (s *Session) syncMCPTools(ctx context.Context) error {
	var remote []tool.Tool
	for _, m := range []*mcpServers{s.a.mcp, s.mcp} {
		set, err := m.wait(ctx)
		if err != nil {
			return err
		}
		if set != nil {
			ts, _ := set.Tools(ctx)
			remote = append(remote, ts...)
		}
	}
	if s.a.mcp == nil && s.mcp == nil {
		return nil
	}
	tools := make(map[string]tool.Tool, len(s.baseTools)+len(remote))
	specs := make([]provider.ToolSpec, 0, len(s.baseTools)+len(remote))
	for _, t := range s.baseTools {
		tools[t.Spec().Name] = t
		specs = append(specs, specOf(t))
	}
	for _, t := range remote {
		name := t.Spec().Name
		if _, dup := tools[name]; dup {
			continue // an agent tool keeps its name
		}
		tools[name] = t
		specs = append(specs, specOf(t))
	}
	s.tools, s.specs = tools, specs
	return nil
}

func specOf(t tool.Tool) provider.ToolSpec {
	s := t.Spec()
	return provider.ToolSpec{Name: s.Name, Description: s.Description, InputSchema: s.InputSchema}
}

// closeMCP stops the shared servers, waiting for a start still under way
// (Close has cancelled it).
func (a *Agent) closeMCP() error { return a.mcp.close() }

// toSessionImages keeps a tool's images in the log's form.
func toSessionImages(in []tool.Image) []session.Image {
	if len(in) == 0 {
		return nil
	}
	out := make([]session.Image, len(in))
	for i, im := range in {
		out[i] = session.Image{MediaType: im.MediaType, Data: im.Data}
	}
	return out
}
