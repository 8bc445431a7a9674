package tui

// anchor is the transcript's scroll position: following the end, or the
// first line shown given as an entry and a line of its rendering. Only the
// entries in view are ever rendered, so drawing and scrolling cost the
// same for ten messages as for ten thousand.
type anchor struct {
	follow bool
	idx    int // the entry drawn first
	off    int // its first line drawn
}

// lines returns entry i's rendering at the current width, with a blank
// line after it, from the cache when it is still valid.
func (m *model) lines(i int) []string {
	e := m.tr.entries[i]
	w := m.width
	if e.lines != nil && e.linesWidth == w && e.linesVersion == e.version {
		if e.provisional && !e.md.inflight && !e.md.ticking {
			m.wantMD = append(m.wantMD, e)
		}
		return e.lines
	}
	body, provisional := m.renderEntry(e, w)
	out := make([]string, len(body)+1)
	copy(out, body)
	e.lines, e.linesWidth, e.linesVersion, e.provisional = out, w, e.version, provisional
	if provisional && !e.md.inflight && !e.md.ticking {
		m.wantMD = append(m.wantMD, e)
	}
	if _, ok := m.cached[e]; !ok {
		m.cached[e] = i
		if len(m.cached) > cacheCap {
			m.evict()
		}
	}
	return out
}

// evict drops the renderings of entries far from the last window drawn.
func (m *model) evict() {
	lo, hi := m.lastRange[0]-cacheKeep, m.lastRange[1]+cacheKeep
	for e, i := range m.cached {
		if i >= lo && i <= hi || e.live || e.md.inflight {
			continue
		}
		e.lines, e.linesWidth = nil, 0
		e.md.lines = nil
		delete(m.cached, e)
	}
}

// resetCache forgets every rendering (the transcript was replaced).
func (m *model) resetCache() {
	clear(m.cached)
	m.lastRange = [2]int{}
}

// window returns the rows of the transcript to draw, exactly rows of them,
// and whether more lines follow below.
func (m *model) window(rows int) (out []string, below bool) {
	n := len(m.tr.entries)
	out = make([]string, 0, rows)
	if n == 0 || rows <= 0 {
		return pad(out, rows), false
	}
	if !m.view.follow {
		i, off := min(m.view.idx, n-1), m.view.off
		first := i
		for ; i < n; i++ {
			ls := m.lines(i)
			if off < len(ls) {
				take := min(len(ls)-off, rows-len(out))
				out = append(out, ls[off:off+take]...)
				if len(out) == rows {
					m.lastRange = [2]int{first, i}
					return out, off+take < len(ls) || i < n-1
				}
			}
			off = 0
		}
		// The end is in view: draw as when following.
		out = out[:0]
	}
	// Following: walk back from the last entry until the screen is full.
	var parts [][]string
	need := rows
	i := n - 1
	for ; i >= 0 && need > 0; i-- {
		ls := m.lines(i)
		if len(ls) > need {
			ls = ls[len(ls)-need:]
		}
		parts = append(parts, ls)
		need -= len(ls)
	}
	m.lastRange = [2]int{i + 1, n - 1}
	for j := len(parts) - 1; j >= 0; j-- {
		out = append(out, parts[j]...)
	}
	return pad(out, rows), false
}

// linesAfter reports whether, drawing from entry first at line off, lines
// remain below a window of rows.
func (m *model) linesAfter(first, off, rows int) bool {
	total := -off
	for i := first; i < len(m.tr.entries); i++ {
		total += len(m.lines(i))
		if total > rows {
			return true
		}
	}
	return false
}

func pad(out []string, rows int) []string {
	for len(out) < rows {
		out = append(out, "")
	}
	return out
}

// top returns the anchor of the first line shown.
func (m *model) top(rows int) anchor {
	if !m.view.follow {
		return m.view
	}
	need := rows
	for i := len(m.tr.entries) - 1; i >= 0; i-- {
		l := len(m.lines(i))
		if l >= need {
			return anchor{idx: i, off: l - need}
		}
		need -= l
	}
	return anchor{}
}

// scrollUp moves the view k lines up.
func (m *model) scrollUp(k int) {
	if len(m.tr.entries) == 0 {
		return
	}
	a := m.top(m.transcriptRows())
	a.follow = false
	a.off -= k
	for a.off < 0 && a.idx > 0 {
		a.idx--
		a.off += len(m.lines(a.idx))
	}
	a.off = max(a.off, 0)
	m.view = a
}

// scrollDown moves the view k lines down; reaching the end follows it
// again.
func (m *model) scrollDown(k int) {
	if m.view.follow {
		return
	}
	a := m.view
	a.off += k
	for a.idx < len(m.tr.entries)-1 && a.off >= len(m.lines(a.idx)) {
		a.off -= len(m.lines(a.idx))
		a.idx++
	}
	if !m.linesAfter(a.idx, a.off, m.transcriptRows()) {
		m.view = anchor{follow: true}
		return
	}
	m.view = a
}
