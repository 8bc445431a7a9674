package permission

import (
	"errors"
	"fmt"
	"net"
	"net/url"
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

// matchURL matches a network rule's argument against a URL: domain:HOST
// covers the host and its subdomains on any port, domain:HOST:PORT that
// port only, and any other argument is a pattern over the whole URL
// (cmd, compiled by commandRE). A URL that does not parse matches only
// the whole-URL pattern.
func matchURL(arg string, cmd *regexp.Regexp, raw string) bool {
	domain, ok := strings.CutPrefix(arg, "domain:")
	if !ok {
		return cmd.MatchString(raw)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return false
	}
	domain = strings.ToLower(strings.TrimSpace(domain))
	host := strings.ToLower(u.Hostname())
	if _, _, err := net.SplitHostPort(domain); err == nil {
		host = strings.ToLower(u.Host)
		if u.Port() == "" {
			host = net.JoinHostPort(u.Hostname(), defaultPort(u.Scheme))
		}
	}
	return host == domain || strings.HasSuffix(host, "."+domain)
}

// defaultPort is the port a URL of scheme reaches when it names none.
func defaultPort(scheme string) string {
	if scheme == "http" {
		return "80"
	}
	return "443"
}

// Redirect returns a redirect policy for the network tool named tool
// (builtin.WebFetch's Redirect field): a redirect a rule denies or asks
// about is not followed, one a rule allows is, and one no rule names is
// followed to the same host and port only. The error says why, for the
// model. A nil engine follows the same host only.
func (e *Engine) Redirect(tool string) func(from, to *url.URL) error {
	return func(from, to *url.URL) error {
		d := e.Decide(Request{Tool: tool, Kind: "network", URL: to.String()})
		switch d.Effect {
		case Deny:
			return fmt.Errorf("a permission rule denies it (%s)", d.Reason())
		case Ask:
			return fmt.Errorf("a permission rule asks the user first (%s)", d.Reason())
		case Allow:
			return nil
		}
		if strings.EqualFold(from.Host, to.Host) {
			return nil
		}
		return errors.New("it is another host, and no permission rule allows it")
	}
}
