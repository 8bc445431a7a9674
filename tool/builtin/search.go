package builtin

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/lite-agent/lite-agent/tool"
	"github.com/lite-agent/lite-agent/tool/walk"
)

// searchFlags are the inputs glob and grep share about what to visit.
type searchFlags struct {
	Hidden   flexBool `json:"hidden"`
	NoIgnore flexBool `json:"no_ignore"`
}

func (f searchFlags) options() *walk.Options {
	return &walk.Options{Hidden: bool(f.Hidden), NoIgnore: bool(f.NoIgnore)}
}

// compilePattern checks a glob for glob's pattern and grep's include; the
// error says what is wrong with it.
func compilePattern(pattern string) error {
	if strings.TrimSpace(pattern) == "" {
		return errors.New("empty glob pattern; give one such as \"**/*.go\"")
	}
	if !doublestar.ValidatePattern(pattern) {
		return fmt.Errorf("bad glob pattern %q: check its [ ] brackets, { } groups and trailing \\", pattern)
	}
	return nil
}

// walkTree visits the tree below loc with the ignore rules of the root loc
// lives in, calling visit with each entry's slash-separated path relative to
// loc. visit says whether to descend into a directory. Symlinks are reported,
// never followed; unreadable directories are counted in *unreadable. It
// returns ctx's error if cancelled.
func walkTree(ctx context.Context, loc tool.Loc, opts *walk.Options, visit func(rel string, d fs.DirEntry) (bool, error), unreadable *int) error {
	start := path.Clean(strings.ReplaceAll(loc.Name, `\`, "/"))
	return walk.Walk(ctx, searchFS(loc.FS), start, opts, func(p string, d fs.DirEntry, err error) error {
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
		rel := p
		if start != "." {
			rel = strings.TrimPrefix(p, start+"/")
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

// dated is a search result with the modification time it is sorted by.
type dated[T any] struct {
	name string
	mod  time.Time
	item T
}

// sortNewest orders results the way peers do: most recently modified first,
// then by name.
func sortNewest[T any](xs []dated[T]) {
	slices.SortStableFunc(xs, func(a, b dated[T]) int {
		if c := b.mod.Compare(a.mod); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
}
