// Package cli is the lite-agent command line: flag parsing and its rules,
// one-shot and line-mode runs, session inspection and operations. It uses
// only the public SDK (package liteagent) and the store constructors.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/checkpoint"
	cfgpkg "github.com/lite-agent/lite-agent/config"
	"github.com/lite-agent/lite-agent/mcp"
	"github.com/lite-agent/lite-agent/permission"
	"github.com/lite-agent/lite-agent/provider"
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
	// Serving makes `lite-agent serve`'s server; nil (lite-agent itself)
	// hands serve to lite-agent-serve.
	Serving func() Serving
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
	title                                            string // --title ID (the text is the prompt words)
	doctor, repair                                   bool   // --doctor [ID] [--repair]
	prune, dryRun                                    bool   // --prune --older-than D [--keep N] [--dry-run]
	olderThan                                        time.Duration
	keep                                             int
	archive                                          string
	search                                           string // --search QUERY
	allWorkspaces                                    bool   // --all-workspaces: --search every namespace
	limit                                            int    // --limit N: --search hits
	to                                               int64
	force                                            bool
	salvage                                          bool // --salvage: with --export, the events that verify
	retarget                                         bool // --retarget: move the session to this workdir on purpose
	acknowledge                                      multi

	provider, model, baseURL string
	modelGiven               bool // --model was given: it wins over a resumed session's /model
	allow                    multi
	output                   string
	plain                    bool
	demo                     bool
	maxModelCalls            int
	idleTimeout              time.Duration // --idle-timeout: a model stream silent this long is stalled (0: never)
	prompt                   string
	taskList                 string // --task-list: the shared task list to use
	noWait                   bool   // --no-wait: one-shot runs do not wait for background jobs
	mcpConfig                string // --mcp-config: the file the MCP servers are read from
	mcpServers               []mcp.ServerConfig
	listMCP                  bool // --mcp

	// Configuration files, rules and the sandbox (settings.go).
	showConfig, showVersion bool
	cont                    bool   // --continue: resume the workspace's latest session
	promptFlag              string // -p / --prompt
	sandboxMode             string
	noNetwork               bool
	requireSandbox          bool
	warnedSandbox           bool
	settings                *cfgpkg.Config
	rules                   *permission.Engine
	models                  string // --models: a TOML file of context windows and prices
	thinking                int    // --thinking: the extended thinking budget in tokens
	reasoningEffort         string // --reasoning-effort for OpenAI-compatible servers
	noStream                bool   // --no-stream: whole answers from OpenAI-compatible servers

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
		{"--continue", c.cont},
		{"--sessions", c.sessions},
		{"--session-info", c.sessionInfo != ""},
		{"--recovery-info", c.recoveryInfo != ""},
		{"--checkpoints", c.checkpoints != ""},
		{"--restore", c.restore != ""},
		{"--fork", c.fork != ""},
		{"--delete-session", c.deleteSession != ""},
		{"--export", c.export != ""},
		{"--import", c.importFile != ""},
		{"--search", c.search != ""},
		{"--title", c.title != ""},
		{"--doctor", c.doctor},
		{"--prune", c.prune},
		{"--compact", c.compact != ""},
	}
}

func (c *config) inspection() bool {
	return c.sessions || c.sessionInfo != "" || c.recoveryInfo != "" || c.checkpoints != "" || c.export != "" || c.search != ""
}

func newFlagSet(c *config, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("lite-agent", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&c.sessionDB, "session-db", "", "durable sessions in the SQLite database at `PATH` (created 0600 if missing), or a postgres:// URL")
	fs.StringVar(&c.workdir, "workdir", "", "the `DIR` the agent works in (default: the current directory)")
	fs.StringVar(&c.resume, "resume", "", "continue the session `HANDLE` (its id or a unique prefix)")
	fs.StringVar(&c.resume, "r", "", "")
	fs.BoolVar(&c.cont, "continue", false, "continue this workspace's most recent session")
	fs.BoolVar(&c.cont, "c", false, "")
	fs.StringVar(&c.promptFlag, "prompt", "", "run the one-shot `PROMPT` (the same as giving it as an argument)")
	fs.StringVar(&c.promptFlag, "p", "", "")
	fs.BoolVar(&c.showConfig, "config", false, "print the merged configuration (user file, project file, flags) and where each value came from")
	fs.BoolVar(&c.showVersion, "version", false, "print the version and exit")
	fs.StringVar(&c.sandboxMode, "sandbox", "", "confine shell commands: `MODE` read-only, workspace-write or off (default: workspace-write with --allow bash or all, else off)")
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
	fs.BoolVar(&c.doctor, "doctor", false, "check every log of the store (or session ID given after it) and what is derived from them; prints one JSON line per problem")
	fs.BoolVar(&c.repair, "repair", false, "with --doctor: rebuild summaries and the search index from the logs and move damaged tails to side files")
	fs.BoolVar(&c.prune, "prune", false, "delete this workspace's sessions whose last event is older than --older-than, after exporting them to an archive file")
	fs.DurationVar(&c.olderThan, "older-than", 0, "with --prune: sessions whose last event is older than `DURATION` (e.g. 720h)")
	fs.IntVar(&c.keep, "keep", 0, "with --prune: always keep the `N` most recently updated sessions")
	fs.BoolVar(&c.dryRun, "dry-run", false, "with --prune: print what would be removed; change nothing")
	fs.StringVar(&c.archive, "archive", "", "with --prune: the archive `FILE` to write (default: next to the database, named by the time)")
	fs.StringVar(&c.title, "title", "", "rename session `ID`: lite-agent --title ID TEXT")
	fs.StringVar(&c.search, "search", "", "find `QUERY`'s words in the prompts, answers, tool output and titles of this workspace's sessions; prints JSON hits, newest first")
	fs.BoolVar(&c.allWorkspaces, "all-workspaces", false, "with --search: search the sessions of every workspace")
	fs.IntVar(&c.limit, "limit", 0, "with --search: print at most `N` hits (default 50)")
	fs.Var(&c.acknowledge, "acknowledge", "with --resume: acknowledge the interrupted tool call with review `TOKEN` (repeatable)")
	fs.StringVar(&c.provider, "provider", "", "model API `NAME`: anthropic or openai (default: anthropic, or openai when only OPENAI_API_KEY is set)")
	fs.StringVar(&c.model, "model", "", "model `NAME` (default: claude-sonnet-4-6 for anthropic, gpt-4.1 for openai)")
	fs.StringVar(&c.baseURL, "base-url", "", "the model server's base `URL` (default: ANTHROPIC_BASE_URL or OPENAI_BASE_URL, else the provider's)")
	fs.Var(&c.allow, "allow", "let tools of `KIND` run without asking, in every mode: edit, bash, network (web_fetch), mcp (every MCP tool), mcp__SERVER or mcp__SERVER__TOOL, or all (repeatable)")
	fs.StringVar(&c.output, "output", "text", "one-shot output `FORMAT`: text, json (the final result) or stream-json (one event per line)")
	fs.BoolVar(&c.plain, "plain", false, "use the plain line mode even on a terminal")
	fs.BoolVar(&c.demo, "demo", false, "run the offline demo against the bundled fake model server (no API key, no network)")
	fs.IntVar(&c.maxModelCalls, "max-model-calls", 50, "stop a turn after `N` model calls")
	fs.DurationVar(&c.idleTimeout, "idle-timeout", provider.DefaultIdleTimeout, "give a model stream up as stalled when nothing arrives for `DURATION` (retried if nothing was streamed yet; 0: never)")
	fs.StringVar(&c.taskList, "task-list", "", "use the task list `NAME`, shared with every session of this workspace that names it (default: each session has its own)")
	fs.StringVar(&c.mcpConfig, "mcp-config", "", "start the MCP servers of the [mcp.servers.NAME] tables of the TOML `FILE`; their tools are offered as mcp__NAME__TOOL")
	fs.BoolVar(&c.listMCP, "mcp", false, "start the configured MCP servers, print each with its state, tools and prompts, and stop them")
	fs.StringVar(&c.compact, "compact", "", "summarise session `ID`'s conversation with the model (a PROMPT given says what to keep); later turns send the summary and what follows")
	fs.StringVar(&c.models, "models", "", "a TOML `FILE` of model context windows and prices, over the built-in table")
	fs.IntVar(&c.thinking, "thinking", 0, "extended thinking with a budget of `N` tokens (Anthropic; at least 1024)")
	fs.StringVar(&c.reasoningEffort, "reasoning-effort", "", "reasoning `EFFORT` for OpenAI-compatible servers that take it: low, medium or high")
	fs.BoolVar(&c.noStream, "no-stream", false, "openai provider: ask for whole answers instead of streams, for servers that cannot stream tool calls (config: no_stream = true)")
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
	if c.promptFlag != "" {
		if c.prompt != "" {
			return nil, usagef("give the prompt once: with -p or as an argument, not both")
		}
		c.prompt = c.promptFlag
	}
	if c.showVersion {
		return c, nil
	}
	if !c.demo {
		if err := applySettings(c, givenFlags(fs), stderr); err != nil {
			return nil, err
		}
	}

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
		return nil, usagef("%s requires --session-db PATH (or session_db in a config file)", given[0])
	case c.showConfig && (len(given) > 0 || c.prompt != ""):
		return nil, usagef("--config only prints the configuration; it takes no prompt or session operation")
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
	case c.allWorkspaces && c.search == "" && !c.prune:
		return nil, usagef("--all-workspaces goes with --search QUERY or --prune")
	case c.limit != 0 && c.search == "":
		return nil, usagef("--limit goes with --search QUERY")
	case c.limit < 0:
		return nil, usagef("--limit must be a positive number of hits, not %d", c.limit)
	case c.inspection() && c.prompt != "":
		return nil, usagef("%s only reads; it takes no prompt", given[0])
	case (c.olderThan != 0 || c.keep != 0 || c.dryRun || c.archive != "") && !c.prune:
		return nil, usagef("--older-than, --keep, --dry-run and --archive go with --prune")
	case c.prune && c.olderThan <= 0:
		return nil, usagef("--prune needs --older-than DURATION (for example --older-than 720h for 30 days); nothing is ever deleted by default")
	case c.keep < 0:
		return nil, usagef("--keep must be 0 or more, not %d", c.keep)
	case c.repair && !c.doctor:
		return nil, usagef("--repair goes with --doctor")
	case c.doctor && len(strings.Fields(c.prompt)) > 1:
		return nil, usagef("--doctor takes at most one session ID, not %q", c.prompt)
	case c.title != "" && strings.TrimSpace(c.prompt) == "":
		return nil, usagef("--title ID needs the new title after it: lite-agent --session-db DB --title ID some words")
	case len(given) == 1 && c.resume == "" && !c.cont && c.title == "" && !c.doctor && c.compact == "" && c.prompt != "":
		return nil, usagef("%s takes no prompt", given[0])
	case c.thinking < 0 || (c.thinking > 0 && c.thinking < 1024):
		return nil, usagef("--thinking takes a budget of at least 1024 tokens, not %d", c.thinking)
	case c.reasoningEffort != "" && c.reasoningEffort != "low" && c.reasoningEffort != "medium" && c.reasoningEffort != "high":
		return nil, usagef("--reasoning-effort takes low, medium or high, not %q", c.reasoningEffort)
	case c.demo && (len(given) > 0 || c.sessionDB != "" || c.showConfig):
		return nil, usagef("--demo runs on its own, in a scratch directory")
	}
	if c.maxModelCalls < 1 {
		return nil, usagef("--max-model-calls must be at least 1, not %d", c.maxModelCalls)
	}
	if c.idleTimeout < 0 {
		return nil, usagef("--idle-timeout must not be negative, got %s (0 turns it off)", c.idleTimeout)
	}
	switch c.output {
	case "text", "json", "stream-json":
	default:
		return nil, usagef("--output must be text, json or stream-json, not %q", c.output)
	}
	for _, a := range c.allow {
		switch {
		case a == "edit", a == "bash", a == "all", a == "mcp", a == "network", strings.HasPrefix(a, "mcp__") && len(a) > len("mcp__"):
		default:
			return nil, usagef("--allow takes edit, bash, network, mcp, mcp__SERVER, mcp__SERVER__TOOL or all, not %q", a)
		}
	}
	if c.search != "" {
		if _, err := checkpoint.ParseQuery(c.search); err != nil {
			return nil, usagef("--search %q: give one or more words to look for", c.search)
		}
	}
	if c.settings != nil {
		servers, err := settingsMCPServers(c.settings)
		if err != nil {
			return nil, err
		}
		c.mcpServers = servers
	}
	if c.mcpConfig != "" {
		servers, err := loadMCPConfig(c.mcpConfig)
		if err != nil {
			return nil, err
		}
		c.mcpServers = mergeMCPServers(c.mcpServers, servers)
	}
	if c.listMCP && (c.prompt != "" || len(given) > 0) {
		return nil, usagef("--mcp runs on its own: it takes no prompt and no session operation")
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
	if len(args) > 0 && args[0] == "serve" {
		return serveMain(ctx, args[1:], std)
	}
	c, err := parse(args, std.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		printHelp(std.Stdout)
		return ExitOK
	}
	if err != nil {
		fmt.Fprintln(std.Stderr, "lite-agent:", err)
		return ExitUsage
	}
	switch {
	case c.showVersion:
		fmt.Fprintln(std.Stdout, version())
		return ExitOK
	case c.showConfig:
		printConfig(c, std.Stdout)
		return ExitOK
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
	if c.cont {
		id, err := latestSession(ctx, c)
		if err != nil {
			return err
		}
		c.resume = id
	}
	if c.inspection() || c.importFile != "" || c.restore != "" || c.fork != "" || c.deleteSession != "" || c.compact != "" {
		var stop context.CancelFunc
		ctx, stop = cancelOnInterrupt(ctx, std.Interrupt)
		defer stop()
	}
	switch {
	case c.listMCP:
		return listMCP(ctx, c, std)
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
	case c.search != "":
		return searchSessions(ctx, c, std)
	case c.title != "":
		return renameSession(ctx, c, std)
	case c.doctor:
		return doctor(ctx, c, std)
	case c.prune:
		return prune(ctx, c, std)
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
  lite-agent serve [flags]      the HTTP API and web viewer (lite-agent serve --help)

Without --session-db nothing is persisted: every run is a fresh session.
At most one session operation per run, and each requires --session-db.

Flags:
`)
	fs.VisitAll(func(f *flag.Flag) {
		if _, short := shortFlags[f.Name]; short {
			return
		}
		name, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if s := shortOf(f.Name); s != "" {
			line = "  -" + s + ", --" + f.Name
		}
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
