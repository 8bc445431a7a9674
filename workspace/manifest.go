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
}

// Scan takes a manifest of the tree of root. Entries whose stat matches
// prev's entry at the same path keep prev's digest without being read;
// prev may be nil (everything is read). Scan returns ctx's error when ctx
// is done.
func Scan(ctx context.Context, root *os.Root, prev *Manifest, opts *Options) (*Manifest, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = DefaultMaxFileBytes
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	m := &Manifest{Taken: now()}
	var racyAfter int64
	if prev != nil {
		racyAfter = prev.Taken.Add(-racyWindow).UnixNano()
	}
	// The walk visits paths in lexical order of their components, which
	// is not plain string order ("a/b" before "a.txt"): prev is looked up
	// by binary search rather than merged, and the entries sorted at the end.
	err := walk.Walk(ctx, root.FS(), ".", o.Walk, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == "." {
				return err
			}
			m.Unreadable = append(m.Unreadable, p)
			return fs.SkipDir
		}
		if p == "." {
			return nil
		}
		fi, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil // gone since the directory was listed
		}
		if err != nil {
			m.Entries = append(m.Entries, Entry{Path: p, Mode: d.Type(), Skipped: "unreadable: " + err.Error()})
			return nil
		}
		e := Entry{Path: p, Mode: fi.Mode(), Inode: inode(fi)}
		if e.IsDir() {
			m.Entries = append(m.Entries, e)
			return nil
		}
		e.Size, e.MTime = fi.Size(), fi.ModTime().UnixNano()
		if old, ok := prev.Lookup(p); ok && old.sameStat(e) && e.MTime < racyAfter {
			e.Digest, e.Skipped = old.Digest, old.Skipped
			m.Entries = append(m.Entries, e)
			return nil
		}
		if err := o.content(root, &e); err != nil {
			return err
		}
		m.Entries = append(m.Entries, e)
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(m.Entries, func(a, b Entry) int { return strings.Compare(a.Path, b.Path) })
	return m, nil
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
