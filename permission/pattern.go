package permission

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"
)

// Pattern is a parsed rule pattern: TOOL or TOOL(ARG).
type Pattern struct {
	Tool   string // a tool name, * matching any run of name characters
	Arg    string // the argument, when HasArg
	HasArg bool
}

// ParsePattern parses a pattern such as "bash(go test *)" or "read".
func ParsePattern(s string) (Pattern, error) {
	s = strings.TrimSpace(s)
	if !utf8.ValidString(s) {
		return Pattern{}, fmt.Errorf("pattern %q is not valid UTF-8", s)
	}
	if s == "" {
		return Pattern{}, errors.New("empty pattern: write a tool name such as bash, optionally with an argument: bash(go test *)")
	}
	name, arg, hasArg := strings.Cut(s, "(")
	name = strings.TrimSpace(name)
	p := Pattern{Tool: name, HasArg: hasArg}
	if name == "" {
		return Pattern{}, fmt.Errorf("pattern %q names no tool before its (", s)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '*' || r == '.') {
			return Pattern{}, fmt.Errorf("pattern %q: the tool name %q may hold only letters, digits, _, -, . and *", s, name)
		}
	}
	if hasArg {
		if !strings.HasSuffix(arg, ")") {
			return Pattern{}, fmt.Errorf("pattern %q lacks its closing )", s)
		}
		p.Arg = strings.TrimSpace(strings.TrimSuffix(arg, ")"))
		if p.Arg == "" {
			return Pattern{}, fmt.Errorf("pattern %q has an empty argument: drop the () to match every call of %s", s, name)
		}
	}
	return p, nil
}

// String is the pattern as ParsePattern reads it.
func (p Pattern) String() string {
	if p.HasArg {
		return p.Tool + "(" + p.Arg + ")"
	}
	return p.Tool
}

// matchesTool reports whether the pattern's name covers tool.
func (p Pattern) matchesTool(tool string) bool {
	if !strings.Contains(p.Tool, "*") {
		return p.Tool == tool
	}
	ok, err := path.Match(p.Tool, tool)
	return err == nil && ok
}

// specificity orders matching rules: an argument first, then literal
// characters.
func (p Pattern) specificity() int {
	n := len(strings.ReplaceAll(p.Tool, "*", ""))
	if p.HasArg {
		n += 1000 + len(strings.NewReplacer("*", "", "?", "").Replace(p.Arg))
	}
	return n
}

// commandRE compiles a command argument: * is any text; a trailing " *"
// also matches nothing, so "go test *" covers "go test" itself.
func commandRE(arg string) (*regexp.Regexp, error) {
	arg = strings.Join(strings.Fields(arg), " ")
	tail := ""
	if strings.HasSuffix(arg, " *") {
		arg, tail = strings.TrimSuffix(arg, " *"), "(?: .*)?"
	}
	parts := strings.Split(arg, "*")
	for i, s := range parts {
		parts[i] = regexp.QuoteMeta(s)
	}
	return regexp.Compile(`^` + strings.Join(parts, `.*`) + tail + `$`)
}

// matchPath matches a doublestar glob against a slash-separated path.
func matchPath(glob, p string) bool {
	ok, err := doublestar.Match(glob, p)
	return err == nil && ok
}
