package mcp

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/lite-agent/lite-agent/tool"
)

// Options tunes a Set; nil gives the defaults.
type Options struct {
	// StartTimeout bounds each server's start when its config gives no
	// Timeout (default 30s).
	StartTimeout time.Duration
	// StopGrace is how long Close waits after closing a stdio server's
	// stdin before SIGTERM, and after SIGTERM before SIGKILL (default 2s).
	StopGrace time.Duration
}

// Set is the MCP servers of one agent. Its methods are safe for concurrent
// use.
type Set struct {
	servers []*server
	closeMu sync.Mutex
	closed  bool
}

// ServerStatus is what a client shows about one server.
type ServerStatus struct {
	Name      string
	Target    string // "command …" or "url …"
	Transport string // stdio, http or sse ("" before it is known)
	State     State
	// Err says why a server is failed: its name, command or URL, what went
	// wrong, and the end of its stderr.
	Err       error
	Tools     []string // the tools' names as the model sees them
	Prompts   []string // the prompts' slash commands, without the slash
	Resources bool     // the server offers resources (mcp_read_resource)
	PID       int      // a stdio server's process id (its process group)
	// ToolListChanges counts the tools/list_changed notifications the
	// server sent, ToolListings the times its tools were listed: a change
	// is listed again at the next turn or model call.
	ToolListChanges, ToolListings int64
}

// Start starts every server at once and returns when each is ready or has
// failed (its own Timeout, or opts.StartTimeout, bounds it; so does ctx).
// A config that does not pass Check is a failed server, like one that does
// not start: Start never fails as a whole. Close the Set to stop them.
func Start(ctx context.Context, servers []ServerConfig, opts *Options) *Set {
	o := Options{StartTimeout: 30 * time.Second, StopGrace: 2 * time.Second}
	if opts != nil {
		if opts.StartTimeout > 0 {
			o.StartTimeout = opts.StartTimeout
		}
		if opts.StopGrace > 0 {
			o.StopGrace = opts.StopGrace
		}
	}
	set := &Set{}
	seen := map[string]bool{}
	var wg sync.WaitGroup
	for _, c := range servers {
		s := &server{cfg: c, opts: o, state: StateStarting}
		s.life, s.endLife = context.WithCancel(context.WithoutCancel(ctx))
		set.servers = append(set.servers, s)
		err := c.Check()
		if err == nil && seen[c.Name] {
			err = errors.New("two mcp servers are named " + c.Name + "; this one was not started")
		}
		seen[c.Name] = true
		if err != nil {
			s.state, s.err = StateFailed, err
			continue
		}
		wg.Go(func() { s.start(ctx) })
	}
	wg.Wait()
	return set
}

// Servers returns the status of every configured server, in config order.
func (s *Set) Servers() []ServerStatus {
	out := make([]ServerStatus, 0, len(s.servers))
	for _, srv := range s.servers {
		srv.mu.Lock()
		st := ServerStatus{Name: srv.cfg.Name, Target: srv.cfg.describe(), Transport: srv.transport, State: srv.state, Err: srv.err, Resources: srv.resources && srv.cs != nil,
			ToolListChanges: srv.toolChanges.Load(), ToolListings: srv.toolListings.Load()}
		if srv.cs != nil {
			st.Tools = toolNames(srv.cfg.Name, srv.tools)
			for _, p := range srv.prompts {
				st.Prompts = append(st.Prompts, ToolName(srv.cfg.Name, p.Name))
			}
		}
		if srv.proc != nil {
			st.PID = srv.proc.pid()
		}
		srv.mu.Unlock()
		out = append(out, st)
	}
	return out
}

// Failed returns the errors of the servers that are not running, for a
// client to report once.
func (s *Set) Failed() []error {
	var errs []error
	for _, st := range s.Servers() {
		if st.State == StateFailed && st.Err != nil {
			errs = append(errs, st.Err)
		}
	}
	return errs
}

// Tools returns the tools of every ready server, after listing again those
// whose list changed (tools/list_changed), plus mcp_read_resource when a
// server offers resources. A server whose listing fails keeps its previous
// tools; the error is returned beside the tools.
func (s *Set) Tools(ctx context.Context) ([]tool.Tool, error) {
	var out []tool.Tool
	var errs []error
	names := map[string]bool{}
	resources := false
	for _, srv := range s.servers {
		if err := srv.refresh(ctx); err != nil {
			errs = append(errs, err)
		}
		srv.mu.Lock()
		if srv.cs != nil {
			resources = resources || srv.resources
			for _, t := range srv.tools {
				rt := newRemoteTool(srv, t)
				if names[rt.spec.Name] {
					continue // two remote names that differ only in characters the model APIs refuse
				}
				names[rt.spec.Name] = true
				out = append(out, rt)
			}
		}
		srv.mu.Unlock()
	}
	if resources {
		out = append(out, &resourceTool{set: s})
	}
	return out, errors.Join(errs...)
}

// server returns the server named name, nil if there is none.
func (s *Set) server(name string) *server {
	i := slices.IndexFunc(s.servers, func(srv *server) bool { return srv.cfg.Name == name })
	if i < 0 {
		return nil
	}
	return s.servers[i]
}

// Close stops every server, stdio servers with their whole process group,
// and returns when none of their processes is left. It is safe to call
// more than once.
func (s *Set) Close() error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var wg sync.WaitGroup
	errs := make([]error, len(s.servers))
	for i, srv := range s.servers {
		wg.Go(func() { errs[i] = srv.close() })
	}
	wg.Wait()
	return errors.Join(errs...)
}
