package permission

import (
	"net/url"
	"path"
	"regexp"
	"strings"
)

// Suggestion is what an approval can offer to allow beyond this one call:
// the exact call (one pattern per simple command, since a chained command
// is allowed part by part) and a broader pattern.
type Suggestion struct {
	Exact   []string
	Pattern []string
}

var subcommand = regexp.MustCompile(`^[a-z][a-z0-9_-]*$`)

// withSubcommands are commands whose second word names what they do, so a
// suggested pattern keeps it ("git status *", not "git *").
var withSubcommands = map[string]bool{
	"git": true, "go": true, "npm": true, "pnpm": true, "yarn": true, "bun": true, "deno": true,
	"cargo": true, "docker": true, "podman": true, "kubectl": true, "gh": true, "pip": true,
	"uv": true, "poetry": true, "dotnet": true, "mvn": true, "gradle": true, "terraform": true,
	"apt": true, "apt-get": true, "brew": true, "systemctl": true, "make": true, "just": true,
}

// Suggest returns patterns that would allow req: exactly, and as a pattern
// a user can read (a command with its subcommand and any arguments, a
// file's directory, a URL's host). Tools with no argument get their name for both.
func Suggest(req Request) Suggestion {
	var s Suggestion
	switch {
	case req.Command != "":
		parts, err := CommandParts(req.Command)
		if err != nil || len(parts) == 0 {
			parts = []string{strings.Join(strings.Fields(req.Command), " ")}
		}
		seen := map[string]bool{}
		for _, p := range parts {
			s.Exact = appendNew(s.Exact, seen, req.Tool+"("+p+")")
		}
		seen = map[string]bool{}
		for _, p := range parts {
			words := strings.Fields(p)
			prefix := words[0]
			if len(words) > 1 && withSubcommands[prefix] && subcommand.MatchString(words[1]) {
				prefix += " " + words[1]
			}
			s.Pattern = appendNew(s.Pattern, seen, req.Tool+"("+prefix+" *)")
		}
	case req.URL != "":
		// The exact URL, and its host on any port.
		s.Exact = []string{req.Tool + "(" + req.URL + ")"}
		s.Pattern = []string{req.Tool}
		if u, err := url.Parse(req.URL); err == nil && u.Hostname() != "" {
			s.Pattern = []string{req.Tool + "(domain:" + strings.ToLower(u.Hostname()) + ")"}
		}
	case len(req.Paths) > 0:
		seen, seenDir := map[string]bool{}, map[string]bool{}
		for _, p := range req.Paths {
			s.Exact = appendNew(s.Exact, seen, req.Tool+"("+p+")")
			dir := path.Dir(p)
			if dir == "." || strings.HasPrefix(p, "/") {
				s.Pattern = appendNew(s.Pattern, seenDir, req.Tool+"("+p+")")
			} else {
				s.Pattern = appendNew(s.Pattern, seenDir, req.Tool+"("+dir+"/**)")
			}
		}
	default:
		s.Exact, s.Pattern = []string{req.Tool}, []string{req.Tool}
	}
	return s
}

func appendNew(list []string, seen map[string]bool, s string) []string {
	if seen[s] {
		return list
	}
	seen[s] = true
	return append(list, s)
}
