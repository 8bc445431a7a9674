package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	liteagent "github.com/lite-agent/lite-agent"
	cfgpkg "github.com/lite-agent/lite-agent/config"
	"github.com/lite-agent/lite-agent/mcp"
	"github.com/lite-agent/lite-agent/permission"
	"github.com/lite-agent/lite-agent/tool"
)

// approvalSettle is how long an approval must have been on a terminal
// before a line counts as its answer: lines that arrive sooner were typed
// before the question appeared.
const approvalSettle = 600 * time.Millisecond

// approvalChoice is a line-mode answer to an approval.
type approvalChoice struct {
	key    string // y, a, e, p, s or n
	reason string // with n: what the model is told
}

// parseChoice reads an answer; ok is false for any other text, which is
// never taken as an answer.
func parseChoice(line string) (approvalChoice, bool) {
	l := strings.TrimSpace(line)
	low := strings.ToLower(l)
	switch low {
	case "y", "yes":
		return approvalChoice{key: "y"}, true
	case "a", "always":
		return approvalChoice{key: "a"}, true
	case "e", "exact":
		return approvalChoice{key: "e"}, true
	case "p", "pattern":
		return approvalChoice{key: "p"}, true
	case "s", "save":
		return approvalChoice{key: "s"}, true
	case "n", "no":
		return approvalChoice{key: "n"}, true
	}
	for _, pre := range []string{"n ", "no ", "no,", "no:", "n:"} {
		if strings.HasPrefix(low, pre) {
			return approvalChoice{key: "n", reason: strings.TrimSpace(l[len(pre):])}, true
		}
	}
	return approvalChoice{}, false
}

// decide turns a choice into the agent's decision, adding the rules it
// names (for this run, or saved to the project's config file).
func (c *config) decide(ch approvalChoice, req liteagent.ApprovalRequest, stderr io.Writer) (liteagent.Decision, error) {
	if (ch.key == "e" || ch.key == "p" || ch.key == "s") && (c.rules == nil || c.settings == nil) {
		ch.key = "y" // no rules in this run (the demo): allow once
	}
	sug := permission.Suggest(req.PermissionRequest())
	add := func(patterns []string, source string) {
		for _, p := range patterns {
			if err := c.rules.Add(permission.Rule{Effect: permission.Allow, Pattern: p, Source: source}); err != nil {
				fmt.Fprintln(stderr, "could not add the rule:", err)
			}
		}
	}
	switch ch.key {
	case "y":
		return liteagent.AllowOnce, nil
	case "a":
		return liteagent.AllowSession, nil
	case "e":
		add(sug.Exact, "session")
		return liteagent.AllowOnce, nil
	case "p":
		add(sug.Pattern, "session")
		return liteagent.AllowOnce, nil
	case "s":
		path := c.settings.ProjectFile
		for _, p := range sug.Pattern {
			if err := cfgpkg.SaveRule(path, "allow", p); err != nil {
				fmt.Fprintln(stderr, oneLine(err.Error()), "(allowed for this session only)")
			}
		}
		add(sug.Pattern, "project "+path)
		fmt.Fprintf(stderr, "saved allow %s to %s\n", strings.Join(sug.Pattern, ", "), path)
		return liteagent.AllowOnce, nil
	}
	if ch.reason != "" {
		return liteagent.Deny, &liteagent.DeniedError{Reason: ch.reason}
	}
	return liteagent.Deny, nil
}

// approvalQuestion is the line mode's question for req.
func (c *config) approvalQuestion(req liteagent.ApprovalRequest) string {
	what := req.Tool + " " + short(string(req.Input), 120)
	if req.Diff != "" {
		what = req.Tool + " " + strings.Join(req.Paths, ", ") // the diff is shown above the question
	}
	if req.Kind == tool.KindNetwork {
		what = req.Tool + " " + short(req.PermissionRequest().URL, 400)
	}
	if req.Server != "" {
		_, name, _ := mcp.SplitToolName(req.Tool)
		what = fmt.Sprintf("MCP server %s's tool %s with %s", req.Server, name, short(string(req.Input), 400))
	}
	q := fmt.Sprintf("allow %s?\n  [y] once  [a] every %s call this session", what, req.Tool)
	if c.rules != nil && c.settings != nil {
		sug := permission.Suggest(req.PermissionRequest())
		q += fmt.Sprintf("  [e] exactly %s  [p] %s this session  [s] save %s to %s",
			strings.Join(sug.Exact, " "), strings.Join(sug.Pattern, " "), strings.Join(sug.Pattern, " "), c.settings.ProjectFile)
	}
	return q + "  [n] no (n REASON tells the model why): "
}

// approvalAnswer asks q and returns the first line that is an answer.
// Other lines, and on a terminal any line that arrives before the
// question has been shown for approvalSettle, are kept as the next
// prompts: text typed ahead or by mistake never answers an approval.
func (m *lineMode) approvalAnswer(ctx context.Context, q string) (approvalChoice, error) {
	m.question(q)
	shown := time.Now()
	for {
		select {
		case l, ok := <-m.lines:
			if !ok {
				return approvalChoice{}, io.EOF
			}
			ch, isAnswer := parseChoice(l)
			early := m.std.Interactive && time.Since(shown) < approvalSettle
			if isAnswer && !early {
				return ch, nil
			}
			if strings.TrimSpace(l) != "" {
				m.pending = append(m.pending, l)
				fmt.Fprintf(m.std.Stderr, "\n(kept %q as your next prompt; it does not answer the question)\n", short(l, 60))
			}
			m.question(q)
		case <-ctx.Done():
			fmt.Fprintln(m.std.Stderr)
			return approvalChoice{}, ctx.Err()
		}
	}
}
