package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/provider"
)

// ServeCommand is the name of the command holding `lite-agent serve`.
const ServeCommand = "lite-agent-serve"

// defaultMaxBody is --max-body's default, the server's own default cap.
const defaultMaxBody = 1 << 20

// Serving is `lite-agent serve`'s HTTP API and web viewer (package server,
// plugged in by package servecmd). It lives in its own command,
// lite-agent-serve, because the viewer's pages are html/template, whose
// reflection makes the linker keep every method of every linked type: in
// lite-agent itself it doubled the binary and a one-turn run's memory.
// lite-agent hands `serve` to lite-agent-serve installed beside it.
type Serving interface {
	// Approve and Input are the handlers the agent is built with; they
	// wait for answers given over HTTP.
	Approve(ctx context.Context, req liteagent.ApprovalRequest) (liteagent.Decision, error)
	Input(ctx context.Context, req liteagent.InputRequest) (string, error)
	// Serve makes the HTTP handler for agent.
	Serve(agent *liteagent.Agent, opts ServeOptions) (Server, error)
}

// ServeOptions is what the command line tells the server it makes.
type ServeOptions struct {
	Store        checkpoint.Checkpointer // the store the agent was built on
	Token        string                  // "" makes the server pick one
	AllowedHosts []string                // Host names accepted besides loopback
	CORSOrigins  []string                // origins answered with CORS headers
	MaxBodyBytes int64
	Logger       *slog.Logger
}

// Server is a running `lite-agent serve` handler.
type Server interface {
	http.Handler
	// Token is the bearer token requests must carry.
	Token() string
	// Running lists the sessions a turn of this server runs in.
	Running() []string
	// Shutdown refuses new turns, lets running ones finish until ctx is
	// done, then interrupts the rest and waits for them.
	Shutdown(ctx context.Context)
}

// serveTokenEnv names the environment variable that can hold serve's
// token (instead of a random one).
const serveTokenEnv = "LITE_AGENT_SERVE_TOKEN"

// serveConfig is `lite-agent serve`'s command line beyond what it shares
// with the agent's flags.
type serveConfig struct {
	listen      string
	tokenFile   string
	allowRemote bool
	allowHosts  multi
	corsOrigins multi
	grace       time.Duration
	maxBody     int64
}

// serveMain runs `lite-agent serve`: the HTTP API, live streams and the
// web viewer over the --session-db store, until SIGTERM or Ctrl-C, then
// shuts down letting running turns finish for --shutdown-grace. Without a
// linked-in server (lite-agent itself) it hands the run to
// lite-agent-serve beside this executable.
func serveMain(ctx context.Context, args []string, std IO) int {
	if std.Serving == nil {
		err := execBeside(ServeCommand, "./cmd/lite-agent-serve", args)
		return report(fmt.Errorf("serve: %w", err), std.Stderr)
	}
	c, sc, err := parseServe(args, std.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(std.Stdout, "Usage: lite-agent serve [--listen 127.0.0.1:PORT] --session-db DB|URL [flags]\n\nFlags:\n")
		fs, _, _ := serveFlags(&config{}, &serveConfig{})
		fs.SetOutput(std.Stdout)
		fs.PrintDefaults()
		return ExitOK
	}
	if err != nil {
		return report(err, std.Stderr)
	}
	return report(serve(ctx, c, sc, std), std.Stderr)
}

func serveFlags(c *config, sc *serveConfig) (*flag.FlagSet, *config, *serveConfig) {
	fs := flag.NewFlagSet("lite-agent serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&sc.listen, "listen", "127.0.0.1:7420", "the `ADDRESS` (host:port) to listen on; loopback unless --allow-remote (port 0: any free port)")
	fs.StringVar(&c.sessionDB, "session-db", "", "the sessions to serve: a SQLite database `PATH` or a postgres:// URL (required)")
	fs.StringVar(&c.workdir, "workdir", "", "the `DIR` new sessions work in (default: the current directory)")
	fs.StringVar(&sc.tokenFile, "token-file", "", "read the bearer token from `FILE` (default: $"+serveTokenEnv+", else a random one printed at start)")
	fs.BoolVar(&sc.allowRemote, "allow-remote", false, "allow --listen on an address other machines can reach (the token is still required)")
	fs.Var(&sc.allowHosts, "allow-host", "accept requests whose Host header is `NAME` besides the loopback names (repeatable)")
	fs.Var(&sc.corsOrigins, "cors-origin", "answer browser requests from `ORIGIN` (scheme://host:port) with CORS headers (repeatable; default none)")
	fs.DurationVar(&sc.grace, "shutdown-grace", 30*time.Second, "on SIGTERM, how long running turns may take to finish before they are interrupted")
	fs.Int64Var(&sc.maxBody, "max-body", defaultMaxBody, "the largest request body in `BYTES`")
	fs.StringVar(&c.provider, "provider", "", "model API `NAME`: anthropic or openai")
	fs.StringVar(&c.model, "model", "", "model `NAME`")
	fs.StringVar(&c.baseURL, "base-url", "", "the model server's base `URL`")
	fs.Var(&c.allow, "allow", "let tools of `KIND` run without asking: edit, bash, mcp, mcp__SERVER, mcp__SERVER__TOOL or all (repeatable)")
	fs.StringVar(&c.sandboxMode, "sandbox", "", "confine shell commands: `MODE` read-only, workspace-write or off")
	fs.IntVar(&c.maxModelCalls, "max-model-calls", 50, "stop a turn after `N` model calls")
	fs.DurationVar(&c.idleTimeout, "idle-timeout", provider.DefaultIdleTimeout, "give a model stream up as stalled after `DURATION` of silence (0: never)")
	return fs, c, sc
}

// parseServe parses serve's command line and the configuration files.
func parseServe(args []string, stderr io.Writer) (*config, *serveConfig, error) {
	fs, c, sc := serveFlags(&config{}, &serveConfig{})
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, nil, err
		}
		return nil, nil, usagef("serve: %v (see lite-agent serve --help)", err)
	}
	if fs.NArg() > 0 {
		return nil, nil, usagef("serve takes no prompt (got %q): prompts come over HTTP", strings.Join(fs.Args(), " "))
	}
	if err := applySettings(c, givenFlags(fs), stderr); err != nil {
		return nil, nil, err
	}
	switch {
	case c.sessionDB == "":
		return nil, nil, usagef("serve needs --session-db PATH or a postgres:// URL (or session_db in a config file): the sessions it serves")
	case c.maxModelCalls < 1:
		return nil, nil, usagef("--max-model-calls must be at least 1, not %d", c.maxModelCalls)
	case sc.maxBody < 1024:
		return nil, nil, usagef("--max-body must be at least 1024 bytes, not %d", sc.maxBody)
	case sc.grace < 0:
		return nil, nil, usagef("--shutdown-grace must not be negative")
	case c.provider != "" && c.provider != "anthropic" && c.provider != "openai":
		return nil, nil, usagef("--provider must be anthropic or openai, not %q", c.provider)
	}
	if _, _, err := net.SplitHostPort(sc.listen); err != nil {
		return nil, nil, usagef("--listen %q is not host:port (for example 127.0.0.1:7420)", sc.listen)
	}
	if !isLoopback(sc.listen) && !sc.allowRemote {
		return nil, nil, usagef("--listen %s would accept connections from other machines; listen on 127.0.0.1, or pass --allow-remote (and --allow-host NAME for the name they use) on purpose", sc.listen)
	}
	for _, a := range c.allow {
		if a != "edit" && a != "bash" && a != "all" && a != "mcp" && !strings.HasPrefix(a, "mcp__") {
			return nil, nil, usagef("--allow takes edit, bash, mcp, mcp__SERVER, mcp__SERVER__TOOL or all, not %q", a)
		}
	}
	return c, sc, nil
}

// serveToken is the token from --token-file, else the environment, else
// "" (the server makes one).
func serveToken(sc *serveConfig) (string, error) {
	if sc.tokenFile != "" {
		b, err := os.ReadFile(sc.tokenFile)
		if err != nil {
			return "", usagef("--token-file: %v", err)
		}
		tok := strings.TrimSpace(string(b))
		if len(tok) < 16 {
			return "", usagef("--token-file %s holds %d characters; a token needs at least 16", sc.tokenFile, len(tok))
		}
		return tok, nil
	}
	if tok := os.Getenv(serveTokenEnv); tok != "" {
		if len(tok) < 16 {
			return "", usagef("$%s holds %d characters; a token needs at least 16", serveTokenEnv, len(tok))
		}
		return tok, nil
	}
	return "", nil
}

func serve(ctx context.Context, c *config, sc *serveConfig, std IO) error {
	serving := std.Serving()
	token, err := serveToken(sc)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(std.Stderr, nil))
	c.approve, c.input = serving.Approve, serving.Input
	e, err := newAgent(ctx, c, "", false, true)
	if err != nil && strings.Contains(err.Error(), "no API key") {
		logger.Warn("no model: sessions can be browsed, rewound and forked, but prompts are refused", "reason", err)
		e, err = newAgent(ctx, c, "", false, false)
	}
	if err != nil {
		return err
	}
	defer e.close()
	srv, err := serving.Serve(e.agent, ServeOptions{Store: e.store, Token: token,
		AllowedHosts: sc.allowHosts, CORSOrigins: sc.corsOrigins, MaxBodyBytes: sc.maxBody, Logger: logger})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", sc.listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (is another server there? pick another port with --listen)", sc.listen, err)
	}
	base := "http://" + ln.Addr().String()
	fmt.Fprintf(std.Stdout, "lite-agent serve: listening on %s (sessions: %s, workdir: %s)\n", base, redactDB(c.sessionDB), e.agent.Workdir())
	fmt.Fprintf(std.Stdout, "token: %s\n", srv.Token())
	fmt.Fprintf(std.Stdout, "viewer: %s/?token=%s\n", base, srv.Token())
	if f, ok := std.Stdout.(interface{ Sync() error }); ok {
		f.Sync()
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	ctx, stop := cancelOnInterrupt(ctx, std.Interrupt)
	defer stop()
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	running := srv.Running()
	logger.Info("shutting down", "running_turns", len(running), "grace", sc.grace.String())
	gctx, cancel := context.WithTimeout(context.Background(), sc.grace)
	defer cancel()
	srv.Shutdown(gctx)
	hctx, hcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer hcancel()
	if err := hs.Shutdown(hctx); err != nil {
		hs.Close()
	}
	logger.Info("stopped")
	return nil
}

// isLoopback reports whether a listen address (host:port) binds to
// loopback only: 127.0.0.0/8, ::1 or localhost. An empty host (every
// interface) is not.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// redactDB hides a database URL's password.
func redactDB(db string) string {
	if !isPostgresURL(db) {
		return db
	}
	at := strings.LastIndex(db, "@")
	scheme := strings.Index(db, "://") + 3
	if at < scheme {
		return db
	}
	if colon := strings.Index(db[scheme:at], ":"); colon >= 0 {
		return db[:scheme+colon+1] + "***" + db[at:]
	}
	return db
}
