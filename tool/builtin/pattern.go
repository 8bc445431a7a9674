package builtin

import (
	"fmt"
	"path"
	"strings"
)

// globSet matches slash-separated relative paths against glob patterns:
// path.Match syntax per segment (* ? [...] \), a segment "**" matching any
// number of segments (none included), and {a,b} alternatives.
type globSet struct {
	pats [][]string // each pattern split into segments
}

// maxBraceExpansions bounds {a,b}{c,d}… expansion.
const maxBraceExpansions = 256

// compileGlob parses pattern. The error says what is wrong with it.
func compileGlob(pattern string) (*globSet, error) {
	if strings.TrimSpace(pattern) == "" {
		return nil, fmt.Errorf("empty glob pattern; give one such as \"**/*.go\"")
	}
	alts, err := expandBraces(pattern)
	if err != nil {
		return nil, err
	}
	g := &globSet{}
	for _, a := range alts {
		segs := splitGlob(a)
		for _, s := range segs {
			if s == "**" {
				continue
			}
			if _, err := path.Match(s, ""); err != nil {
				return nil, fmt.Errorf("bad glob pattern %q: segment %q is malformed (check [ ] brackets and trailing \\)", pattern, s)
			}
		}
		g.pats = append(g.pats, segs)
	}
	return g, nil
}

// splitGlob splits a pattern into segments, dropping empty and "." ones.
func splitGlob(p string) []string {
	var segs []string
	for s := range strings.SplitSeq(p, "/") {
		if s != "" && s != "." {
			segs = append(segs, s)
		}
	}
	return segs
}

// match reports whether the slash-separated relative path p matches.
func (g *globSet) match(p string) bool {
	segs := splitGlob(p)
	for _, pat := range g.pats {
		if end := advance(pat, segs); end[len(pat)] {
			return true
		}
	}
	return false
}

// mayContain reports whether some path below directory dir could match, so
// a walk can skip directories that cannot.
func (g *globSet) mayContain(dir string) bool {
	segs := splitGlob(dir)
	for _, pat := range g.pats {
		states := advance(pat, segs)
		for j := range len(pat) {
			if states[j] {
				return true
			}
		}
	}
	return false
}

// advance runs the pattern as an automaton over segs. States are positions
// in pat; the result says which are reachable after all of segs. The work is
// len(pat)*len(segs), whatever the number of "**".
func advance(pat, segs []string) []bool {
	cur := make([]bool, len(pat)+1)
	next := make([]bool, len(pat)+1)
	cur[0] = true
	closeStars(pat, cur)
	for _, s := range segs {
		clear(next)
		for j, on := range cur[:len(pat)] {
			if !on {
				continue
			}
			if pat[j] == "**" {
				next[j] = true // ** consumes this segment and may go on
				continue
			}
			if ok, _ := path.Match(pat[j], s); ok {
				next[j+1] = true
			}
		}
		closeStars(pat, next)
		cur, next = next, cur
	}
	return cur
}

// closeStars adds the states reachable by letting a "**" match nothing.
func closeStars(pat []string, states []bool) {
	for j := range pat {
		if states[j] && pat[j] == "**" {
			states[j+1] = true
		}
	}
}

// expandBraces turns "a{b,c}d" into ["abd", "acd"], nested braces
// included. A brace without a partner is literal.
func expandBraces(p string) ([]string, error) {
	open := -1
	depth := 0
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++
		case '{':
			if depth == 0 {
				open = i
			}
			depth++
		case '}':
			if depth == 0 {
				continue
			}
			depth--
			if depth > 0 {
				continue
			}
			var out []string
			for _, alt := range splitTopLevel(p[open+1 : i]) {
				rest, err := expandBraces(p[:open] + alt + p[i+1:])
				if err != nil {
					return nil, err
				}
				out = append(out, rest...)
				if len(out) > maxBraceExpansions {
					return nil, fmt.Errorf("glob pattern %q expands to more than %d alternatives; use fewer {a,b} groups", p, maxBraceExpansions)
				}
			}
			return out, nil
		}
	}
	return []string{p}, nil
}

// splitTopLevel splits s at commas outside nested braces.
func splitTopLevel(s string) []string {
	var parts []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '{':
			depth++
		case '}':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, s[start:])
}

// literalPrefix splits the leading segments of pattern that hold no glob
// syntax from the rest, so a walk can start below them: "src/pkg/**/*.go"
// gives "src/pkg" and "**/*.go".
func literalPrefix(pattern string) (prefix, rest string) {
	segs := strings.Split(pattern, "/")
	i := 0
	for i < len(segs)-1 && !strings.ContainsAny(segs[i], `*?[]{}\`) {
		i++
	}
	return strings.Join(segs[:i], "/"), strings.Join(segs[i:], "/")
}
