package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	cfgpkg "github.com/lite-agent/lite-agent/config"
	"github.com/lite-agent/lite-agent/mcp"
	"github.com/lite-agent/lite-agent/permission"
	"github.com/lite-agent/lite-agent/sandbox"
	"github.com/lite-agent/lite-agent/tool"
	"github.com/lite-agent/lite-agent/tool/builtin"
)

// applySettings loads the user and project configuration files for the
// run's workdir and fills in what the command line left unset; given
// holds the flags given. It builds the permission rules (the files',
// then --allow's) and the sandbox.
func applySettings(c *config, given map[string]bool, stderr io.Writer) error {
	wd := c.workdir
	if wd == "" {
		var err error
		if wd, err = os.Getwd(); err != nil {
			return err
		}
	}
	s, err := cfgpkg.Load(wd, nil)
	if err != nil {
		return usagef("%v (fix the file, or see the README's configuration section)", err)
	}
	flagSrc := func(name string) cfgpkg.Source { return cfgpkg.Source{Level: cfgpkg.LevelFlag, Path: "--" + name} }
	for _, v := range []struct {
		flag string
		dst  *string
		val  *cfgpkg.Value
	}{
		{"provider", &c.provider, &s.Provider},
		{"model", &c.model, &s.Model},
		{"base-url", &c.baseURL, &s.BaseURL},
		{"session-db", &c.sessionDB, &s.SessionDB},
		{"sandbox", &c.sandboxMode, &s.SandboxMode},
	} {
		if given[v.flag] {
			s.SetString(v.val, *v.dst, flagSrc(v.flag))
		} else if v.val.Set {
			*v.dst = v.val.Value
		}
	}
	c.modelGiven = given["model"]
	if given["no-stream"] {
		s.SetString(&s.NoStream, strconv.FormatBool(c.noStream), flagSrc("no-stream"))
	} else if s.NoStream.Set {
		c.noStream = s.NoStream.Value == "true"
	}
	c.noNetwork = s.SandboxNetwork.Value == "false"
	c.requireSandbox = s.SandboxRequire.Value == "true"
	var rules []permission.Rule
	for _, r := range s.Rules {
		rules = append(rules, permission.Rule{Effect: permission.Effect(r.List), Pattern: r.Pattern, Reason: r.Reason, Source: r.Source.String()})
	}
	for _, kind := range c.allow {
		rules = append(rules, allowRules(kind)...)
	}
	if c.rules, err = permission.New(rules); err != nil {
		return usagef("%v", err)
	}
	if c.sandboxMode == "" {
		// Commands the user does not see one by one are confined by
		// default.
		c.sandboxMode = string(sandbox.Off)
		if allowsBash(c.allow) {
			c.sandboxMode = string(sandbox.WorkspaceWrite)
		}
		s.SetString(&s.SandboxMode, c.sandboxMode, cfgpkg.Source{Level: cfgpkg.LevelDefault})
	}
	c.settings = s
	return nil
}

// allowRules maps an --allow value to the allow rules it stands for: a
// tool kind (edit, bash, mcp, network, or all four), one MCP server's tools
// (mcp__SERVER) or one tool (mcp__SERVER__TOOL). network allows every
// web_fetch. A read-only annotation
// alone allows nothing.
func allowRules(value string) []permission.Rule {
	rule := func(kind tool.Kind, pattern string) permission.Rule {
		return permission.Rule{Effect: permission.Allow, Kind: string(kind), Pattern: pattern, Source: "--allow " + value}
	}
	switch value {
	case "edit":
		return []permission.Rule{rule(tool.KindEdit, "")}
	case "bash":
		return []permission.Rule{rule(tool.KindExec, "")}
	case "mcp":
		return []permission.Rule{rule(tool.KindMCP, "")}
	case "network":
		return []permission.Rule{rule(tool.KindNetwork, "")}
	case "all":
		return []permission.Rule{rule(tool.KindEdit, ""), rule(tool.KindExec, ""), rule(tool.KindMCP, ""), rule(tool.KindNetwork, "")}
	}
	if _, _, ok := mcp.SplitToolName(value); ok {
		return []permission.Rule{rule("", value)}
	}
	return []permission.Rule{rule("", strings.TrimSuffix(value, "__")+"__*")} // mcp__SERVER, as parse checked

}

func allowsBash(allow []string) bool {
	for _, a := range allow {
		if a == "bash" || a == "all" {
			return true
		}
	}
	return false
}

// tools returns the built-in tools with bash confined as the run's sandbox
// mode says, and web_fetch's redirects checked against the run's rules. A kernel that cannot apply it is reported once on stderr,
// or is an error with require = true.
func tools(c *config, workdir string, stderr io.Writer) ([]tool.Tool, error) {
	mode, err := sandbox.ParseMode(c.sandboxMode)
	if err != nil {
		return nil, usagef("%v", err)
	}
	all := builtin.All()
	for i, t := range all {
		if w, ok := t.(builtin.WebFetch); ok {
			w.Redirect = c.rules.Redirect(w.Spec().Name)
			all[i] = w
		}
	}
	if mode == sandbox.Off {
		return all, nil
	}
	p, err := sandbox.New(mode, workdir, &sandbox.Options{NoNetwork: c.noNetwork, Require: c.requireSandbox})
	var de *sandbox.DegradedError
	switch {
	case errors.As(err, &de) && p != nil:
		if !c.warnedSandbox {
			fmt.Fprintln(stderr, "lite-agent:", err)
			c.warnedSandbox = true
		}
	case err != nil:
		return nil, err
	}
	for i, t := range all {
		if b, ok := t.(builtin.Bash); ok {
			b.Sandbox = p
			all[i] = b
		}
	}
	return all, nil
}

// latestSession returns the id of the workspace's most recent session,
// for --continue.
func latestSession(ctx context.Context, c *config) (string, error) {
	e, err := newAgent(ctx, c, "", true, false)
	if err != nil {
		return "", err
	}
	defer e.close()
	list, err := e.agent.ListSessions(ctx)
	if err != nil {
		return "", err
	}
	for _, s := range list {
		if s.Kind == "" {
			return s.ID, nil
		}
	}
	return "", fmt.Errorf("--continue: no session in this workspace (%s) yet; start one with: lite-agent --session-db %s PROMPT", e.agent.Workdir(), c.sessionDB)
}

// version is the build's version: the module version, the commit and
// whether the tree was modified, as Go recorded them.
func version() string {
	v := "(devel)"
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "lite-agent " + v
	}
	if info.Main.Version != "" {
		v = info.Main.Version
	}
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = " (modified)"
			}
		}
	}
	out := "lite-agent " + v
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		out += " " + rev + modified
	}
	return out + " " + info.GoVersion
}

// givenFlags returns the names of the flags set on the command line, with
// short names folded into their long ones.
func givenFlags(fs *flag.FlagSet) map[string]bool {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) {
		name := f.Name
		if long, ok := shortFlags[name]; ok {
			name = long
		}
		given[name] = true
	})
	return given
}

// shortFlags maps each short flag to its long name.
var shortFlags = map[string]string{"p": "prompt", "c": "continue", "r": "resume"}

// shortOf returns the short name of a long flag, "" if it has none.
func shortOf(long string) string {
	for s, l := range shortFlags {
		if l == long {
			return s
		}
	}
	return ""
}

func printConfig(c *config, w io.Writer) {
	c.settings.Print(w)
	fmt.Fprintf(w, "\n# rules in force, strongest first: deny, then ask, then allow\n")
	for _, r := range c.rules.Rules() {
		fmt.Fprintf(w, "#   %-5s %s (%s)\n", r.Effect, r.Name(), r.Source)
	}
	if len(c.rules.Rules()) == 0 {
		fmt.Fprintln(w, "#   none: calls that change files or run commands are asked about (one-shot runs deny them)")
	}
}
