// Package cli is the lite-agent command line: flag parsing and its rules,
// one-shot and line-mode runs, session inspection and operations. It uses
// only the public SDK (package liteagent) and the store constructors.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	liteagent "github.com/lite-agent/lite-agent"
	"io"
	"strings"
)

// Exit statuses, documented in --help and the README.
const (
	ExitOK          = 0   // success
	ExitError       = 1   // the run failed (model, tool, storage or network error)
	ExitUsage       = 2   // bad flags or arguments; nothing was written
	ExitHazard      = 3   // the session has interrupted tool calls to review and acknowledge
	ExitConflict    = 4   // another process wrote the same session at the same time
	ExitInterrupted = 130 // cancelled with Ctrl-C
)

// IO is where a command reads and writes.
type IO struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Interactive reports whether stdin is a terminal a person types in.
	Interactive bool
	// Interrupt delivers Ctrl-C presses: the first cancels the running
	// turn. (The command's main exits on the second.) May be nil.
	Interrupt <-chan struct{}
	// FullScreen makes the full-screen client for interactive terminal
	// runs; nil (lite-agent itself) hands those runs to lite-agent-tui.
	FullScreen func() FullScreen
}

// UsageError is a bad command line: exit status 2, nothing written.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

func usagef(format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...)}
}

// multi is a repeatable string flag.
type multi []string

func (m *multi) String() string { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*m = append(*m, s)
		}
	}
	return nil
}

// config is a parsed command line.
type config struct {
	sessionDB string
	workdir   string

	// Session operations: at most one per run.
	resume, sessionInfo, recoveryInfo, checkpoints   string
	restore, fork, deleteSession, export, importFile string
	compact                                          string
	sessions                                         bool
	to                                               int64
	force                                            bool
	salvage                                          bool // --salvage: with --export, the events that verify
	retarget                                         bool // --retarget: move the session to this workdir on purpose
	acknowledge                                      multi

	provider, model, baseURL string
	allow                    multi
	output                   string
	plain                    bool
	demo                     bool
	maxModelCalls            int
	prompt                   string
	taskList                 string // --task-list: the shared task list to use
	noWait                   bool   // --no-wait: one-shot runs do not wait for background jobs
	models                   string // --models: a TOML file of context windows and prices
	thinking                 int    // --thinking: the extended thinking budget in tokens
	reasoningEffort          string // --reasoning-effort for OpenAI-compatible servers

	approve liteagent.ApprovalFunc // set by the mode before the agent is built
	input   liteagent.InputFunc    // likewise; nil where nobody can answer (one-shot)
}

// op is a session operation named on the command line.
type op struct {
	flag  string
	given bool
}

func (c *config) ops() []op {
	return []op{
		{"--resume", c.resume != ""},
		{"--sessions", c.sessions},
		{"--session-info", c.sessionInfo != ""},
		{"--recovery-info", c.recoveryInfo != ""},
		{"--checkpoints", c.checkpoints != ""},
		{"--restore", c.restore != ""},
		{"--fork", c.fork != ""},
		{"--delete-session", c.deleteSession != ""},
		{"--export", c.export != ""},
		{"--import", c.importFile != ""},
		{"--compact", c.compact != ""},
	}
}

func (c *config) inspection() bool {
	return c.sessions || c.sessionInfo != "" || c.recoveryInfo != "" || c.checkpoints != "" || c.export != ""
}

func newFlagSet(c *config, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("lite-agent", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&c.sessionDB, "session-db", "", "durable sessions in the SQLite database at `PATH` (created 0600 if missing), or a postgres:// URL")
	fs.StringVar(&c.workdir, "workdir", "", "the `DIR` the agent works in (default: the current directory)")
	fs.StringVar(&c.resume, "resume", "", "continue the session `HANDLE` (its id or a unique prefix)")
	fs.BoolVar(&c.sessions, "sessions", false, "list this workspace's sessions as JSON")
	fs.StringVar(&c.sessionInfo, "session-info", "", "show session `ID`'s saved state and recovery hazards as JSON")
	fs.StringVar(&c.recoveryInfo, "recovery-info", "", "show session `ID`'s interrupted tool calls and their review tokens as JSON")
	fs.StringVar(&c.checkpoints, "checkpoints", "", "list session `ID`'s checkpoints (one per prompt) as JSON")
	fs.StringVar(&c.restore, "restore", "", "rewind session `ID` and its files to the checkpoint given by --to")
	fs.StringVar(&c.fork, "fork", "", "copy session `ID` (up to --to, default all) into a new session")
	fs.Int64Var(&c.to, "to", 0, "the checkpoint `SEQ` for --restore and --fork, as --checkpoints prints it")
	fs.BoolVar(&c.force, "force", false, "with --restore: overwrite files changed since the session left them")
	fs.BoolVar(&c.retarget, "retarget", false, "with --resume or --restore: move the session to this run's workdir on purpose (recorded in its log) instead of refusing a session of another workdir")
	fs.StringVar(&c.deleteSession, "delete-session", "", "delete session `ID` and its private data")
	fs.StringVar(&c.export, "export", "", "write session `ID`'s log as JSON Lines to stdout")
	fs.BoolVar(&c.salvage, "salvage", false, "with --export: write the events of a damaged log that verify, marked as salvaged, for --import")
	fs.StringVar(&c.importFile, "import", "", "import a session from a JSON Lines `FILE` (- for stdin)")
	fs.Var(&c.acknowledge, "acknowledge", "with --resume: acknowledge the interrupted tool call with review `TOKEN` (repeatable)")
	fs.StringVar(&c.provider, "provider", "", "model API `NAME`: anthropic or openai (default: anthropic, or openai when only OPENAI_API_KEY is set)")
	fs.StringVar(&c.model, "model", "", "model `NAME` (default: claude-sonnet-4-6 for anthropic, gpt-4.1 for openai)")
	fs.StringVar(&c.baseURL, "base-url", "", "the model server's base `URL` (default: ANTHROPIC_BASE_URL or OPENAI_BASE_URL, else the provider's)")
	fs.Var(&c.allow, "allow", "in one-shot mode, let tools of `KIND` run without asking: edit, bash or all (repeatable)")
	fs.StringVar(&c.output, "output", "text", "one-shot output `FORMAT`: text, json (the final result) or stream-json (one event per line)")
	fs.BoolVar(&c.plain, "plain", false, "use the plain line mode even on a terminal")
	fs.BoolVar(&c.demo, "demo", false, "run the offline demo against the bundled fake model server (no API key, no network)")
	fs.IntVar(&c.maxModelCalls, "max-model-calls", 50, "stop a turn after `N` model calls")
	fs.StringVar(&c.taskList, "task-list", "", "use the task list `NAME`, shared with every session of this workspace that names it (default: each session has its own)")
	fs.StringVar(&c.compact, "compact", "", "summarise session `ID`'s conversation with the model (a PROMPT given says what to keep); later turns send the summary and what follows")
	fs.StringVar(&c.models, "models", "", "a TOML `FILE` of model context windows and prices, over the built-in table")
	fs.IntVar(&c.thinking, "thinking", 0, "extended thinking with a budget of `N` tokens (Anthropic; at least 1024)")
	fs.StringVar(&c.reasoningEffort, "reasoning-effort", "", "reasoning `EFFORT` for OpenAI-compatible servers that take it: low, medium or high")
	fs.BoolVar(&c.noWait, "no-wait", false, "one-shot: exit when the turn ends, stopping background jobs still running (default: wait for them and the turns their results start)")
	return fs
}

// parse parses and checks a command line.
func parse(args []string, stderr io.Writer) (*config, error) {
	c := &config{}
	fs := newFlagSet(c, stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, usagef("%v (see lite-agent --help)", err)
	}
	// Allow flags after the prompt too: lite-agent "fix it" --allow edit.
	rest := fs.Args()
	var words []string
	for len(rest) > 0 {
		words = append(words, rest[0])
		if err := fs.Parse(rest[1:]); err != nil {
			return nil, usagef("%v (see lite-agent --help)", err)
		}
		rest = fs.Args()
	}
	c.prompt = strings.Join(words, " ")

	var given []string
	for _, o := range c.ops() {
		if o.given {
			given = append(given, o.flag)
		}
	}
	switch {
	case len(given) > 1:
		return nil, usagef("at most one session operation per run, got %s", strings.Join(given, " and "))
	case len(given) == 1 && c.sessionDB == "":
		return nil, usagef("%s requires --session-db PATH", given[0])
	case len(c.acknowledge) > 0 && c.resume == "":
		return nil, usagef("--acknowledge goes with --resume ID")
	case c.to != 0 && c.restore == "" && c.fork == "":
		return nil, usagef("--to goes with --restore or --fork")
	case c.restore != "" && c.to <= 0:
		return nil, usagef("--restore ID needs --to SEQ (list them with --checkpoints ID)")
	case c.force && c.restore == "":
		return nil, usagef("--force goes with --restore")
	case c.salvage && c.export == "":
		return nil, usagef("--salvage goes with --export ID")
	case c.retarget && c.restore == "" && c.resume == "":
		return nil, usagef("--retarget goes with --resume or --restore")
	case c.inspection() && c.prompt != "":
		return nil, usagef("%s only reads; it takes no prompt", given[0])
	case len(given) == 1 && c.resume == "" && c.compact == "" && c.prompt != "":
		return nil, usagef("%s takes no prompt", given[0])
	case c.thinking < 0 || (c.thinking > 0 && c.thinking < 1024):
		return nil, usagef("--thinking takes a budget of at least 1024 tokens, not %d", c.thinking)
	case c.reasoningEffort != "" && c.reasoningEffort != "low" && c.reasoningEffort != "medium" && c.reasoningEffort != "high":
		return nil, usagef("--reasoning-effort takes low, medium or high, not %q", c.reasoningEffort)
	case c.demo && (len(given) > 0 || c.sessionDB != ""):
		return nil, usagef("--demo runs on its own, in a scratch directory")
	}
	switch c.output {
	case "text", "json", "stream-json":
	default:
		return nil, usagef("--output must be text, json or stream-json, not %q", c.output)
	}
	for _, a := range c.allow {
		switch a {
		case "edit", "bash", "all":
		default:
			return nil, usagef("--allow takes edit, bash or all, not %q", a)
		}
	}
	if err := checkJobFlags(c); err != nil {
		return nil, err
	}
	if c.provider != "" && c.provider != "anthropic" && c.provider != "openai" {
		return nil, usagef("--provider must be anthropic or openai, not %q", c.provider)
	}
	return c, nil
}

// Main runs the command line and returns the exit status.
func Main(ctx context.Context, args []string, std IO) int {
	c, err := parse(args, std.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		printHelp(std.Stdout)
		return ExitOK
	}
	if err != nil {
		fmt.Fprintln(std.Stderr, "lite-agent:", err)
		return ExitUsage
	}
	err = run(ctx, c, std)
	return report(withHint(err, c), std.Stderr)
}

// report prints err on one line and maps it to an exit status.
func report(err error, stderr io.Writer) int {
	if err == nil {
		return ExitOK
	}
	fmt.Fprintln(stderr, "lite-agent:", describe(err))
	return exitCode(err)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func run(ctx context.Context, c *config, std IO) error {
	if c.demo {
		return runDemo(ctx, c, std)
	}
	if c.inspection() || c.importFile != "" || c.restore != "" || c.fork != "" || c.deleteSession != "" || c.compact != "" {
		var stop context.CancelFunc
		ctx, stop = cancelOnInterrupt(ctx, std.Interrupt)
		defer stop()
	}
	switch {
	case c.sessions:
		return listSessions(ctx, c, std)
	case c.sessionInfo != "":
		return sessionInfo(ctx, c, std)
	case c.recoveryInfo != "":
		return recoveryInfo(ctx, c, std)
	case c.checkpoints != "":
		return listCheckpoints(ctx, c, std)
	case c.export != "":
		return exportSession(ctx, c, std)
	case c.importFile != "":
		return importSession(ctx, c, std)
	case c.restore != "":
		return restoreSession(ctx, c, std)
	case c.fork != "":
		return forkSession(ctx, c, std)
	case c.deleteSession != "":
		return deleteSession(ctx, c, std)
	case c.compact != "":
		return compactSession(ctx, c, std)
	}
	if c.prompt != "" {
		return oneShot(ctx, c, std)
	}
	return interactive(ctx, c, std)
}

func printHelp(w io.Writer) {
	c := &config{}
	fs := newFlagSet(c, w)
	fmt.Fprint(w, `lite-agent: a coding agent with durable sessions.

Usage:
  lite-agent [flags] PROMPT     one-shot: stream the answer, then exit
  lite-agent [flags]            interactive: the full-screen client on a terminal (lite-agent-tui),
                                else the line mode; /help lists the commands
  lite-agent --demo             offline demo against the bundled fake model server

Without --session-db nothing is persisted: every run is a fresh session.
At most one session operation per run, and each requires --session-db.

Flags:
`)
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if name != "" {
			line += " " + name
		}
		fmt.Fprintf(w, "%-28s %s\n", line, usage)
	})
	fmt.Fprint(w, `
Environment:
  ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL   the anthropic provider
  OPENAI_API_KEY, OPENAI_BASE_URL         the openai provider (any OpenAI-compatible server)

Exit status:
  0    success
  1    the run failed (model, tool, storage or network error)
  2    bad flags or arguments; nothing was written
  3    the session has interrupted tool calls: review with --recovery-info, then --acknowledge
  4    another process wrote the same session at the same time
  130  cancelled with Ctrl-C
`)
}
