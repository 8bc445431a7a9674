package tui

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/charmbracelet/x/ansi"
	"github.com/lite-agent/lite-agent/tool/diff"
)

// callDiff is the unified diff of an edit or a write: the one its approval
// request carried while it waits, the one its result ends with once done.
func callDiff(c *toolCall) string {
	if _, d := splitResult(c); d != "" {
		return d
	}
	return c.diff
}

// resultHead is what the folded result of a call shows: for a call whose
// result ends with a diff (drawn above), the line before it.
func resultHead(c *toolCall) string {
	head, _ := splitResult(c)
	return head
}

// splitResult splits a finished write's or edit's output into its first
// line and the diff after it ("" when there is none).
func splitResult(c *toolCall) (head, unified string) {
	if (c.name == "edit" || c.name == "write") && c.state == toolDone {
		if h, rest, ok := strings.Cut(c.output, "\n"); ok && strings.HasPrefix(rest, "--- ") {
			return h, rest
		}
	}
	return c.output, ""
}

// unifiedView draws a unified diff: each line with its line number and
// sign, removed lines and added lines in their colours, hunks apart by
// "⋮", at most diffRows lines, tabs shown as four spaces.
func (m *model) unifiedView(unified string, w int) []string {
	th := &m.theme
	lines := diff.Parse(unified)
	width := 1
	for _, l := range lines {
		width = max(width, len(strconv.Itoa(max(l.Old, l.New))))
	}
	var out []string
	hunks := 0
	for i, l := range lines {
		if len(out) == diffRows {
			rest := 0
			for _, r := range lines[i:] {
				if r.Kind != diff.Header && r.Kind != diff.Hunk {
					rest++
				}
			}
			out = append(out, th.dim.Render(fmt.Sprintf("    … %d more diff line%s", rest, plural(rest))))
			break
		}
		var row string
		st := th.dim
		switch l.Kind {
		case diff.Header:
			continue
		case diff.Hunk:
			if hunks++; hunks == 1 {
				continue
			}
			row = fmt.Sprintf("  %*s ⋮", width, "")
		case diff.Removed:
			row, st = fmt.Sprintf("  %*d - %s", width, l.Old, expandTabs(l.Text)), th.del
		case diff.Added:
			row, st = fmt.Sprintf("  %*d + %s", width, l.New, expandTabs(l.Text)), th.add
		case diff.Same:
			row = fmt.Sprintf("  %*d   %s", width, l.New, expandTabs(l.Text))
		default:
			row = "  " + l.Text
		}
		out = append(out, st.Render(ansi.Truncate(row, w, "…")))
	}
	return out
}
