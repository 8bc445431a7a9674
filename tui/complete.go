package tui

import (
	"context"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/lite-agent/lite-agent/tool/walk"
)

// maxCandidates caps what a completion offers and the hint lists.
const (
	maxCandidates  = 500
	hintCandidates = 12
)

// complete completes the word before the cursor when tab is pressed: a
// path after @ (what the workdir's ignore files leave visible, as glob
// and @ mentions see it), a command at the start of the input (the
// built-in ones and the user's .lite-agent/commands). One candidate is
// inserted whole; several insert what they share and are listed in the
// hint. It reports false when the word is neither, and the key goes to
// the input.
func (m *model) complete() bool {
	lines := strings.Split(m.input.Value(), "\n")
	row := m.input.Line()
	if row >= len(lines) {
		return false
	}
	runes := []rune(lines[row])
	before := string(runes[:min(m.input.Column(), len(runes))])
	start := strings.LastIndexAny(before, " \t") + 1
	word := before[start:]
	var cands []string
	switch {
	case strings.HasPrefix(word, "@"):
		cands = m.pathCandidates(word[1:])
	case row == 0 && start == 0 && strings.HasPrefix(word, "/"):
		cands = m.commandCandidates(word)
	default:
		return false
	}
	if len(cands) == 0 {
		m.hint = "nothing to complete " + word + " with"
		return true
	}
	common := cands[0]
	for _, c := range cands[1:] {
		common = commonPrefix(common, c)
	}
	insert := strings.TrimPrefix(common, word)
	if len(cands) == 1 && !strings.HasSuffix(common, "/") {
		insert += " "
	}
	if insert != "" {
		m.input.InsertString(insert)
	}
	if len(cands) > 1 {
		shown := cands[:min(len(cands), hintCandidates)]
		m.hint = strings.Join(shown, "  ")
		if len(cands) > len(shown) {
			m.hint += "  … (" + itoa(int64(len(cands))) + ")"
		}
	}
	return true
}

// pathCandidates returns "@"+path for the workdir's entries that prefix
// names: the entries of its directory whose names start with its last
// part, directories ending in /. Ignored and hidden names are left out
// unless the part typed starts with a dot; paths leaving the workdir have
// none.
func (m *model) pathCandidates(prefix string) []string {
	dir, base := path.Split(prefix)
	start := path.Clean("./" + dir)
	if path.IsAbs(dir) || start == ".." || strings.HasPrefix(start, "../") {
		return nil
	}
	var out []string
	opts := &walk.Options{Hidden: strings.HasPrefix(base, ".")}
	err := walk.Walk(context.Background(), os.DirFS(m.agent.Workdir()), start, opts, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == start {
			if err != nil && p == start {
				return fs.SkipAll
			}
			return nil
		}
		name := d.Name()
		if strings.HasPrefix(name, base) {
			c := "@" + dir + name
			if d.IsDir() {
				c += "/"
			}
			out = append(out, c)
		}
		if len(out) >= maxCandidates {
			return fs.SkipAll
		}
		if d.IsDir() {
			return fs.SkipDir
		}
		return nil
	})
	if err != nil {
		return nil
	}
	return out
}

// commandCandidates returns the commands starting with word: the
// built-in ones and the user's.
func (m *model) commandCandidates(word string) []string {
	var out []string
	for _, c := range builtinCommands() {
		if strings.HasPrefix("/"+c, word) {
			out = append(out, "/"+c)
		}
	}
	cmds, _ := m.userCommands()
	for _, c := range cmds {
		if strings.HasPrefix("/"+c.Name, word) {
			out = append(out, "/"+c.Name)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// builtinCommands are the names of the client's own commands, as help
// lists them.
func builtinCommands() []string {
	out := []string{"quit"}
	for _, h := range help {
		if name, ok := strings.CutPrefix(h.key, "/"); ok && !strings.Contains(name, "__") {
			out = append(out, strings.Fields(name)[0])
		}
	}
	return out
}

func commonPrefix(a, b string) string {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return a[:n]
}
