package workspace

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/lite-agent/lite-agent/tool/walk"
)

// Update takes a manifest from prev and the paths that may have changed
// since prev was taken (a Watcher's Changed): only the directories where
// names came or went are listed again, only the named paths and what is
// new are stat-ed, and a new (or replaced) directory is scanned whole.
// Everything else keeps prev's entry, unread and unstat-ed, so the result
// is what Scan would give only when c names every path touched since prev;
// with a path left out, its change is not seen. opts is as for Scan (Dir
// is called for each directory scanned whole). Update returns ctx's error
// when ctx is done.
func Update(ctx context.Context, root *os.Root, prev *Manifest, c Changes, opts *Options) (*Manifest, error) {
	if prev == nil {
		return nil, errors.New("update a manifest: no previous manifest")
	}
	u := &updater{
		taker: taker{o: opts.defaults(), root: root, prev: prev, racyAfter: racyAfter(prev)},
		named: map[string]bool{}, alone: map[string]bool{}, came: map[string]bool{}, m: &Manifest{},
	}
	u.m.Taken = u.o.Now()
	for _, p := range c.Paths {
		u.named[path.Clean(p)] = true
	}
	var dirs []string
	for _, p := range c.Listed {
		if p = path.Clean(p); p != "." {
			u.came[p] = true
			dirs = append(dirs, path.Dir(p))
		}
	}
	listed := map[string]bool{}
	for _, d := range dirs {
		listed[d] = true
	}
	// A path only written or chmod-ed is stat-ed alone, unless it is no
	// longer what it was: then its directory is listed again.
	for p := range u.named {
		if p == "." || listed[path.Dir(p)] {
			continue
		}
		if !u.statAlone(p) {
			dirs = append(dirs, path.Dir(p))
		}
	}
	slices.Sort(dirs)
	dirs = slices.Compact(dirs)
	for _, dir := range dirs {
		if under(dir, u.whole) {
			continue // listed already: dirs is sorted, parents first
		}
		if err := u.list(ctx, dir); err != nil {
			return nil, err
		}
	}
	set, dropped, m := u.set, u.dropped, u.m
	sortEntries(set)
	m.Entries = merge(prev.Entries, set, dropped)
	for _, d := range prev.Unreadable {
		if !under(d, dropped) {
			m.Unreadable = append(m.Unreadable, d)
		}
	}
	slices.Sort(m.Unreadable)
	m.Unreadable = slices.Compact(m.Unreadable)
	return m, nil
}

// updater is one Update's state.
type updater struct {
	taker
	named   map[string]bool
	alone   map[string]bool // named paths stat-ed alone
	came    map[string]bool // named paths whose name came or went
	m       *Manifest
	set     []Entry  // new or changed entries
	dropped []string // paths removed with everything below them
	whole   []string // directories scanned whole
}

func (u *updater) add(e Entry) { u.set = append(u.set, e) }

// statAlone updates the entry of p, a path in prev that was written or
// chmod-ed, from its own lstat. It returns false when p is not a file in
// prev that still is one, for its directory to be listed instead.
func (u *updater) statAlone(p string) bool {
	old, had := u.prev.Lookup(p)
	if !had {
		// Not tracked (ignored or hidden), or new: a new name comes with
		// a create event, which lists its directory.
		return true
	}
	fi, err := u.root.Lstat(p)
	if err != nil || fi.IsDir() != old.IsDir() {
		return false
	}
	e, ok, err := u.entryOf(p, fi.Mode().Type(), fi, nil)
	if err != nil || !ok {
		return false
	}
	u.add(e)
	u.alone[p] = true
	return true
}

// list lists dir (a directory of prev) again: its new names are taken,
// the named ones stat-ed, the gone ones dropped.
func (u *updater) list(ctx context.Context, dir string) error {
	if dir != "." {
		// A directory not in prev is ignored, hidden or gone; or new,
		// and then scanned whole from its parent.
		if e, ok := u.prev.Lookup(dir); !ok || !e.IsDir() {
			return nil
		}
	}
	seen := map[string]bool{}
	err := walk.Walk(ctx, u.root.FS(), dir, u.o.Walk, func(p string, d fs.DirEntry, err error) error {
		if p == dir {
			if err != nil && ctx.Err() == nil {
				// Gone (its parent's listing drops it) or now
				// unreadable: what was in it is no longer known.
				if !errors.Is(err, fs.ErrNotExist) {
					u.m.Unreadable = append(u.m.Unreadable, dir)
				}
				return fs.SkipAll
			}
			return err
		}
		seen[p] = true
		old, had := u.prev.Lookup(p)
		if had && (!u.named[p] || u.alone[p]) {
			return skip(d) // unchanged as far as the watcher saw, or done
		}
		e, ok, err := u.entry(p, d)
		if err != nil || !ok {
			if had && err == nil {
				u.dropped = append(u.dropped, p)
			}
			return err
		}
		// A directory whose name came or went may be another one (its
		// inode number reused) that was not watched yet: scanned whole.
		replaced := had && (old.IsDir() != e.IsDir() || old.IsDir() && (old.Inode != e.Inode || u.came[p]))
		if replaced {
			u.dropped = append(u.dropped, p) // what was below it is gone
		}
		u.add(e)
		if e.IsDir() {
			if !had || replaced {
				u.whole = append(u.whole, p)
				if err := u.tree(ctx, p, u.add, &u.m.Unreadable); err != nil {
					return err
				}
			}
			return fs.SkipDir
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, e := range children(u.prev, dir) {
		if !seen[e.Path] {
			u.dropped = append(u.dropped, e.Path)
		}
	}
	return nil
}

// skip leaves a directory's subtree out of a listing.
func skip(d fs.DirEntry) error {
	if d.IsDir() {
		return fs.SkipDir
	}
	return nil
}

// children returns prev's entries directly inside dir.
func children(m *Manifest, dir string) []Entry {
	var out []Entry
	lo, hi := 0, len(m.Entries)
	prefix := ""
	if dir != "." {
		prefix = dir + "/"
		lo, hi = prefixRange(m.Entries, prefix)
	}
	for _, e := range m.Entries[lo:hi] {
		if !strings.Contains(e.Path[len(prefix):], "/") {
			out = append(out, e)
		}
	}
	return out
}

// prefixRange returns the range of the sorted entries whose paths start
// with prefix (they are contiguous in string order).
func prefixRange(es []Entry, prefix string) (int, int) {
	lo, _ := slices.BinarySearchFunc(es, prefix, func(e Entry, p string) int { return strings.Compare(e.Path, p) })
	hi := lo
	for hi < len(es) && strings.HasPrefix(es[hi].Path, prefix) {
		hi++
	}
	return lo, hi
}

// under reports whether p is one of roots or below one.
func under(p string, roots []string) bool {
	for _, r := range roots {
		if p == r || strings.HasPrefix(p, r+"/") {
			return true
		}
	}
	return false
}

// merge returns old without the dropped paths (and what is below them),
// with set's entries in place of or beside old's; both are sorted.
func merge(old, set []Entry, dropped []string) []Entry {
	if len(dropped) == 0 && replacesOnly(old, set) {
		// Only changed entries: a copy (cheaper than the merge's appends
		// for a large tree), each replaced in place.
		out := slices.Clone(old)
		for _, e := range set {
			i, _ := slices.BinarySearchFunc(out, e.Path, func(e Entry, p string) int { return strings.Compare(e.Path, p) })
			out[i] = e
		}
		return out
	}
	slices.Sort(dropped)
	out := make([]Entry, 0, len(old)+len(set))
	j := 0
	for _, e := range old {
		for j < len(set) && set[j].Path < e.Path {
			out = append(out, set[j])
			j++
		}
		if j < len(set) && set[j].Path == e.Path {
			out = append(out, set[j])
			j++
			continue
		}
		if len(dropped) > 0 && droppedAt(e.Path, dropped) {
			continue
		}
		out = append(out, e)
	}
	return append(out, set[j:]...)
}

// droppedAt reports whether p is, or is below, a path of the sorted dropped.
func droppedAt(p string, dropped []string) bool {
	if _, ok := slices.BinarySearch(dropped, p); ok {
		return true
	}
	for d := path.Dir(p); d != "."; d = path.Dir(d) {
		if _, ok := slices.BinarySearch(dropped, d); ok {
			return true
		}
	}
	return false
}

// replacesOnly reports whether every entry of set has its path in old.
func replacesOnly(old, set []Entry) bool {
	for _, e := range set {
		if _, ok := slices.BinarySearchFunc(old, e.Path, func(e Entry, p string) int { return strings.Compare(e.Path, p) }); !ok {
			return false
		}
	}
	return true
}
