package workspace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/lite-agent/lite-agent/tool/walk"
)

// DefaultMaxFileBytes is the size above which a file's content is only
// hashed, not kept: a change to it cannot be undone.
const DefaultMaxFileBytes = 10 << 20

// racyWindow is how close to the previous manifest's time a modification
// time must be for the file to be hashed again although its stat matches.
const racyWindow = 2 * time.Second

// Entry is one file or directory of a manifest.
type Entry struct {
	// Path is slash-separated and relative to the workdir.
	Path string `json:"p"`
	// Mode is the fs.FileMode: type bits and permissions.
	Mode  fs.FileMode `json:"m"`
	Size  int64       `json:"s,omitempty"`
	MTime int64       `json:"t,omitempty"` // Unix nanoseconds
	Inode uint64      `json:"i,omitempty"`
	// Digest is the SHA-256 (hex) of the content of a regular file (of the
	// target of a symlink), "" for directories, other kinds of files and
	// unreadable files.
	Digest string `json:"h,omitempty"`
	// Skipped says why a file's content was not handed to Keep ("over the
	// size limit …", "unreadable: …", "not a regular file"); "" for
	// directories and kept files.
	Skipped string `json:"k,omitempty"`
}

// IsDir reports whether the entry is a directory.
func (e Entry) IsDir() bool { return e.Mode.IsDir() }

// sameStat reports whether e and o have the same size, time, mode and inode.
func (e Entry) sameStat(o Entry) bool {
	return e.Size == o.Size && e.MTime == o.MTime && e.Mode == o.Mode && e.Inode == o.Inode
}

// Manifest is the workdir's files and directories at one moment, sorted by
// path. It is immutable once taken.
type Manifest struct {
	Taken   time.Time `json:"taken"`
	Entries []Entry   `json:"entries"`
	// Unreadable lists directories that could not be listed: what is
	// below them is not in the manifest.
	Unreadable []string `json:"unreadable,omitempty"`
}

// Lookup returns the entry at path p.
func (m *Manifest) Lookup(p string) (Entry, bool) {
	if m == nil {
		return Entry{}, false
	}
	i, ok := slices.BinarySearchFunc(m.Entries, p, func(e Entry, p string) int { return strings.Compare(e.Path, p) })
	if !ok {
		return Entry{}, false
	}
	return m.Entries[i], true
}

// lookupFrom is Lookup trying *hint first (nil: no hint) and setting it
// to the index after the entry found.
func (m *Manifest) lookupFrom(p string, hint *int) (Entry, bool) {
	if m == nil {
		return Entry{}, false
	}
	if hint == nil {
		return m.Lookup(p)
	}
	if i := *hint; i < len(m.Entries) && m.Entries[i].Path == p {
		*hint = i + 1
		return m.Entries[i], true
	}
	i, ok := slices.BinarySearchFunc(m.Entries, p, func(e Entry, p string) int { return strings.Compare(e.Path, p) })
	if !ok {
		return Entry{}, false
	}
	*hint = i + 1
	return m.Entries[i], true
}

// Options adjust Scan. The zero value (and nil) is the search tools' view
// and DefaultMaxFileBytes.
type Options struct {
	// Walk chooses what is visited (hidden names, ignore files).
	Walk *walk.Options
	// MaxFileBytes: larger files are hashed but not kept; 0 is
	// DefaultMaxFileBytes.
	MaxFileBytes int64
	// Keep, when set, is given the content of each file Scan read (a file
	// new or changed since the previous manifest), with its digest. data is
	// Keep's to retain. An error from Keep ends the scan with it.
	Keep func(path, digest string, data []byte) error
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Dir, when set, is called with each directory the scan enters (the
	// root as "."), before its entries are listed: a Watcher's Watch, so
	// that nothing changed in it after it was listed goes unseen.
	Dir func(p string)
	// Workers bounds the goroutines Scan lists and stats directories
	// with; 0 is GOMAXPROCS (at most 8) and 1 the sequential walk. The
	// manifest is the same whatever the number; with more than one, Dir
	// is called from several goroutines at once and Keep from one at a
	// time, in no fixed order.
	Workers int
}

// Scan takes a manifest of the tree of root. Entries whose stat matches
// prev's entry at the same path keep prev's digest without being read;
// prev may be nil (everything is read). Scan returns ctx's error when ctx
// is done.
func Scan(ctx context.Context, root *os.Root, prev *Manifest, opts *Options) (*Manifest, error) {
	o := opts.defaults()
	m := &Manifest{Taken: o.Now()}
	if prev != nil {
		m.Entries = make([]Entry, 0, len(prev.Entries)+len(prev.Entries)/8)
	}
	t := &taker{o: o, root: root, prev: prev, racyAfter: racyAfter(prev)}
	if n := o.workers(); n > 1 {
		var err error
		if m.Entries, m.Unreadable, err = t.scanParallel(ctx, n); err != nil {
			return nil, err
		}
	} else if err := t.tree(ctx, ".", func(e Entry) { m.Entries = append(m.Entries, e) }, &m.Unreadable); err != nil {
		return nil, err
	}
	// The walk visits paths in lexical order of their components, which
	// is not plain string order ("a/b" before "a.txt"): prev is looked up
	// by binary search rather than merged, and the entries sorted at the end.
	sortEntries(m.Entries)
	return m, nil
}

// defaults returns a copy of o (nil: the zero value) with its defaults.
func (o *Options) defaults() *Options {
	var c Options
	if o != nil {
		c = *o
	}
	if c.MaxFileBytes <= 0 {
		c.MaxFileBytes = DefaultMaxFileBytes
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return &c
}

// racyAfter is the modification time from which a file whose stat matches
// prev's entry is read again.
func racyAfter(prev *Manifest) int64 {
	if prev == nil {
		return 0
	}
	return prev.Taken.Add(-racyWindow).UnixNano()
}

func sortEntries(es []Entry) {
	slices.SortFunc(es, func(a, b Entry) int { return strings.Compare(a.Path, b.Path) })
}

// taker takes entries for one manifest from the previous one.
type taker struct {
	o         *Options
	root      *os.Root
	prev      *Manifest
	racyAfter int64
}

// tree adds every entry below start (not start itself) to add, and the
// directories that could not be listed to unreadable.
func (t *taker) tree(ctx context.Context, start string, add func(Entry), unreadable *[]string) error {
	return walk.Walk(ctx, t.root.FS(), start, t.o.Walk, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			switch {
			case p == start && (start == "." || ctx.Err() != nil):
				return err
			case p == start && errors.Is(err, fs.ErrNotExist):
				return fs.SkipAll // gone since its parent was listed
			}
			*unreadable = append(*unreadable, p)
			return fs.SkipDir
		}
		if p == start {
			if d.IsDir() && t.o.Dir != nil {
				t.o.Dir(p)
			}
			return nil
		}
		e, ok, err := t.entry(p, d)
		if err != nil || !ok {
			return err
		}
		add(e)
		if e.IsDir() && t.o.Dir != nil {
			t.o.Dir(p)
		}
		return nil
	})
}

// entry stats d (at p) and, for a file whose stat differs from prev's
// entry (or is racy), reads its content. ok is false when p is gone.
func (t *taker) entry(p string, d fs.DirEntry) (Entry, bool, error) {
	fi, err := d.Info()
	return t.entryOf(p, d.Type(), fi, err)
}

// entryOf is entry from p's lstat (fi, err) and its type bits as listed.
func (t *taker) entryOf(p string, typ fs.FileMode, fi fs.FileInfo, err error) (Entry, bool, error) {
	if errors.Is(err, fs.ErrNotExist) {
		return Entry{}, false, nil // gone since the directory was listed
	}
	if err != nil {
		return Entry{Path: p, Mode: typ, Skipped: "unreadable: " + err.Error()}, true, nil
	}
	e := Entry{Path: p, Mode: fi.Mode(), Inode: inode(fi)}
	if !e.IsDir() {
		e.Size, e.MTime = fi.Size(), fi.ModTime().UnixNano()
	}
	if err := t.complete(&e, nil); err != nil {
		return Entry{}, false, err
	}
	return e, true, nil
}

// complete gives e (its stat filled in) prev's digest when its stat is
// unchanged and not racy, and reads its content when not. hint, when not
// nil, is where prev's entry for e may be: the index after the last one
// found for a path listed just before e's in the same directory, which it
// most often is (siblings are adjacent in prev), so that it is found
// without a search. Only Keep's error is returned.
func (t *taker) complete(e *Entry, hint *int) error {
	if e.IsDir() {
		return nil
	}
	if old, ok := t.prev.lookupFrom(e.Path, hint); ok && old.sameStat(*e) && e.MTime < t.racyAfter {
		e.Digest, e.Skipped = old.Digest, old.Skipped
		return nil
	}
	return t.o.content(t.root, e)
}

// content reads e's content, sets its Digest (and Skipped for content not
// kept) and hands what it kept to Keep. Only Keep's error is returned.
func (o *Options) content(root *os.Root, e *Entry) error {
	var data []byte
	switch {
	case e.Mode&fs.ModeSymlink != 0:
		target, err := root.Readlink(e.Path)
		if err != nil {
			e.Skipped = "unreadable: " + err.Error()
			return nil
		}
		data = []byte(target)
	case !e.Mode.IsRegular():
		e.Skipped = "not a regular file"
		return nil
	default:
		b, digest, err := readRegular(root, e.Path, o.MaxFileBytes)
		if err != nil {
			e.Skipped = "unreadable: " + err.Error()
			return nil
		}
		if b == nil {
			// Hashed, so a change is seen and drift is told from it, but
			// not kept: a change to it cannot be undone.
			e.Digest = digest
			e.Skipped = fmt.Sprintf("over the size limit (%d bytes > %d)", e.Size, o.MaxFileBytes)
			return nil
		}
		data = b
	}
	e.Digest = Digest(data)
	if o.Keep != nil {
		return o.Keep(e.Path, e.Digest, data)
	}
	return nil
}

// readRegular reads a regular file without blocking on a FIFO swapped in
// since the walk saw it. A file over max is only hashed: data is nil.
func readRegular(root *os.Root, name string, max int64) (data []byte, digest string, err error) {
	f, err := root.OpenFile(name, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, "", err
	}
	if !fi.Mode().IsRegular() {
		return nil, "", errors.New("not a regular file")
	}
	if fi.Size() <= max {
		data, err = io.ReadAll(io.LimitReader(f, max+1))
		if err != nil {
			return nil, "", err
		}
		if int64(len(data)) <= max {
			return data, "", nil
		}
		// It grew while being read: hash it whole.
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return nil, "", err
		}
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, "", err
	}
	return nil, hex.EncodeToString(h.Sum(nil)), nil
}

// Digest is the SHA-256 (hex) of data, as entries carry it.
func Digest(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
