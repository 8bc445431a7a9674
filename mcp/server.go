package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// State is where a server is in its life.
type State string

// States of a server.
const (
	StateStarting State = "starting"
	StateReady    State = "ready"
	StateFailed   State = "failed" // it did not start, or it stopped by itself
	StateClosed   State = "closed" // Close stopped it
)

// server is one configured server and its connection.
type server struct {
	cfg  ServerConfig
	opts Options

	toolsStale   atomic.Bool // tools/list_changed arrived since the last listing
	promptsStale atomic.Bool
	toolChanges  atomic.Int64 // tools/list_changed notifications received
	toolListings atomic.Int64 // tools/list fetches made

	life    context.Context // ends when the server is closed
	endLife context.CancelFunc

	mu        sync.Mutex // guards the fields below
	state     State
	err       error
	transport string // stdio, http or sse
	cs        *sdk.ClientSession
	proc      *process
	tools     []*sdk.Tool
	prompts   []*sdk.Prompt
	resources bool // the server offers resources
	closing   bool
}

func (s *server) client() *sdk.Client {
	return sdk.NewClient(&sdk.Implementation{Name: "lite-agent", Version: "1"}, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			s.toolChanges.Add(1)
			s.toolsStale.Store(true)
		},
		PromptListChangedHandler: func(context.Context, *sdk.PromptListChangedRequest) { s.promptsStale.Store(true) },
	})
}

// start connects to the server and lists what it offers, within the
// server's timeout. A failure is kept in s.err, phrased for the user.
func (s *server) start(ctx context.Context) {
	timeout := s.cfg.Timeout
	if timeout == 0 {
		timeout = s.opts.StartTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ctx, abort := context.WithCancelCause(ctx)
	defer abort(nil)
	cs, err := s.connect(ctx, abort)
	if err == nil {
		err = s.list(ctx, cs, true, true)
		if err != nil {
			cs.Close()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		var garbage *garbageError
		switch {
		case errors.As(context.Cause(ctx), &garbage):
			err = garbage
		case errors.Is(context.Cause(ctx), context.DeadlineExceeded):
			err = fmt.Errorf("%w within %s", errNoAnswer, timeout)
		}
		s.fail(err)
		return
	}
	s.cs, s.state = cs, StateReady
	go s.watch(cs)
}

// fail records a failed start with what the server wrote to stderr.
// Called with s.mu held.
func (s *server) fail(err error) {
	if p := s.proc; p != nil {
		var garbage *garbageError
		if exitErr, ok := p.exitedAfter(100 * time.Millisecond); ok && !errors.Is(err, errNoAnswer) && !errors.As(err, &garbage) {
			err = fmt.Errorf("the server exited during start (%v)", exitErr)
		}
		p.stop()
		p.settleStderr()
		if tail := p.stderr(); tail != "" {
			err = fmt.Errorf("%w; its stderr ends: %s", err, tail)
		}
	}
	if s.cfg.URL != "" {
		// HTTP errors quote the URL, whose query may hold a secret.
		err = errors.New(strings.ReplaceAll(err.Error(), s.cfg.URL, strings.TrimPrefix(s.cfg.describe(), "url ")))
	}
	s.state, s.err = StateFailed, fmt.Errorf("mcp server %q (%s): %w", s.cfg.Name, s.cfg.describe(), err)
}

// errNoAnswer is a server that did not answer initialize in time.
var errNoAnswer = errors.New("no answer to initialize")

// garbageError is a server that wrote something that is not JSON-RPC.
type garbageError struct{ line string }

func (e *garbageError) Error() string {
	return fmt.Sprintf("it wrote something that is not JSON-RPC on stdout: %q (a stdio server must write only protocol messages there; logs go to stderr)", e.line)
}

func (s *server) connect(ctx context.Context, abort context.CancelCauseFunc) (*sdk.ClientSession, error) {
	if s.cfg.Command != "" {
		p, err := startProcess(s.cfg, s.opts.StopGrace)
		if err != nil {
			return nil, fmt.Errorf("could not start it: %w", err)
		}
		p.onGarbage = func(line string) { abort(&garbageError{line}) }
		s.mu.Lock()
		s.proc, s.transport = p, "stdio"
		s.mu.Unlock()
		return s.client().Connect(ctx, p.transport(), nil)
	}
	hc := &http.Client{Transport: headers{s.cfg.Headers, http.DefaultTransport}}
	if s.cfg.Transport != "sse" {
		cs, err := s.client().Connect(ctx, &sdk.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: hc, MaxRetries: -1}, nil)
		if err == nil || s.cfg.Transport == "http" || ctx.Err() != nil {
			s.setTransport("http")
			return cs, err
		}
		// An older server may speak only the SSE transport.
		sseCS, sseErr := s.client().Connect(ctx, s.sse(hc), nil)
		if sseErr != nil {
			return nil, fmt.Errorf("streamable HTTP: %w; SSE: %v", err, sseErr)
		}
		s.setTransport("sse")
		return sseCS, nil
	}
	s.setTransport("sse")
	return s.client().Connect(ctx, s.sse(hc), nil)
}

// sse is the SSE transport. Its event stream lives as long as the context
// it is connected with, so that is the server's lifetime, not the start's.
func (s *server) sse(hc *http.Client) sdk.Transport {
	return lifetime{&sdk.SSEClientTransport{Endpoint: s.cfg.URL, HTTPClient: hc}, s.life}
}

// lifetime connects its transport with ctx, whatever the caller's is.
type lifetime struct {
	sdk.Transport
	ctx context.Context
}

func (l lifetime) Connect(context.Context) (sdk.Connection, error) { return l.Transport.Connect(l.ctx) }

func (s *server) setTransport(t string) {
	s.mu.Lock()
	s.transport = t
	s.mu.Unlock()
}

// list fetches the tools and prompts the server offers (those asked for).
func (s *server) list(ctx context.Context, cs *sdk.ClientSession, tools, prompts bool) error {
	caps := cs.InitializeResult().Capabilities
	if caps == nil {
		caps = &sdk.ServerCapabilities{}
	}
	var ts []*sdk.Tool
	var ps []*sdk.Prompt
	if tools && caps.Tools != nil {
		s.toolsStale.Store(false)
		s.toolListings.Add(1)
		for t, err := range cs.Tools(ctx, nil) {
			if err != nil {
				return fmt.Errorf("list its tools: %w", err)
			}
			ts = append(ts, t)
		}
	}
	if prompts && caps.Prompts != nil {
		s.promptsStale.Store(false)
		for p, err := range cs.Prompts(ctx, nil) {
			if err != nil {
				return fmt.Errorf("list its prompts: %w", err)
			}
			ps = append(ps, p)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if tools {
		s.tools = ts
	}
	if prompts {
		s.prompts = ps
	}
	s.resources = caps.Resources != nil
	return nil
}

// refresh lists again what a list_changed notification said is stale.
func (s *server) refresh(ctx context.Context) error {
	cs := s.session()
	if cs == nil {
		return nil
	}
	tools, prompts := s.toolsStale.Load(), s.promptsStale.Load()
	if !tools && !prompts {
		return nil
	}
	// A server that stops answering must not hold up every turn.
	timeout := s.cfg.Timeout
	if timeout == 0 {
		timeout = s.opts.StartTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := s.list(ctx, cs, tools, prompts); err != nil {
		return fmt.Errorf("mcp server %q: %w", s.cfg.Name, err)
	}
	return nil
}

// watch marks the server failed when its connection ends without Close.
func (s *server) watch(cs *sdk.ClientSession) {
	err := cs.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing || s.cs != cs {
		return
	}
	msg := "the server stopped"
	if p := s.proc; p != nil {
		if exitErr, ok := p.exitedAfter(100 * time.Millisecond); ok {
			msg = fmt.Sprintf("the server exited (%v)", exitErr)
		}
		if tail := p.stderr(); tail != "" {
			msg += "; its stderr ends: " + tail
		}
	} else if err != nil {
		msg += ": " + err.Error()
	}
	s.state, s.cs = StateFailed, nil
	s.err = fmt.Errorf("mcp server %q (%s): %s", s.cfg.Name, s.cfg.describe(), msg)
	go cs.Close()
}

// session returns the live connection, nil when the server is not ready.
func (s *server) session() *sdk.ClientSession {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cs
}

// unavailable says why a call cannot reach the server.
func (s *server) unavailable() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	return fmt.Errorf("mcp server %q is %s", s.cfg.Name, s.state)
}

// close stops the server; it returns when its process has exited.
func (s *server) close() error {
	s.endLife()
	s.mu.Lock()
	s.closing = true
	cs, p := s.cs, s.proc
	s.cs = nil
	if s.state != StateFailed {
		s.state = StateClosed
	}
	s.mu.Unlock()
	var err error
	if cs != nil {
		err = cs.Close()
	}
	if p != nil {
		p.stop()
	}
	if errors.Is(err, sdk.ErrConnectionClosed) {
		err = nil
	}
	return err
}

// headers adds the configured headers to every request.
type headers struct {
	h    map[string]string
	next http.RoundTripper
}

func (h headers) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.h) > 0 {
		r = r.Clone(r.Context())
		for k, v := range h.h {
			r.Header.Set(k, v)
		}
	}
	return h.next.RoundTrip(r)
}

// names of the things a server offers, for status lines.
func toolNames(server string, ts []*sdk.Tool) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = ToolName(server, t.Name)
	}
	return out
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
