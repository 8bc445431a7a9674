package builtin

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/lite-agent/lite-agent/tool"
)

//go:embed glob.md
var globDescription string

const globSchema = `{
  "type": "object",
  "properties": {
    "pattern": {"type": "string", "description": "Glob pattern, e.g. \"**/*.go\" or \"src/**/*.{ts,tsx}\"."},
    "path": {"type": "string", "description": "Directory to search from, relative to the workdir. Default: the workdir."},
    "hidden": {"type": "boolean", "description": "Also list names starting with a dot. Default false."},
    "no_ignore": {"type": "boolean", "description": "Also list what .gitignore and .ignore files exclude. Default false."}
  },
  "required": ["pattern"],
  "additionalProperties": false
}`

// globMaxResults caps the paths glob lists.
const globMaxResults = 1000

// Glob finds files by name pattern.
type Glob struct{}

type globInput struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path"`
	searchFlags
}

// Spec implements tool.Tool.
func (Glob) Spec() tool.Spec {
	return tool.Spec{Name: "glob", Description: globDescription, InputSchema: json.RawMessage(globSchema), Kind: tool.KindRead}
}

// Run implements tool.Tool.
func (Glob) Run(ctx context.Context, call tool.Call) tool.Result {
	var in globInput
	if err := decode(call.Input, &in); err != nil {
		return tool.Errorf("%s", err)
	}
	pattern := filepath.ToSlash(in.Pattern)
	if err := compilePattern(pattern); err != nil {
		return tool.Errorf("%s", err)
	}
	base := in.Path
	if base == "" {
		base = "."
	}
	// Start the walk below the pattern's literal directories: an absolute
	// pattern names its own base.
	prefix, rest := doublestar.SplitPattern(pattern)
	switch {
	case strings.HasPrefix(pattern, "/"):
		base, pattern = prefix, rest
	case prefix != ".":
		base, pattern = filepath.Join(base, filepath.FromSlash(prefix)), rest
	}
	loc, err := locate(call.Root, base)
	if err != nil {
		return tool.Errorf("%s", err)
	}
	fi, err := loc.FS.Stat(loc.Name)
	switch {
	case errors.Is(err, fs.ErrNotExist) && in.Path != "" && base == in.Path:
		return tool.Errorf("directory %s does not exist; check the path with ls", loc.Path)
	case errors.Is(err, fs.ErrNotExist):
		return tool.Result{Output: fmt.Sprintf("no files match %q (%s does not exist)", in.Pattern, loc.Path)}
	case err != nil:
		return statError(loc.Path, err)
	case !fi.IsDir():
		return tool.Errorf("path %s is a file, not a directory; give the directory to search in", loc.Path)
	}

	var found []dated[struct{}]
	unreadable := 0
	err = walkTree(ctx, loc, in.options(), func(rel string, d fs.DirEntry) (bool, error) {
		if doublestar.MatchUnvalidated(pattern, rel) {
			name := displayJoin(loc.Path, rel)
			if d.IsDir() {
				name += "/"
			}
			r := dated[struct{}]{name: name}
			if info, err := d.Info(); err == nil {
				r.mod = info.ModTime()
			}
			found = append(found, r)
		}
		return d.IsDir() && mayContain(pattern, rel), nil
	}, &unreadable)
	if err != nil {
		return walkError(ctx, loc, err)
	}
	sortNewest(found)
	var out strings.Builder
	if len(found) == 0 {
		fmt.Fprintf(&out, "no files match %q in %s", in.Pattern, loc.Path)
	}
	for i, r := range found[:min(len(found), globMaxResults)] {
		if i > 0 {
			out.WriteByte('\n')
		}
		out.WriteString(r.name)
	}
	if len(found) > globMaxResults {
		fmt.Fprintf(&out, "\n[showing the %d most recently modified of %d matches; narrow the pattern or the path]", globMaxResults, len(found))
	}
	if unreadable > 0 {
		fmt.Fprintf(&out, "\n[unreadable directories skipped: %d]", unreadable)
	}
	return tool.Result{Output: out.String()}
}

// mayContain reports whether a path below directory dir could match
// pattern, so the walk can skip directories that cannot. A pattern with
// "**" or { } groups may match at any depth; otherwise dir must be shallower
// than the pattern and match its leading segments.
func mayContain(pattern, dir string) bool {
	if strings.Contains(pattern, "**") || strings.ContainsAny(pattern, "{}") {
		return true
	}
	segs := strings.Split(pattern, "/")
	depth := strings.Count(dir, "/") + 1
	return depth < len(segs) && doublestar.MatchUnvalidated(strings.Join(segs[:depth], "/"), dir)
}
