package tui

import (
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// pickItem is one row of a picker.
type pickItem struct {
	id     string // a session
	seq    int64  // a checkpoint
	title  string
	detail string
	mark   string // one column: "!" for a session with hazards
}

// picker is a filterable list that takes the screen (/sessions,
// /checkpoints).
type picker struct {
	title, hint string
	items       []pickItem
	pick        func(pickItem) tea.Cmd

	filter string
	shown  []int // indices of items matching the filter
	cursor int   // into shown
	top    int   // first of shown drawn

	// search, if set, looks for the filter in the items' content too: it
	// returns a command whose result calls found with the filter it
	// searched for and a snippet per matching item id.
	search func(filter string) tea.Cmd
	// found holds the snippets of the latest content search, for foundFor.
	found    map[string]string
	foundFor string
}

// setFound records the result of a content search for filter; a result
// for a filter the user has typed past is dropped.
func (p *picker) setFound(filter string, snippets map[string]string) {
	if filter != p.filter {
		return
	}
	p.found, p.foundFor = snippets, filter
	p.refilter()
}

// snippet is the content match shown for an item, "" if none.
func (p *picker) snippet(it pickItem) string {
	if p.foundFor != p.filter || p.filter == "" {
		return ""
	}
	return p.found[it.id]
}

// searchCmd starts a content search for the current filter.
func (p *picker) searchCmd() tea.Cmd {
	if p.search == nil || strings.TrimSpace(p.filter) == "" {
		return nil
	}
	return p.search(p.filter)
}

func (m *model) openPicker(p *picker) {
	p.refilter()
	m.mode, m.picker = modePicker, p
}

func (p *picker) refilter() {
	p.shown = p.shown[:0]
	f := strings.ToLower(p.filter)
	for i, it := range p.items {
		if f == "" || strings.Contains(strings.ToLower(it.title+" "+it.detail), f) || p.snippet(it) != "" {
			p.shown = append(p.shown, i)
		}
	}
	p.cursor = min(max(p.cursor, 0), max(len(p.shown)-1, 0))
}

func (m *model) pickerKey(k tea.KeyPressMsg) tea.Cmd {
	p := m.picker
	page := max(1, (m.height-5)/2-1)
	switch k.String() {
	case "esc":
		m.mode, m.picker = modeInput, nil
		return nil
	case "enter":
		if len(p.shown) == 0 {
			return nil
		}
		it := p.items[p.shown[p.cursor]]
		m.mode, m.picker = modeInput, nil
		return p.pick(it)
	case "up", "ctrl+p":
		p.cursor = max(p.cursor-1, 0)
	case "down", "ctrl+n":
		p.cursor = min(p.cursor+1, max(len(p.shown)-1, 0))
	case "pgup":
		p.cursor = max(p.cursor-page, 0)
	case "pgdown":
		p.cursor = min(p.cursor+page, max(len(p.shown)-1, 0))
	case "home":
		p.cursor = 0
	case "end":
		p.cursor = max(len(p.shown)-1, 0)
	case "backspace":
		if r := []rune(p.filter); len(r) > 0 {
			p.filter = string(r[:len(r)-1])
			p.refilter()
			return p.searchCmd()
		}
	default:
		if k.Text != "" {
			p.filter += k.Text
			p.refilter()
			return p.searchCmd()
		}
	}
	return nil
}

// view draws the picker in rows lines.
func (p *picker) view(m *model, rows int) []string {
	th := &m.theme
	w := m.width
	out := []string{th.user.Render(ansi.Truncate(p.title, w, "…"))}
	if p.filter == "" && p.search != nil {
		out = append(out, th.dim.Render("type to search titles and content"))
	} else if p.filter == "" {
		out = append(out, th.dim.Render("type to filter"))
	} else {
		out = append(out, "filter: "+p.filter)
	}
	out = append(out, m.rule(""))
	room := max(1, (rows-len(out)-1)/2) // items shown, two lines each
	if p.cursor < p.top {
		p.top = p.cursor
	}
	if p.cursor >= p.top+room {
		p.top = p.cursor - room + 1
	}
	if len(p.shown) == 0 {
		out = append(out, th.dim.Render("  nothing matches"))
	}
	for j := p.top; j < len(p.shown) && j < p.top+room; j++ {
		it := p.items[p.shown[j]]
		cur := "  "
		if j == p.cursor {
			cur = "› "
		}
		mark := it.mark
		if mark == "!" {
			mark = th.warn.Render(mark)
		}
		title := ansi.Truncate(it.title, max(1, w-4), "…")
		if j == p.cursor {
			title = th.sel.Render(title)
		}
		out = append(out, th.mark.Render(cur)+mark+" "+title)
		detail := it.detail
		if sn := p.snippet(it); sn != "" {
			detail = "“" + sn + "”"
		}
		out = append(out, th.dim.Render(ansi.Truncate("    "+detail, w, "…")))
	}
	for len(out) < rows-1 {
		out = append(out, "")
	}
	hint := p.hint
	if n := len(p.shown); n > room {
		hint = itoa(int64(p.cursor+1)) + "/" + itoa(int64(n)) + " · " + hint
	}
	return append(out[:rows-1], th.dim.Render(ansi.Truncate(hint, w, "…")))
}
