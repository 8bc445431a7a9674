package permission

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// Effect is what a rule does to a call.
type Effect string

// Effects, weakest first. None means no rule matched: the caller asks (or,
// with nobody to ask, denies).
const (
	None  Effect = ""
	Allow Effect = "allow"
	Ask   Effect = "ask"
	Deny  Effect = "deny"
)

func (e Effect) rank() int {
	switch e {
	case Allow:
		return 1
	case Ask:
		return 2
	case Deny:
		return 3
	}
	return 0
}

// Rule is one permission rule.
type Rule struct {
	Effect  Effect
	Pattern string // as ParsePattern reads it; "" when Kind is set
	// Kind, instead of a pattern, matches every tool of that kind ("edit",
	// "exec"): what the command line's --allow edit and --allow bash give.
	Kind string
	// Reason is shown to the user and told to the model when the rule
	// takes the decision.
	Reason string
	// Source says where the rule came from (a file, "flag", "session").
	Source string
}

// Name is how the rule is shown: its pattern, or "kind:KIND".
func (r Rule) Name() string {
	if r.Kind != "" {
		return "kind:" + r.Kind
	}
	return r.Pattern
}

// Request is a tool call to decide on.
type Request struct {
	Tool string
	Kind string // the tool's kind: "read", "edit" or "exec"
	// Command is the shell command of an exec tool; "" for other tools.
	Command string
	// Paths are the workdir-relative, slash-separated paths the call
	// touches, where known.
	Paths []string
	// URL is the address a network tool (web_fetch) reaches; "" for
	// other tools. A rule's argument matches it as domain:HOST (the host
	// and its subdomains; domain:HOST:PORT names one port) or as a
	// pattern over the whole URL, * being any text.
	URL string
}

// Decision is the engine's answer. Effect None means no rule matched and
// Rule is zero.
type Decision struct {
	Effect Effect
	Rule   Rule
}

// Reason is the text shown and told for the decision: the rule's reason,
// or which rule took it and from where.
func (d Decision) Reason() string {
	if d.Effect == None {
		return ""
	}
	if d.Rule.Reason != "" {
		return d.Rule.Reason
	}
	s := fmt.Sprintf("%s rule %s", d.Effect, d.Rule.Name())
	if d.Rule.Source != "" {
		s += " (" + d.Rule.Source + ")"
	}
	return s
}

type compiled struct {
	Rule
	pat Pattern
	cmd *regexp.Regexp // the command argument, compiled
}

// Engine holds rules and decides on calls. Its methods are safe for
// concurrent use; Add may be called while decisions are taken.
type Engine struct {
	mu    sync.RWMutex
	rules []compiled
}

// New returns an engine with rules; a bad pattern is an error naming it.
func New(rules []Rule) (*Engine, error) {
	e := &Engine{}
	for _, r := range rules {
		if err := e.Add(r); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// Add adds a rule.
func (e *Engine) Add(r Rule) error {
	switch r.Effect {
	case Allow, Ask, Deny:
	default:
		return fmt.Errorf("rule %q: the effect is allow, ask or deny, not %q", r.Name(), r.Effect)
	}
	c := compiled{Rule: r}
	if r.Kind == "" {
		p, err := ParsePattern(r.Pattern)
		if err != nil {
			return err
		}
		c.pat, c.Pattern = p, p.String()
		if p.HasArg {
			if c.cmd, err = commandRE(p.Arg); err != nil {
				return fmt.Errorf("pattern %q: %w", r.Pattern, err)
			}
		}
	}
	e.mu.Lock()
	e.rules = append(e.rules, c)
	e.mu.Unlock()
	return nil
}

// Rules returns a copy of the rules, in the order they were added.
func (e *Engine) Rules() []Rule {
	e.mu.RLock()
	defer e.mu.RUnlock()
	out := make([]Rule, len(e.rules))
	for i, c := range e.rules {
		out[i] = c.Rule
	}
	return out
}

// Decide returns the strongest effect a rule gives the call, with the most
// specific rule of that effect. A nil engine decides None.
func (e *Engine) Decide(req Request) Decision {
	if e == nil {
		return Decision{}
	}
	e.mu.RLock()
	defer e.mu.RUnlock()
	// The parts a rule with an argument is matched against: the simple
	// commands of a shell command, or the paths of a file call.
	var parts []string
	shell := req.Command != ""
	unparsed := false // a command that does not parse is never allowed by its text
	if shell {
		p, err := CommandParts(req.Command)
		if err != nil || len(p) == 0 {
			p, unparsed = []string{req.Command}, true
		}
		parts = p
	} else if req.URL != "" {
		parts = []string{req.URL}
	} else {
		parts = req.Paths
	}
	best := Decision{}
	bestSpec := -1
	consider := func(c compiled, eff Effect) {
		s := c.specificity()
		if eff.rank() > best.Effect.rank() || eff == best.Effect && s >= bestSpec {
			best, bestSpec = Decision{Effect: eff, Rule: c.Rule}, s
		}
	}
	// Deny and ask take any part; allow needs every part.
	covered := make([]bool, len(parts))
	var allowRule *compiled
	for i := range e.rules {
		c := e.rules[i]
		if !c.covers(req) {
			continue
		}
		if c.Kind != "" || !c.pat.HasArg {
			consider(c, c.Effect)
			continue
		}
		for j, part := range parts {
			if !c.matchPart(req, part) {
				continue
			}
			if c.Effect == Allow {
				covered[j] = true
				if allowRule == nil || c.specificity() >= allowRule.specificity() {
					allowRule = &e.rules[i]
				}
			} else {
				consider(c, c.Effect)
			}
		}
	}
	if unparsed {
		// Lines before a syntax error still run: deny and ask rules
		// also see each fragment between shell operators.
		for _, frag := range fragments(req.Command) {
			for _, c := range e.rules {
				if c.Kind == "" && c.pat.HasArg && c.Effect != Allow && c.covers(req) && c.cmd.MatchString(frag) {
					consider(c, c.Effect)
				}
			}
		}
	}
	if allowRule != nil && !unparsed && len(parts) > 0 && all(covered) {
		consider(*allowRule, Allow)
	}
	return best
}

func all(b []bool) bool {
	for _, v := range b {
		if !v {
			return false
		}
	}
	return true
}

func (c compiled) specificity() int {
	if c.Kind != "" {
		return 0
	}
	return c.pat.specificity()
}

// covers reports whether the rule names the call's tool (or its kind).
func (c compiled) covers(req Request) bool {
	if c.Kind != "" {
		return c.Kind == req.Kind
	}
	return c.pat.matchesTool(req.Tool)
}

func (c compiled) matchPart(req Request, part string) bool {
	switch {
	case req.Command != "":
		return c.cmd.MatchString(part)
	case req.URL != "":
		return matchURL(c.pat.Arg, c.cmd, part)
	}
	return matchPath(c.pat.Arg, part)
}

// fragments splits a command that does not parse at its shell operators.
func fragments(cmd string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(cmd, func(r rune) bool { return strings.ContainsRune(";&|()`$\n{}<>", r) }) {
		if f = strings.Join(strings.Fields(f), " "); f != "" {
			out = append(out, f)
		}
	}
	return out
}
