package builtin

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/lite-agent/lite-agent/tool"
)

//go:embed grep.md
var grepDescription string

const grepSchema = `{
  "type": "object",
  "properties": {
    "pattern": {"type": "string", "description": "Go (RE2) regular expression matched against each line."},
    "path": {"type": "string", "description": "Directory to search recursively, or one file, relative to the workdir. Default: the workdir."},
    "include": {"type": "string", "description": "Only search files whose name matches this glob, e.g. \"*.go\" or \"*.{ts,tsx}\"."},
    "case_insensitive": {"type": "boolean", "description": "Ignore case. Default false."}
  },
  "required": ["pattern"],
  "additionalProperties": false
}`

// Limits of one grep call.
const (
	grepMaxMatches = 500
	grepMaxBytes   = 64 << 10
	grepMaxLineLen = 300      // shown per matching line
	grepScanLine   = 64 << 10 // matched per line; the rest of a longer line is not searched
)

// Grep searches file contents with a regular expression.
type Grep struct{}

type grepInput struct {
	Pattern         string   `json:"pattern"`
	Path            string   `json:"path"`
	Include         string   `json:"include"`
	CaseInsensitive flexBool `json:"case_insensitive"`
}

// Spec implements tool.Tool.
func (Grep) Spec() tool.Spec {
	return tool.Spec{Name: "grep", Description: grepDescription, InputSchema: json.RawMessage(grepSchema), Kind: tool.KindRead}
}

// grepRun is the state of one search.
type grepRun struct {
	re         *regexp.Regexp
	out        strings.Builder
	matches    int
	full       bool // a cap was reached
	binary     int  // files skipped as binary
	unreadable int  // files or directories that could not be read
}

// Run implements tool.Tool.
func (Grep) Run(ctx context.Context, call tool.Call) tool.Result {
	var in grepInput
	if err := decode(call.Input, &in); err != nil {
		return tool.Errorf("%s", err)
	}
	if in.Pattern == "" {
		return tool.Errorf("pattern is required: a Go regular expression to search for")
	}
	expr := in.Pattern
	if in.CaseInsensitive {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return tool.Errorf("invalid regular expression %q: %v. grep uses Go (RE2) syntax: lookaround and backreferences are not supported, and literal ( [ { . * + ? | \\ need a backslash before them", in.Pattern, unwrapRegexpError(err))
	}
	var include *globSet
	if in.Include != "" {
		if include, err = compileGlob(filepath.ToSlash(in.Include)); err != nil {
			return tool.Errorf("include: %s", err)
		}
	}
	base := in.Path
	if base == "" {
		base = "."
	}
	loc, err := locate(call.Root, base)
	if err != nil {
		return tool.Errorf("%s", err)
	}
	fi, err := loc.FS.Stat(loc.Name)
	if err != nil {
		return statError(loc.Path, err)
	}
	g := &grepRun{re: re}
	fsys := loc.FS.FS()
	if !fi.IsDir() {
		if !fi.Mode().IsRegular() {
			return tool.Errorf("%s is not a regular file (%s); grep searches regular files", loc.Path, fi.Mode().Type())
		}
		g.file(ctx, fsys, filepath.ToSlash(loc.Name), loc.Path)
	} else {
		start := filepath.ToSlash(loc.Name)
		err = walk(ctx, loc, func(rel string, d fs.DirEntry) (bool, error) {
			if d.IsDir() {
				return true, nil
			}
			if !d.Type().IsRegular() || (include != nil && !includes(include, in.Include, rel)) {
				return false, nil
			}
			g.file(ctx, fsys, path.Join(start, rel), displayJoin(loc.Path, rel))
			if g.full {
				return false, fs.SkipAll
			}
			return false, nil
		}, &g.unreadable)
		if err != nil && !errors.Is(err, fs.SkipAll) {
			return walkError(ctx, loc, err)
		}
	}
	if ctx.Err() != nil {
		return tool.Errorf("grep cancelled")
	}
	out := &g.out
	if g.matches == 0 {
		fmt.Fprintf(out, "no matches for %q in %s", in.Pattern, loc.Path)
		if include != nil {
			fmt.Fprintf(out, " (files matching %q)", in.Include)
		}
		out.WriteString("\n")
	}
	if g.full {
		fmt.Fprintf(out, "[output stopped after %s; narrow the pattern, path or include to see the rest]\n", plural(g.matches, "match"))
	}
	if g.binary > 0 && g.matches == 0 {
		fmt.Fprintf(out, "[binary files skipped: %d]\n", g.binary)
	}
	if g.unreadable > 0 {
		fmt.Fprintf(out, "[unreadable files or directories skipped: %d]\n", g.unreadable)
	}
	return tool.Result{Output: strings.TrimSuffix(out.String(), "\n")}
}

// includes applies the include filter: to the base name, or to the path
// below the search root if the pattern has a slash.
func includes(g *globSet, pattern, rel string) bool {
	if strings.Contains(pattern, "/") {
		return g.match(rel)
	}
	return g.match(path.Base(rel))
}

// file searches one file, named name in fsys, shown as display.
func (g *grepRun) file(ctx context.Context, fsys fs.FS, name, display string) {
	f, err := fsys.Open(name)
	if err != nil {
		g.unreadable++
		return
	}
	defer f.Close()
	head, whole, complete, err := sniff(f)
	if err != nil {
		g.unreadable++
		return
	}
	if binaryReason(head, complete) != "" {
		g.binary++
		return
	}
	lr := newLineReader(whole, grepScanLine)
	for n := 1; ; n++ {
		if n%1024 == 0 && ctx.Err() != nil {
			return
		}
		line, _, err := lr.next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			g.unreadable++
			return
		}
		if !g.re.Match(line) {
			continue
		}
		text := strings.ToValidUTF8(string(cutRunes(line, grepMaxLineLen)), "\uFFFD")
		if len(line) > grepMaxLineLen {
			text += " …"
		}
		entry := fmt.Sprintf("%s:%d: %s\n", display, n, text)
		if g.matches >= grepMaxMatches || g.out.Len()+len(entry) > grepMaxBytes {
			g.full = true
			return
		}
		g.out.WriteString(entry)
		g.matches++
	}
}

// unwrapRegexpError drops the "error parsing regexp: " prefix.
func unwrapRegexpError(err error) string {
	return strings.TrimPrefix(err.Error(), "error parsing regexp: ")
}
