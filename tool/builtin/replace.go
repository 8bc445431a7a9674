package builtin

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Errors of the edit matcher.
var (
	errEmptyOld = errors.New("old_string is empty; give the exact text to replace (to create a file, use write)")
	errNoChange = errors.New("old_string and new_string are the same, so the edit would change nothing; give the new text in new_string")
)

// notFoundError: old_string is not in the file. Hint says what is close.
type notFoundError struct{ hint string }

func (e *notFoundError) Error() string { return "old_string was not found. " + e.hint }

// notUniqueError: old_string is in the file more than once.
type notUniqueError struct {
	count int
	lines []int // line numbers of the first few matches
}

func (e *notUniqueError) Error() string {
	ls := make([]string, len(e.lines))
	for i, l := range e.lines {
		ls[i] = fmt.Sprint(l)
	}
	more := ""
	if e.count > len(e.lines) {
		more = ", …"
	}
	return fmt.Sprintf("old_string matches %d places (at lines %s%s); include more of the surrounding lines in old_string so it matches exactly one place, or set replace_all to true to change every occurrence",
		e.count, strings.Join(ls, ", "), more)
}

// replacement is the outcome of a successful replace.
type replacement struct {
	out   string
	count int // occurrences replaced
	start int // byte offset in out of the first inserted new text
	size  int // length of the inserted new text
	crlf  bool
}

// replace replaces old with new in content: the one occurrence, or every
// non-overlapping one if all is set. Matching is exact, with one exception:
// when the file uses CRLF line endings and old has bare LF endings that only
// match as CRLF, old and new are converted to CRLF first (crlf is then set).
//
// Errors: errEmptyOld, errNoChange, *notFoundError (with a
// hint), *notUniqueError (if more than one occurrence, overlapping ones
// included, and not all).
func replace(content, old, new string, all bool) (replacement, error) {
	switch {
	case old == "":
		return replacement{}, errEmptyOld
	case old == new:
		return replacement{}, errNoChange
	}
	n := countOverlapping(content, old)
	crlf := false
	if n == 0 && strings.Contains(old, "\n") && !strings.Contains(old, "\r") && strings.Contains(content, "\r\n") {
		o := strings.ReplaceAll(old, "\n", "\r\n")
		if m := countOverlapping(content, o); m > 0 {
			old, n, crlf = o, m, true
			if !strings.Contains(new, "\r") {
				new = strings.ReplaceAll(new, "\n", "\r\n")
			}
			if old == new {
				return replacement{}, errNoChange
			}
		}
	}
	if n == 0 {
		return replacement{}, &notFoundError{hint: nearMiss(content, old)}
	}
	if n > 1 && !all {
		return replacement{}, &notUniqueError{count: n, lines: matchLines(content, old, 5)}
	}
	i := strings.Index(content, old)
	if all {
		return replacement{out: strings.ReplaceAll(content, old, new), count: strings.Count(content, old), start: i, size: len(new), crlf: crlf}, nil
	}
	return replacement{out: content[:i] + new + content[i+len(old):], count: 1, start: i, size: len(new), crlf: crlf}, nil
}

// countOverlapping counts occurrences of sub in s, overlapping ones too:
// "aa" is in "aaa" twice, which makes it ambiguous.
func countOverlapping(s, sub string) int {
	n := 0
	for i := 0; i <= len(s); {
		j := strings.Index(s[i:], sub)
		if j < 0 {
			break
		}
		n++
		i += j + 1
	}
	return n
}

// matchLines returns the 1-based line numbers of the first max occurrences
// of sub in s.
func matchLines(s, sub string, max int) []int {
	var lines []int
	line, from := 1, 0
	for i := 0; i <= len(s) && len(lines) < max; {
		j := strings.Index(s[i:], sub)
		if j < 0 {
			break
		}
		line += strings.Count(s[from:i+j], "\n")
		from = i + j
		lines = append(lines, line)
		i += j + 1
	}
	return lines
}

var lineNumberPrefix = regexp.MustCompile(`^\s*\d+\t`)

// nearMiss explains why old is not in content, pointing at the closest
// text, so the model can fix old_string without guessing.
func nearMiss(content, old string) string {
	oldLines := trimBlankEnds(strings.Split(old, "\n"))
	if len(oldLines) == 0 {
		return "old_string is only whitespace; include some of the text around the place to change."
	}
	numbered := 0
	for _, l := range oldLines {
		if lineNumberPrefix.MatchString(l) {
			numbered++
		}
	}
	if numbered == len(oldLines) {
		return "old_string seems to include the line numbers that read shows (\"  12\\t\"); they are not part of the file, so leave them out."
	}
	fileLines := strings.Split(content, "\n")
	want := make([]string, len(oldLines))
	for i, l := range oldLines {
		want[i] = strings.TrimSpace(l)
	}
	have := make([]string, len(fileLines))
	for i, l := range fileLines {
		have[i] = strings.TrimSpace(l)
	}

	// Best run of consecutive lines that match when whitespace at line
	// ends is ignored.
	bestStart, bestLen := -1, 0
	for i := range have {
		k := 0
		for k < len(want) && i+k < len(have) && have[i+k] == want[k] {
			k++
		}
		if k > bestLen {
			bestStart, bestLen = i, k
		}
		if k == len(want) {
			break
		}
	}
	if bestLen == len(want) {
		return fmt.Sprintf("It matches lines %d-%d if whitespace at the start and end of lines is ignored, so the indentation, trailing spaces or tabs differ; copy those lines exactly as read shows them.", bestStart+1, bestStart+len(want))
	}
	if bestLen > 0 {
		at := bestStart + bestLen
		fileHas := "the end of the file"
		if at < len(fileLines) {
			fileHas = fmt.Sprintf("%q", clip(strings.TrimRight(fileLines[at], "\r"), 120))
		}
		return fmt.Sprintf("Its first %s match at line %d, but then the file has %s where old_string has %q; read the file again around line %d and copy the current text.",
			plural(bestLen, "line"), bestStart+1, fileHas, clip(oldLines[bestLen], 120), bestStart+1)
	}
	first := ""
	for _, w := range want {
		if w != "" {
			first = w
			break
		}
	}
	if line, ok := closestLine(have, first); ok {
		return fmt.Sprintf("Its first line is not in the file; the most similar line is %d: %q. Read the file again and copy the text exactly.", line+1, clip(strings.TrimRight(fileLines[line], "\r"), 120))
	}
	return "Nothing in the file resembles it; read the file again to see its current content."
}

func trimBlankEnds(lines []string) []string {
	for len(lines) > 0 && strings.TrimSpace(lines[0]) == "" {
		lines = lines[1:]
	}
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// closestLine finds the line holding the text most similar to want (the
// best-matching stretch of the line, so want may be part of a line), if it is
// at least half similar. The work is bounded for huge files.
func closestLine(lines []string, want string) (int, bool) {
	const maxLen, budget = 400, 5_000_000
	want = clip(want, maxLen)
	if want == "" {
		return 0, false
	}
	var wantBag [256]int
	for i := range len(want) {
		wantBag[want[i]]++
	}
	best, bestScore, spent := -1, 0.0, 0
	for i, l := range lines {
		l = clip(l, maxLen)
		if 2*len(l) < len(want) {
			continue
		}
		// Bytes of want that l lacks each cost an edit: a cheap lower
		// bound that skips most lines before the quadratic distance.
		var bag [256]int
		for j := range len(l) {
			bag[l[j]]++
		}
		lacking := 0
		for c, n := range wantBag {
			lacking += max(n-bag[c], 0)
		}
		if bound := 1 - float64(lacking)/float64(len(want)); bound < 0.5 || bound <= bestScore {
			continue
		}
		if spent += len(l) * len(want); spent > budget {
			break
		}
		score := 1 - float64(substringDistance(want, l))/float64(len(want))
		if score > bestScore {
			best, bestScore = i, score
		}
	}
	return best, best >= 0 && bestScore >= 0.5
}

// substringDistance is the least byte edit distance between want and any
// stretch of text.
func substringDistance(want, text string) int {
	prev := make([]int, len(text)+1) // row 0: any start in text is free
	cur := make([]int, len(text)+1)
	for i := 1; i <= len(want); i++ {
		cur[0] = i
		for j := 1; j <= len(text); j++ {
			cost := 1
			if want[i-1] == text[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return slices.Min(prev)
}

// clip cuts s to at most n bytes at a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return string(cutRunes([]byte(s), n)) + "…"
}
