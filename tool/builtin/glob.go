package builtin

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lite-agent/lite-agent/tool"
)

//go:embed glob.md
var globDescription string

const globSchema = `{
  "type": "object",
  "properties": {
    "pattern": {"type": "string", "description": "Glob pattern, e.g. \"**/*.go\" or \"src/**/*.{ts,tsx}\"."},
    "path": {"type": "string", "description": "Directory to search from, relative to the workdir. Default: the workdir."}
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
	base := in.Path
	if base == "" {
		base = "."
	}
	// Start the walk below the pattern's literal directories: an absolute
	// pattern names its own base.
	prefix, rest := literalPrefix(pattern)
	if strings.HasPrefix(pattern, "/") {
		base, pattern = prefix, rest
		if base == "" {
			base = "/"
		}
	} else if prefix != "" {
		base, pattern = filepath.Join(base, filepath.FromSlash(prefix)), rest
	}
	g, err := compileGlob(pattern)
	if err != nil {
		return tool.Errorf("%s", err)
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

	var found []string
	total, unreadable := 0, 0
	err = walk(ctx, loc, func(rel string, d fs.DirEntry) (bool, error) {
		if g.match(rel) {
			total++
			if len(found) < globMaxResults {
				name := displayJoin(loc.Path, rel)
				if d.IsDir() {
					name += "/"
				}
				found = append(found, name)
			}
		}
		return d.IsDir() && g.mayContain(rel), nil
	}, &unreadable)
	if err != nil {
		return walkError(ctx, loc, err)
	}
	slices.Sort(found)
	var out strings.Builder
	if total == 0 {
		fmt.Fprintf(&out, "no files match %q in %s", in.Pattern, loc.Path)
	} else {
		out.WriteString(strings.Join(found, "\n"))
		if total > len(found) {
			fmt.Fprintf(&out, "\n[showing %d of %d matches; narrow the pattern or the path]", len(found), total)
		}
	}
	if unreadable > 0 {
		fmt.Fprintf(&out, "\n[unreadable directories skipped: %d]", unreadable)
	}
	return tool.Result{Output: out.String()}
}

// walk visits the tree below loc in lexical order through loc.FS, calling
// visit with each entry's slash-separated path relative to loc. visit says
// whether to descend into a directory. Symlinks are reported, never
// followed; .git directories are skipped; unreadable directories are
// counted in *unreadable. It returns ctx's error if cancelled.
func walk(ctx context.Context, loc tool.Loc, visit func(rel string, d fs.DirEntry) (bool, error), unreadable *int) error {
	fsys := loc.FS.FS()
	start := filepath.ToSlash(loc.Name)
	return fs.WalkDir(fsys, start, func(p string, d fs.DirEntry, err error) error {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		if err != nil {
			if p == start {
				return err
			}
			*unreadable++
			return fs.SkipDir
		}
		if p == start {
			return nil
		}
		rel := strings.TrimPrefix(p, start+"/")
		if start == "." {
			rel = p
		}
		if d.IsDir() && d.Name() == ".git" {
			return fs.SkipDir
		}
		descend, err := visit(rel, d)
		if err != nil {
			return err
		}
		if d.IsDir() && !descend {
			return fs.SkipDir
		}
		return nil
	})
}

// walkError words a failed walk for the model.
func walkError(ctx context.Context, loc tool.Loc, err error) tool.Result {
	if ctx.Err() != nil {
		return tool.Errorf("cancelled")
	}
	return tool.Errorf("cannot read %s: %v", loc.Path, err)
}
