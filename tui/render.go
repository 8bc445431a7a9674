package tui

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"

	"charm.land/glamour/v2"
	gansi "charm.land/glamour/v2/ansi"
	"charm.land/glamour/v2/styles"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
)

// theme holds the styles of the screen. Without colour (NO_COLOR) every
// style is plain, and marks (›, ✓, ✗, …) carry the meaning colour would.
type theme struct {
	color bool

	user, mark, dim, err, warn, ok, add, del, tool, key, sel, status, rule lipgloss.Style

	mdStyle string // glamour's standard style
	mdJSON  []byte // or a style of its own (without colour)
}

func newTheme(color bool) theme {
	t := theme{color: color, mdStyle: styles.DarkStyle}
	plain := lipgloss.NewStyle()
	t.user, t.mark, t.dim, t.err, t.warn, t.ok = plain, plain, plain, plain, plain, plain
	t.add, t.del, t.tool, t.key, t.sel, t.status, t.rule = plain, plain, plain, plain, plain, plain, plain
	if !color {
		t.mdJSON = colorless(styles.DarkStyleConfig)
		return t
	}
	if s := os.Getenv("GLAMOUR_STYLE"); s != "" {
		t.mdStyle = s
	}
	t.user = plain.Bold(true)
	t.mark = plain.Foreground(lipgloss.Color("12")).Bold(true)
	t.dim = plain.Foreground(lipgloss.Color("8"))
	t.err = plain.Foreground(lipgloss.Color("9"))
	t.warn = plain.Foreground(lipgloss.Color("11")).Bold(true)
	t.ok = plain.Foreground(lipgloss.Color("10"))
	t.add = plain.Foreground(lipgloss.Color("2"))
	t.del = plain.Foreground(lipgloss.Color("1"))
	t.tool = plain.Bold(true)
	t.key = plain.Foreground(lipgloss.Color("14")).Bold(true)
	t.sel = plain.Reverse(true)
	t.status = plain.Foreground(lipgloss.Color("7")).Background(lipgloss.Color("236"))
	t.rule = plain.Foreground(lipgloss.Color("8"))
	return t
}

// noColor reports whether the environment asks for no colour
// (https://no-color.org: NO_COLOR set and not empty).
func noColor(env []string) bool {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "NO_COLOR="); ok && v != "" {
			return true
		}
	}
	return false
}

// Limits of the tool blocks.
const (
	resultLines = 4  // lines of a tool's output shown
	diffLines   = 8  // lines of each side of a diff shown
	diffRows    = 16 // lines of a unified diff shown
	syncMDLimit = 4096
)

// renderEntry renders e at width w. Markdown that is not rendered yet is
// shown as plain wrapped text (provisional).
func (m *model) renderEntry(e *entry, w int) (lines []string, provisional bool) {
	th := &m.theme
	switch e.kind {
	case kindUser:
		return prefixed(wrap(e.text, w-2), th.mark.Render("› "), "  ", th.user), false
	case kindAssistant:
		if e.md.lines != nil && e.md.width == w && e.md.version == e.version {
			return e.md.lines, false
		}
		if !e.async && !e.md.inflight && len(e.text) <= syncMDLimit {
			e.md = mdState{lines: m.markdown(e.text, w), width: w, version: e.version}
			return e.md.lines, false
		}
		if e.md.lines != nil && e.md.width == w {
			return e.md.lines, true // the last rendering, while the next one runs
		}
		return prefixed(wrap(e.text, w-2), "  ", "  ", lipgloss.NewStyle()), true
	case kindTool:
		return m.renderTool(e.tool, w), false
	case kindError:
		return prefixed(wrap(e.text, w-2), th.err.Render("✗ "), "  ", th.err), false
	case kindThinking:
		return prefixed(wrap(e.text, w-2), th.dim.Render("∴ "), "  ", th.dim), false
	default:
		return prefixed(wrap(e.text, w-2), th.dim.Render("· "), "  ", th.dim), false
	}
}

// markdown renders text with glamour at width w, on the calling goroutine.
func (m *model) markdown(text string, w int) []string {
	if m.glam == nil || m.glamWidth != w {
		r, err := newGlamour(&m.theme, w)
		if err != nil {
			return prefixed(wrap(text, w-2), "  ", "  ", lipgloss.NewStyle())
		}
		m.glam, m.glamWidth = r, w
	}
	return renderMarkdown(m.glam, text, w)
}

func newGlamour(th *theme, w int) (*glamour.TermRenderer, error) {
	style := glamour.WithStandardStyle(th.mdStyle)
	if th.mdJSON != nil {
		style = glamour.WithStylesFromJSONBytes(th.mdJSON)
	}
	return glamour.NewTermRenderer(style, glamour.WithWordWrap(max(w, 10)))
}

// colorless returns a glamour style as JSON without its colours (and
// without syntax highlighting), keeping bold, italics and layout: NO_COLOR
// asks for no colour, not for raw Markdown.
func colorless(cfg gansi.StyleConfig) []byte {
	b, err := json.Marshal(cfg)
	if err != nil {
		return nil
	}
	var v any
	if json.Unmarshal(b, &v) != nil {
		return nil
	}
	var strip func(v any)
	strip = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			delete(x, "color")
			delete(x, "background_color")
			delete(x, "chroma")
			delete(x, "theme")
			for _, y := range x {
				strip(y)
			}
		case []any:
			for _, y := range x {
				strip(y)
			}
		}
	}
	strip(v)
	b, err = json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}

// renderMarkdown renders with r and trims the blank lines glamour puts
// around the document and the padding it puts after each line.
func renderMarkdown(r *glamour.TermRenderer, text string, w int) []string {
	out, err := r.Render(text)
	if err != nil {
		return prefixed(wrap(text, w-2), "  ", "  ", lipgloss.NewStyle())
	}
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		// A tab is drawn as nothing by the terminal renderer: code blocks
		// keep their indentation as spaces.
		lines[i] = trimRight(expandTabs(l))
		if ansi.StringWidth(lines[i]) > w {
			lines[i] = ansi.Truncate(lines[i], w, "…")
		}
	}
	start, end := 0, len(lines)
	for start < end && blank(lines[start]) {
		start++
	}
	for end > start && blank(lines[end-1]) {
		end--
	}
	if start == end {
		return []string{""}
	}
	return lines[start:end:end]
}

// trimRight drops trailing spaces, also those wrapped in styles.
func trimRight(s string) string {
	if !strings.Contains(s, "\x1b") {
		return strings.TrimRight(s, " ")
	}
	if n := ansi.StringWidth(strings.TrimRight(ansi.Strip(s), " ")); n < ansi.StringWidth(s) {
		return ansi.Truncate(s, n, "")
	}
	return s
}

func blank(s string) bool { return strings.TrimSpace(ansi.Strip(s)) == "" }

// renderTool draws a tool call: a header (state mark, tool, arguments in
// short), a diff for edits and writes, and the result folded.
func (m *model) renderTool(c *toolCall, w int) []string {
	th := &m.theme
	var mark string
	switch c.state {
	case toolRequested, toolRunning:
		mark = th.dim.Render("…")
	case toolAsking:
		mark = th.warn.Render("?")
	case toolDone:
		mark = th.ok.Render("✓")
	case toolFailed:
		mark = th.err.Render("✗")
	case toolDenied:
		mark = th.err.Render("⊘")
	case toolUnknown:
		mark = th.warn.Render("!")
	case toolNotRun:
		mark = th.dim.Render("-")
	}
	in := decodeInput(c.input)
	head := mark + " " + th.tool.Render(c.name)
	if s := summary(c.name, in, c.input); s != "" {
		head += " " + s
	}
	lines := []string{ansi.Truncate(head, w, "…")}
	if d := callDiff(c); d != "" {
		lines = append(lines, m.unifiedView(d, w)...)
	} else {
		lines = append(lines, m.diff(c.name, in, w)...)
	}
	switch c.state {
	case toolAsking:
		lines = append(lines, th.warn.Render("  waiting for your approval"))
	case toolRunning:
		lines = append(lines, th.dim.Render("  running…"))
	case toolDenied:
		lines = append(lines, th.err.Render("  denied"))
	case toolUnknown:
		lines = append(lines, prefixed(wrap("cut off while it ran (the process stopped): its outcome is unknown and it was not re-run", w-4), "  ", "  ", th.warn)...)
	case toolNotRun:
		lines = append(lines, th.dim.Render("  not run: the turn ended first"))
	case toolDone, toolFailed:
		st := th.dim
		if c.state == toolFailed {
			st = th.err
		}
		lines = append(lines, fold(resultHead(c), w, st)...)
	}
	return lines
}

// fold shows the first resultLines lines of out, wrapped to the width.
func fold(out string, w int, st lipgloss.Style) []string {
	out = strings.TrimRight(ansi.Strip(out), "\n")
	if out == "" {
		return []string{st.Render("  ⎿ (no output)")}
	}
	raw := strings.Split(out, "\n")
	var rows []string
	used := 0 // raw lines wrapped into rows
	for _, l := range raw {
		if len(rows) >= resultLines {
			break
		}
		if limit := 4 * w * resultLines; len(l) > limit {
			l = strings.ToValidUTF8(l[:limit], "") // wrapping more would be wasted
		}
		rows = append(rows, wrap(l, w-4)...)
		used++
	}
	more := len(raw) - used
	if len(rows) > resultLines {
		rows = rows[:resultLines]
		more++ // the last one is cut
	}
	lines := make([]string, 0, len(rows)+1)
	for i, l := range rows {
		p := "    "
		if i == 0 {
			p = "  ⎿ "
		}
		lines = append(lines, st.Render(p+l))
	}
	if more > 0 {
		lines = append(lines, st.Render(fmt.Sprintf("    … %d more line%s", more, plural(more))))
	}
	return lines
}

// diff shows what an edit or a write will change.
func (m *model) diff(tool string, in map[string]any, w int) []string {
	th := &m.theme
	side := func(text string, sign string, st lipgloss.Style) []string {
		text = strings.TrimSuffix(text, "\n")
		all := strings.Split(text, "\n")
		var out []string
		for i, l := range all {
			if i == diffLines {
				out = append(out, th.dim.Render(fmt.Sprintf("    … %d more line%s", len(all)-i, plural(len(all)-i))))
				break
			}
			out = append(out, st.Render(ansi.Truncate("  "+sign+" "+expandTabs(l), w, "…")))
		}
		return out
	}
	switch tool {
	case "edit":
		old, ok1 := in["old_string"].(string)
		nw, ok2 := in["new_string"].(string)
		if !ok1 || !ok2 {
			return nil
		}
		var out []string
		if old != "" {
			out = append(out, side(old, "-", th.del)...)
		}
		if nw != "" {
			out = append(out, side(nw, "+", th.add)...)
		}
		return out
	case "write":
		content, ok := in["content"].(string)
		if !ok || content == "" {
			return nil
		}
		return side(content, "+", th.add)
	}
	return nil
}

func decodeInput(raw json.RawMessage) map[string]any {
	var in map[string]any
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &in)
	}
	return in
}

// summary is a tool call's arguments in short.
func summary(tool string, in map[string]any, raw json.RawMessage) string {
	str := func(k string) string { s, _ := in[k].(string); return s }
	switch tool {
	case "read", "write", "edit", "delete", "ls":
		s := str("path")
		if tool == "ls" && s == "" {
			s = "."
		}
		switch {
		case tool == "write":
			if c, ok := in["content"].(string); ok {
				n := strings.Count(strings.TrimSuffix(c, "\n"), "\n") + 1
				s += fmt.Sprintf(" (%d line%s)", n, plural(n))
			}
		case tool == "edit" && in["replace_all"] == true:
			s += " (all)"
		case tool == "read" && (in["offset"] != nil || in["limit"] != nil):
			s += fmt.Sprintf(" [%v:%v]", orDash(in["offset"]), orDash(in["limit"]))
		}
		return s
	case "bash":
		return oneLine(str("command"))
	case "todo":
		return todoSummary(in)
	case "glob", "grep":
		s := str("pattern")
		if p := str("path"); p != "" {
			s += " in " + p
		}
		return s
	}
	if len(raw) == 0 || string(raw) == "{}" {
		return ""
	}
	return oneLine(string(raw))
}

func orDash(v any) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprint(v)
}

// prefixed puts first before the first line and rest before the others,
// styling the text with st.
func prefixed(lines []string, first, rest string, st lipgloss.Style) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		p := rest
		if i == 0 {
			p = first
		}
		out[i] = p + st.Render(l)
	}
	return out
}

// wrap wraps plain text at w columns, at spaces (a word longer than a line
// is cut), keeping its line breaks and each line's indentation.
func wrap(s string, w int) []string {
	w = max(w, 4)
	var out []string
	for _, line := range strings.Split(expandTabs(strings.TrimRight(s, "\n")), "\n") {
		line = strings.TrimRight(line, " ")
		if ansi.StringWidth(line) <= w {
			out = append(out, line)
			continue
		}
		body := strings.TrimLeft(line, " ")
		indent := line[:min(len(line)-len(body), w/2)]
		iw := len(indent)
		cur, curW := indent, iw
		for _, word := range strings.Fields(body) {
			ww := ansi.StringWidth(word)
			if curW > iw && curW+1+ww > w {
				out = append(out, cur)
				cur, curW = indent, iw
			}
			if ww > w-iw {
				if curW > iw {
					out = append(out, cur)
				}
				pieces := strings.Split(ansi.Hardwrap(word, w-iw, true), "\n")
				for _, p := range pieces[:len(pieces)-1] {
					out = append(out, indent+p)
				}
				word = pieces[len(pieces)-1]
				cur, curW = indent, iw
				ww = ansi.StringWidth(word)
			}
			if curW > iw {
				cur += " "
				curW++
			}
			cur += word
			curW += ww
		}
		out = append(out, cur)
	}
	return out
}

func expandTabs(s string) string { return strings.ReplaceAll(s, "\t", "    ") }

// oneLine puts s on one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// short returns s on one line, cut to n columns.
func short(s string, n int) string { return ansi.Truncate(oneLine(s), n, "…") }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
