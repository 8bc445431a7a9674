// Package diff makes the unified diffs the file tools show for what they
// change (go-udiff's Myers diff, three lines of context), and reads them
// back into numbered lines for the clients that draw them.
package diff

import (
	"fmt"
	"strconv"
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"
)

// Context is the number of unchanged lines shown around each change.
const Context = 3

// Unified returns the unified diff that turns old into new, both the
// content of the file at path: "--- path", "+++ path", then hunks with
// their "@@ -l,n +l,n @@" headers. A file that does not exist yet is the
// empty old. It returns "" when old and new are equal.
func Unified(path, old, new string) string {
	if old == new {
		return ""
	}
	edits := udiff.Lines(old, new)
	out, err := udiff.ToUnified(path, path, old, edits, Context)
	if err != nil {
		// Lines' edits always apply to old; keep a readable answer anyway.
		return fmt.Sprintf("--- %s\n+++ %s\n(diff unavailable: %v)\n", path, path, err)
	}
	return out
}

// Stat counts the lines a unified diff adds and removes.
func Stat(unified string) (added, removed int) {
	for _, l := range Parse(unified) {
		switch l.Kind {
		case Added:
			added++
		case Removed:
			removed++
		}
	}
	return added, removed
}

// Kind says what a line of a diff is.
type Kind byte

// Kinds of diff lines.
const (
	Header  Kind = 'h' // "--- a" or "+++ b"
	Hunk    Kind = '@' // a hunk header: where the lines below are
	Same    Kind = ' ' // a context line, in both files
	Added   Kind = '+'
	Removed Kind = '-'
	Note    Kind = '\\' // "\ No newline at end of file", or text that is not a diff line
)

// Line is one line of a unified diff with its place in the files: Old is
// its line number in the old file (removed and context lines), New in the
// new one (added and context lines), 0 where it has none.
type Line struct {
	Kind     Kind
	Old, New int
	Text     string // without the leading sign and the line ending
}

// Parse reads a unified diff, as Unified makes it, into lines with their
// line numbers. Text that is not part of a diff comes back as Note lines,
// so nothing is lost.
func Parse(unified string) []Line {
	var out []Line
	old, nw := 0, 0
	inHunk := false
	for raw := range strings.Lines(unified) {
		text := strings.TrimSuffix(raw, "\n")
		switch {
		case !inHunk && (strings.HasPrefix(text, "--- ") || strings.HasPrefix(text, "+++ ")):
			out = append(out, Line{Kind: Header, Text: text})
		case strings.HasPrefix(text, "@@ "):
			o, n, ok := hunkStart(text)
			if ok {
				old, nw, inHunk = o, n, true
			}
			out = append(out, Line{Kind: Hunk, Text: text})
		case inHunk && strings.HasPrefix(text, "+"):
			out = append(out, Line{Kind: Added, New: nw, Text: text[1:]})
			nw++
		case inHunk && strings.HasPrefix(text, "-"):
			out = append(out, Line{Kind: Removed, Old: old, Text: text[1:]})
			old++
		case inHunk && strings.HasPrefix(text, " "):
			out = append(out, Line{Kind: Same, Old: old, New: nw, Text: text[1:]})
			old++
			nw++
		default:
			out = append(out, Line{Kind: Note, Text: text})
		}
	}
	return out
}

// hunkStart reads the first old and new line numbers of "@@ -a,b +c,d @@".
func hunkStart(h string) (old, new int, ok bool) {
	f := strings.Fields(h)
	if len(f) < 3 || !strings.HasPrefix(f[1], "-") || !strings.HasPrefix(f[2], "+") {
		return 0, 0, false
	}
	num := func(s string) (int, bool) {
		s, _, _ = strings.Cut(s[1:], ",")
		n, err := strconv.Atoi(s)
		return n, err == nil
	}
	o, ok1 := num(f[1])
	n, ok2 := num(f[2])
	// An empty side ("-0,0") starts before line 1.
	return max(o, 1), max(n, 1), ok1 && ok2
}

// Numbered draws a unified diff for a terminal without colours: each line
// with its line number (the old file's for a removed line, the new file's
// otherwise) and its sign, file headers dropped, hunks apart by "⋮". Tabs
// are kept. At most maxLines lines are drawn (0: all), then a count of
// the rest.
func Numbered(unified string, maxLines int) string {
	lines := Parse(unified)
	width := 1
	for _, l := range lines {
		width = max(width, len(strconv.Itoa(max(l.Old, l.New))))
	}
	var b strings.Builder
	drawn, hunks := 0, 0
	for i, l := range lines {
		if l.Kind == Header {
			continue
		}
		if maxLines > 0 && drawn == maxLines {
			fmt.Fprintf(&b, "… %d more diff lines\n", countDrawn(lines[i:]))
			break
		}
		switch l.Kind {
		case Hunk:
			if hunks++; hunks > 1 {
				fmt.Fprintf(&b, "%*s ⋮\n", width, "")
				drawn++
			}
			continue
		case Note:
			b.WriteString(l.Text + "\n")
		case Removed:
			fmt.Fprintf(&b, "%*d - %s\n", width, l.Old, l.Text)
		default:
			fmt.Fprintf(&b, "%*d %c %s\n", width, l.New, byte(l.Kind), l.Text)
		}
		drawn++
	}
	return b.String()
}

// countDrawn counts the lines Numbered would draw of lines.
func countDrawn(lines []Line) int {
	n := 0
	for _, l := range lines {
		if l.Kind != Header && l.Kind != Hunk {
			n++
		}
	}
	return n
}
