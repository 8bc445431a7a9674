package liteagent

import (
	"context"
	"fmt"

	"github.com/lite-agent/lite-agent/mcp"
	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/session"
	"github.com/lite-agent/lite-agent/tool"
)

// mcpServers is the agent's MCP servers: started in the background by New,
// in parallel, so that the first prompt does not wait for more than the
// slowest start; closed by Close.
type mcpServers struct {
	ready chan struct{} // closed when Start has returned; nil without servers
	set   *mcp.Set      // set before ready is closed
}

// startMCP starts the configured servers; ctx ends their start early.
func (a *Agent) startMCP(ctx context.Context) {
	if len(a.opts.MCPServers) == 0 {
		return
	}
	a.mcp.ready = make(chan struct{})
	go func() {
		a.mcp.set = mcp.Start(ctx, a.opts.MCPServers, a.opts.MCPOptions)
		close(a.mcp.ready)
	}()
}

// MCP returns the agent's MCP servers once each is ready or has failed
// (see mcp.Set.Servers for their state, Failed for why), or nil when
// Options.MCPServers is empty. It waits for the servers' start, or ctx.
func (a *Agent) MCP(ctx context.Context) (*mcp.Set, error) {
	if a.mcp.ready == nil {
		return nil, nil
	}
	select {
	case <-a.mcp.ready:
		return a.mcp.set, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// syncMCPTools makes the tools of the MCP servers, as they list them now
// (tools/list_changed is honoured here, before each model call), part of the tools
// the session offers the model. The caller holds the session's turn. A
// server whose listing fails keeps its previous tools.
func (s *Session) syncMCPTools(ctx context.Context) error {
	set, err := s.a.MCP(ctx)
	if set == nil {
		return err
	}
	remote, _ := set.Tools(ctx)
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

// closeMCP stops the servers, waiting for a start still under way (Close
// has cancelled it).
func (a *Agent) closeMCP() error {
	if a.mcp.ready == nil {
		return nil
	}
	<-a.mcp.ready
	if err := a.mcp.set.Close(); err != nil {
		return fmt.Errorf("stop mcp servers: %w", err)
	}
	return nil
}

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
