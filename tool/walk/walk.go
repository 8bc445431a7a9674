// Package walk visits a directory tree the way git and ripgrep see it: what
// .gitignore files (at every level), .ignore files and .git/info/exclude
// exclude is skipped, and so are hidden names (starting with ".") unless
// asked for. The .git directory itself is always skipped.
//
// Everything is read through an fs.FS rooted at the workspace (for the
// built-in tools, the os.Root that confines them), so ignore files are read
// from the workspace root down to where a walk starts, and never above it.
//
// Precedence follows git's: .git/info/exclude is weakest, then each
// directory's .gitignore and then its .ignore, a deeper directory's files
// over a shallower one's, and within one file a later line over an earlier
// one. The patterns are matched with go-git's gitignore matcher.
package walk

import (
	"bufio"
	"context"
	"io/fs"
	"iter"
	"path"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// Options change what a walk visits. The zero value (and nil) is git's
// view: ignore files honoured, hidden names skipped.
type Options struct {
	// Hidden visits names starting with "." (.git is still skipped).
	Hidden bool
	// NoIgnore visits what ignore files exclude.
	NoIgnore bool
}

// The ignore files read in each directory, weakest first.
var ignoreFiles = []string{".gitignore", ".ignore"}

// excludeFile is the repository's own exclude list, read at the root only.
const excludeFile = ".git/info/exclude"

// Walk calls fn for start and every entry below it in fsys that is not
// ignored, in lexical order, like fs.WalkDir: paths are slash-separated and
// relative to fsys (start joined with the entry's path below it), and fn
// returns fs.SkipDir or fs.SkipAll to prune. An unreadable directory is
// passed to fn with its error, as fs.WalkDir does. Symlinks are reported,
// never followed. Ignore files from the root of fsys down to start apply;
// if start itself is ignored (the caller named it on purpose), only the
// ignore files at and below start apply. Walk returns ctx's error when ctx
// is done.
func Walk(ctx context.Context, fsys fs.FS, start string, opts *Options, fn fs.WalkDirFunc) error {
	start = path.Clean(start)
	// filters holds the rules in force inside each directory entered.
	filters := map[string]*Filter{}
	return fs.WalkDir(fsys, start, func(p string, d fs.DirEntry, err error) error {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		if p == start || err != nil {
			if err == nil && d.IsDir() {
				filters[p] = NewFilter(fsys, start, opts)
			}
			return fn(p, d, err)
		}
		f := filters[path.Dir(p)]
		if f.Skip(p, d.IsDir()) {
			return skip(d)
		}
		if err := fn(p, d, nil); err != nil {
			return err
		}
		if d.IsDir() {
			filters[p] = f.Enter(p)
		}
		return nil
	})
}

// skip leaves out d: its whole subtree when it is a directory.
func skip(d fs.DirEntry) error {
	if d.IsDir() {
		return fs.SkipDir
	}
	return nil
}

// Files yields every file below the root of fsys that is not ignored (regular
// files, symlinks and other non-directories), as slash-separated paths
// relative to fsys, in lexical order. An unreadable directory is yielded as
// its path with the error, and the walk goes on; a cancelled ctx ends it
// with ctx's error. This is the workspace's file list as git would track it.
func Files(ctx context.Context, fsys fs.FS, opts *Options) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		stopped := false
		err := Walk(ctx, fsys, ".", opts, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if p == "." {
					return err
				}
				if !yield(p, err) {
					stopped = true
					return fs.SkipAll
				}
				return fs.SkipDir
			}
			if d.IsDir() {
				return nil
			}
			if !yield(p, nil) {
				stopped = true
				return fs.SkipAll
			}
			return nil
		})
		if err != nil && !stopped {
			yield("", err)
		}
	}
}

// Filter is the rules in force inside one directory of a walk: which of
// its entries are visited. A Filter never changes once made, so it may be
// used from several goroutines at once; Enter makes a subdirectory's. Walk
// decides with it, so a walk of one's own built on Filter (a parallel one,
// say) visits exactly what Walk visits.
type Filter struct {
	fsys fs.FS
	opts Options
	// ps are the patterns in force, weakest first.
	ps []gitignore.Pattern
}

// NewFilter returns the rules in force inside start, a directory of fsys
// (nil opts: the zero Options): .git/info/exclude and the ignore files
// from the root of fsys down to start, start's own included. If start is
// ignored by the rules above it (named on purpose), only its own apply.
func NewFilter(fsys fs.FS, start string, opts *Options) *Filter {
	f := &Filter{fsys: fsys}
	if opts != nil {
		f.opts = *opts
	}
	start = path.Clean(start)
	if f.opts.NoIgnore {
		return f
	}
	f.ps = readPatterns(fsys, excludeFile, nil)
	if start == "." {
		return f.Enter(".")
	}
	f = f.Enter(".")
	for i, c := range start {
		if c == '/' {
			f = f.Enter(start[:i])
		}
	}
	if f.ignored(start, true) {
		f = &Filter{fsys: fsys, opts: f.opts}
	}
	return f.Enter(start)
}

// Enter returns the rules in force inside dir, a directory f's directory
// holds (or, for ".", the root itself): f's and those of dir's own ignore
// files, which it reads; a missing or unreadable one has no patterns.
func (f *Filter) Enter(dir string) *Filter {
	if f.opts.NoIgnore {
		return f
	}
	own := f.own(dir)
	if len(own) == 0 {
		return f
	}
	return &Filter{fsys: f.fsys, opts: f.opts, ps: append(f.ps[:len(f.ps):len(f.ps)], own...)}
}

// EnterListed is Enter for a directory whose listing the caller holds:
// has reports whether dir holds a name, and an ignore file it does not
// hold is not opened. A walk listing many directories saves two failed
// opens in each.
func (f *Filter) EnterListed(dir string, has func(name string) bool) *Filter {
	if f.opts.NoIgnore {
		return f
	}
	for _, name := range ignoreFiles {
		if has(name) {
			return f.Enter(dir)
		}
	}
	return f
}

// Skip reports whether the entry at p (a path in f's directory, relative
// to fsys) is left out of the walk, with all below it: .git, a hidden
// name unless Options.Hidden, or what the ignore files exclude.
func (f *Filter) Skip(p string, isDir bool) bool {
	name := p[strings.LastIndexByte(p, '/')+1:]
	if isDir && name == ".git" || !f.opts.Hidden && strings.HasPrefix(name, ".") {
		return true
	}
	return f.ignored(p, isDir)
}

// own reads dir's ignore files.
func (f *Filter) own(dir string) []gitignore.Pattern {
	var domain []string
	if dir != "." {
		domain = strings.Split(dir, "/")
	}
	var ps []gitignore.Pattern
	for _, name := range ignoreFiles {
		ps = append(ps, readPatterns(f.fsys, path.Join(dir, name), domain)...)
	}
	return ps
}

// ignored reports whether p is excluded by the patterns in force: the
// strongest that matches decides.
func (f *Filter) ignored(p string, isDir bool) bool {
	if len(f.ps) == 0 {
		return false
	}
	parts := strings.Split(p, "/")
	for i := len(f.ps) - 1; i >= 0; i-- {
		switch f.ps[i].Match(parts, isDir) {
		case gitignore.Exclude:
			return true
		case gitignore.Include:
			return false
		}
	}
	return false
}

// readPatterns parses one ignore file; a missing or unreadable one has no
// patterns. Blank lines and comments are skipped; a leading "\#" or "\!"
// is a literal "#". A line too long to read ends the file.
func readPatterns(fsys fs.FS, name string, domain []string) []gitignore.Pattern {
	f, err := fsys.Open(name)
	if err != nil {
		return nil
	}
	defer f.Close()
	var ps []gitignore.Pattern
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, `\#`) {
			line = line[1:]
		}
		ps = append(ps, gitignore.ParsePattern(line, domain))
	}
	return ps
}
