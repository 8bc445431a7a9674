package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/checkpoint"
)

// Defaults of Options.
const (
	DefaultMaxBodyBytes     = 1 << 20
	DefaultPollInterval     = 250 * time.Millisecond
	DefaultSubscriberBuffer = 512
	DefaultWriteTimeout     = 10 * time.Second
)

// Options configures a Server. Store is required; the rest have defaults.
type Options struct {
	// Store is the checkpointer the agent was built on. The server reads
	// heads from it to follow turns other processes run.
	Store checkpoint.Checkpointer
	// Approvals answers the agent's approval and ask_user calls over HTTP;
	// the agent must have been built with its Approve and Input methods
	// (see Approvals). Nil: nobody can answer them here (the agent's own
	// Approve and Input decide).
	Approvals *Approvals
	// Token is the bearer token every request must carry; "" makes New
	// generate a random one (Server.Token returns it).
	Token string
	// AllowedHosts are Host header values accepted besides the loopback
	// names (127.0.0.1, ::1, localhost, with any port): the names a
	// non-loopback listener is reached by. A host given without a port
	// matches any port.
	AllowedHosts []string
	// CORSOrigins are the origins (scheme://host[:port]) other than the
	// server's own allowed to call the API from a browser; the server
	// answers their preflights and sends CORS headers to them only. Nil:
	// no CORS at all.
	CORSOrigins []string
	// MaxBodyBytes caps request bodies (default DefaultMaxBodyBytes);
	// larger ones are answered with 413.
	MaxBodyBytes int64
	// PollInterval is how often a session's live stream checks the
	// store's head for turns other processes ran (default
	// DefaultPollInterval).
	PollInterval time.Duration
	// SubscriberBuffer is how many updates a stream client may fall behind
	// before it is told to resync from the store (default
	// DefaultSubscriberBuffer).
	SubscriberBuffer int
	// WriteTimeout bounds each write to a stream client; one that does not
	// read for this long is disconnected (default DefaultWriteTimeout).
	WriteTimeout time.Duration
	// Logger receives what the server does by itself: turns ended at
	// shutdown, slow clients dropped. Nil discards it.
	Logger *slog.Logger
}

// Server serves the API, the live streams and the viewer for one Agent.
// Its methods are safe for concurrent use.
type Server struct {
	agent     *liteagent.Agent
	store     checkpoint.Checkpointer
	approvals *Approvals
	opts      Options
	log       *slog.Logger
	handler   http.Handler
	routes    []route
	// crossOrigin refuses cross-site state-changing requests by their
	// Sec-Fetch-Site header (net/http's CSRF protection).
	crossOrigin *http.CrossOriginProtection

	// turnCtx is the parent of every turn's context; cancelling it
	// interrupts them (the hard end of a shutdown).
	turnCtx    context.Context
	stopTurns  context.CancelFunc
	closing    chan struct{} // closed when Shutdown starts
	closeOnce  sync.Once
	turnsWG    sync.WaitGroup
	feeds      feeds
	infos      infoCache
	mu         sync.Mutex
	sessions   map[string]*liveSession
	isShutdown bool
}

// liveSession is a session this server has open, and its running turn.
type liveSession struct {
	s    *liteagent.Session
	turn *turn // nil when no turn of this server runs in it
}

// New returns a server for agent. The agent stays the caller's: close it
// after Shutdown.
func New(agent *liteagent.Agent, opts *Options) (*Server, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if agent == nil {
		return nil, errors.New("server: no agent")
	}
	if o.Store == nil {
		return nil, errors.New("server: Options.Store is required (the checkpointer the agent was built on)")
	}
	if o.Token == "" {
		t, err := NewToken()
		if err != nil {
			return nil, err
		}
		o.Token = t
	}
	if len(o.Token) < 16 {
		return nil, errors.New("server: the token must be at least 16 characters long")
	}
	for _, origin := range o.CORSOrigins {
		if !strings.HasPrefix(origin, "http://") && !strings.HasPrefix(origin, "https://") || strings.HasSuffix(origin, "/") {
			return nil, fmt.Errorf("server: CORS origin %q is not scheme://host[:port]", origin)
		}
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.SubscriberBuffer <= 0 {
		o.SubscriberBuffer = DefaultSubscriberBuffer
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := &Server{agent: agent, store: o.Store, approvals: o.Approvals, opts: o, log: log,
		closing: make(chan struct{}), sessions: map[string]*liveSession{}}
	s.crossOrigin = http.NewCrossOriginProtection()
	s.turnCtx, s.stopTurns = context.WithCancel(context.Background())
	s.feeds = feeds{s: s, m: map[string]*feed{}}
	if s.approvals != nil {
		s.approvals.attach(s.publishQuestion, s.publishApproval, s.store, o.PollInterval, s.log.Info)
	}
	s.routes = s.table()
	mux := http.NewServeMux()
	for _, r := range s.routes {
		mux.HandleFunc(r.method+" "+r.pattern, r.h)
	}
	s.handler = s.guard(mux)
	return s, nil
}

// NewToken returns a random bearer token: 32 bytes from crypto/rand, in hex.
func NewToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("server: make a token: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// Token returns the bearer token requests must carry.
func (s *Server) Token() string { return s.opts.Token }

// ServeHTTP serves the API, the streams and the viewer.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// TurnEnd says how a turn that was running when Shutdown started ended.
type TurnEnd struct {
	Session string
	// Interrupted is set when Shutdown cancelled the turn because it did
	// not finish in time; its log ends with turn_interrupted.
	Interrupted bool
	Head        int64 // the session's head after the turn
	Err         error // the turn's error, nil when it completed
}

// Running returns the ids of the sessions a turn of this server runs in.
func (s *Server) Running() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for id, l := range s.sessions {
		if l.turn != nil {
			out = append(out, id)
		}
	}
	return out
}

// Shutdown stops the server: new prompts are refused (503), live streams
// end, and running turns get until ctx is done to finish; those still
// running then are cancelled, which records turn_interrupted in their
// logs. It waits for every turn to return, closes the sessions it opened,
// logs how each turn ended and returns that. The HTTP listener is the
// caller's to shut down.
func (s *Server) Shutdown(ctx context.Context) []TurnEnd {
	s.closeOnce.Do(func() { close(s.closing) })
	s.mu.Lock()
	s.isShutdown = true
	var turns []*turn
	for _, l := range s.sessions {
		if l.turn != nil {
			turns = append(turns, l.turn)
		}
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.turnsWG.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		for _, t := range turns {
			t.markShutdown()
		}
		s.stopTurns()
		<-done
	}
	var ends []TurnEnd
	for _, t := range turns {
		e := TurnEnd{Session: t.session, Interrupted: t.wasShutdown(), Head: t.head, Err: t.err}
		if e.Interrupted {
			s.log.Info("turn interrupted by shutdown; its log ends with turn_interrupted", "session", e.Session, "head", e.Head)
		} else if e.Err != nil {
			s.log.Info("turn ended with an error during shutdown", "session", e.Session, "head", e.Head, "error", e.Err)
		} else {
			s.log.Info("turn finished during shutdown", "session", e.Session, "head", e.Head)
		}
		ends = append(ends, e)
	}
	s.stopTurns()
	s.mu.Lock()
	open := s.sessions
	s.sessions = map[string]*liveSession{}
	s.mu.Unlock()
	for _, l := range open {
		if l.s != nil {
			l.s.Close()
		}
	}
	return ends
}

// shuttingDown reports whether Shutdown has started.
func (s *Server) shuttingDown() bool {
	select {
	case <-s.closing:
		return true
	default:
		return false
	}
}
