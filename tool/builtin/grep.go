package builtin

import (
	"bytes"
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
	"time"

	"github.com/bmatcuk/doublestar/v4"
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
    "case_insensitive": {"type": "boolean", "description": "Ignore case. Default false."},
    "hidden": {"type": "boolean", "description": "Also search names starting with a dot. Default false."},
    "no_ignore": {"type": "boolean", "description": "Also search what .gitignore and .ignore files exclude. Default false."}
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

// Grep searches file contents with a regular expression. It runs ripgrep
// (rg on PATH) for directories when it can, and searches in Go otherwise;
// both give the same output.
type Grep struct {
	// NoRipgrep always searches in Go, even when rg is on PATH.
	NoRipgrep bool
}

type grepInput struct {
	Pattern         string   `json:"pattern"`
	Path            string   `json:"path"`
	Include         string   `json:"include"`
	CaseInsensitive flexBool `json:"case_insensitive"`
	searchFlags
}

// Spec implements tool.Tool.
func (Grep) Spec() tool.Spec {
	return tool.Spec{Name: "grep", Description: grepDescription, InputSchema: json.RawMessage(grepSchema), Kind: tool.KindRead}
}

// grepRun is the state of one search.
type grepRun struct {
	re         *regexp.Regexp
	files      []dated[[]string] // matching lines, by file
	size       int               // bytes of output so far
	matches    int
	full       bool // a cap was reached
	binary     int  // files skipped as binary
	unreadable int  // files or directories that could not be read
	// Reused from file to file: a 64 KiB reader per file was most of the
	// Go search's time on BenchmarkSearch50k.
	lr       *lineReader
	sniffBuf []byte
}

// Run implements tool.Tool.
func (gr Grep) Run(ctx context.Context, call tool.Call) tool.Result {
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
	if in.Include != "" {
		if err := compilePattern(filepath.ToSlash(in.Include)); err != nil {
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
	switch {
	case !fi.IsDir():
		if !fi.Mode().IsRegular() {
			return tool.Errorf("%s is not a regular file (%s); grep searches regular files", loc.Path, fi.Mode().Type())
		}
		g.file(ctx, loc.FS.FS(), filepath.ToSlash(loc.Name), loc.Path)
	case !gr.NoRipgrep && ripgrep(ctx, g, loc, in):
	default:
		if err := g.tree(ctx, loc, in); err != nil {
			return walkError(ctx, loc, err)
		}
	}
	if ctx.Err() != nil {
		return tool.Errorf("grep cancelled")
	}
	return tool.Result{Output: g.report(loc, in)}
}

// tree searches the directory at loc in Go.
func (g *grepRun) tree(ctx context.Context, loc tool.Loc, in grepInput) error {
	fsys := loc.FS.FS()
	start := filepath.ToSlash(loc.Name)
	include := filepath.ToSlash(in.Include)
	err := walkTree(ctx, loc, in.options(), func(rel string, d fs.DirEntry) (bool, error) {
		if d.IsDir() {
			return true, nil
		}
		if !d.Type().IsRegular() || (include != "" && !includes(include, rel)) {
			return false, nil
		}
		g.file(ctx, fsys, path.Join(start, rel), displayJoin(loc.Path, rel))
		if g.full {
			return false, fs.SkipAll
		}
		return false, nil
	}, &g.unreadable)
	if errors.Is(err, fs.SkipAll) {
		return nil
	}
	return err
}

// report is the tool's output: the matches, newest file first, and notes.
func (g *grepRun) report(loc tool.Loc, in grepInput) string {
	var out strings.Builder
	sortNewest(g.files)
	for _, f := range g.files {
		for _, line := range f.item {
			out.WriteString(line)
		}
	}
	if g.matches == 0 {
		fmt.Fprintf(&out, "no matches for %q in %s", in.Pattern, loc.Path)
		if in.Include != "" {
			fmt.Fprintf(&out, " (files matching %q)", in.Include)
		}
		out.WriteString("\n")
	}
	if g.full {
		fmt.Fprintf(&out, "[output stopped after %s; narrow the pattern, path or include to see the rest]\n", plural(g.matches, "match"))
	}
	if g.binary > 0 && g.matches == 0 {
		fmt.Fprintf(&out, "[binary files skipped: %d]\n", g.binary)
	}
	if g.unreadable > 0 {
		fmt.Fprintf(&out, "[unreadable files or directories skipped: %d]\n", g.unreadable)
	}
	return strings.TrimSuffix(out.String(), "\n")
}

// add records one matching line of the file shown as display, whose
// modification time is mod; it reports false (and sets full) when a cap is
// reached.
func (g *grepRun) add(display string, mod func() time.Time, n int, line []byte) bool {
	line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
	text := strings.ToValidUTF8(string(cutRunes(line, grepMaxLineLen)), "\uFFFD")
	if len(line) > grepMaxLineLen {
		text += " …"
	}
	entry := fmt.Sprintf("%s:%d: %s\n", display, n, text)
	if g.matches >= grepMaxMatches || g.size+len(entry) > grepMaxBytes {
		g.full = true
		return false
	}
	if k := len(g.files); k == 0 || g.files[k-1].name != display {
		g.files = append(g.files, dated[[]string]{name: display, mod: mod()})
	}
	last := &g.files[len(g.files)-1]
	last.item = append(last.item, entry)
	g.size += len(entry)
	g.matches++
	return true
}

// includes applies the include filter: to the base name, or to the path
// below the search root if the pattern has a slash.
func includes(pattern, rel string) bool {
	if strings.Contains(pattern, "/") {
		return doublestar.MatchUnvalidated(pattern, rel)
	}
	return doublestar.MatchUnvalidated(pattern, path.Base(rel))
}

// file searches one file, named name in fsys, shown as display.
func (g *grepRun) file(ctx context.Context, fsys fs.FS, name, display string) {
	f, err := fsys.Open(name)
	if err != nil {
		g.unreadable++
		return
	}
	defer f.Close()
	if g.lr == nil {
		g.lr, g.sniffBuf = newLineReader(nil, grepScanLine), make([]byte, sniffLen)
	}
	head, whole, complete, err := sniffInto(f, g.sniffBuf)
	if err != nil {
		g.unreadable++
		return
	}
	if binaryReason(head, complete) != "" {
		g.binary++
		return
	}
	lr := g.lr
	lr.reset(whole)
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
		if g.re.Match(line) && !g.add(display, modTime(f), n, line) {
			return
		}
	}
}

// modTime returns a lazy modification time of an open file.
func modTime(f fs.File) func() time.Time {
	return func() time.Time {
		fi, err := f.Stat()
		if err != nil {
			return time.Time{}
		}
		return fi.ModTime()
	}
}

// unwrapRegexpError drops the "error parsing regexp: " prefix.
func unwrapRegexpError(err error) string {
	return strings.TrimPrefix(err.Error(), "error parsing regexp: ")
}
