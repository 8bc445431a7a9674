package tool

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Root is a workdir that tools are confined to. Paths given to it are
// relative to the workdir or absolute inside it (or inside an allowed extra
// directory); `..` and symlinks that lead outside are refused. File access
// goes through os.Root, so a symlink swapped in between a check and the use
// still cannot lead outside.
type Root struct {
	dir        string     // canonical absolute workdir
	allow      []string   // canonical absolute extra directories the user allowed
	root       *os.Root   // the workdir
	allowRoots []*os.Root // one per allow entry, same order
}

// OpenRoot opens dir (made canonical: absolute, symlinks resolved) as a tool
// root. allow names extra directories tools may reach; each must exist.
func OpenRoot(dir string, allow ...string) (*Root, error) {
	canon, err := Canonical(dir)
	if err != nil {
		return nil, fmt.Errorf("workdir %s: %w", dir, err)
	}
	r, err := os.OpenRoot(canon)
	if err != nil {
		return nil, fmt.Errorf("workdir %s: %w", dir, err)
	}
	rt := &Root{dir: canon, root: r}
	for _, a := range allow {
		c, err := Canonical(a)
		if err == nil {
			var ar *os.Root
			if ar, err = os.OpenRoot(c); err == nil {
				rt.allow = append(rt.allow, c)
				rt.allowRoots = append(rt.allowRoots, ar)
				continue
			}
		}
		rt.Close()
		return nil, fmt.Errorf("allowed path %s: %w", a, err)
	}
	return rt, nil
}

// Canonical returns the absolute path of dir with symlinks resolved.
func Canonical(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}

// Dir returns the canonical workdir.
func (r *Root) Dir() string { return r.dir }

// FS returns the os.Root of the workdir, for confined file access. Paths in
// allowed extra directories are reached through Locate instead.
func (r *Root) FS() *os.Root { return r.root }

// Close releases the root and the roots of the allowed directories.
func (r *Root) Close() error {
	errs := []error{r.root.Close()}
	for _, a := range r.allowRoots {
		errs = append(errs, a.Close())
	}
	return errors.Join(errs...)
}

// Rel turns a path from the model (relative to the workdir, or absolute
// inside it) into a clean, slash-separated workdir-relative path. It refuses
// paths that leave the workdir lexically or through a symlink. A path inside
// an allowed extra directory is returned absolute. An absolute path that
// names the workdir through a symlinked spelling (e.g. /tmp/x where /tmp is a
// link) is accepted and returned relative.
//
// Rel is a check, not a guard: the filesystem may change after it returns.
// Open files through Locate, whose os.Root enforces the same rule at use time.
func (r *Root) Rel(p string) (string, error) {
	if strings.TrimSpace(p) == "" {
		return "", errors.New("empty path; give a path relative to the workdir, e.g. \"src/main.go\"")
	}
	if strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("path %q contains a NUL byte", p)
	}
	abs := p
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(r.dir, p)
	}
	abs = filepath.Clean(abs)
	real, err := resolve(abs)
	if err != nil {
		return "", fmt.Errorf("path %s: %w", p, err)
	}
	switch {
	case within(r.dir, abs):
		if !r.reachable(real) {
			return "", fmt.Errorf("path %s leads outside the workdir through a symlink (to %s); refused", p, real)
		}
		rel, _ := filepath.Rel(r.dir, abs)
		return filepath.ToSlash(rel), nil
	case r.allowedIndex(abs) >= 0:
		if !r.reachable(real) {
			return "", fmt.Errorf("path %s leads outside the allowed directories through a symlink (to %s); refused", p, real)
		}
		return abs, nil
	case within(r.dir, real):
		rel, _ := filepath.Rel(r.dir, real)
		return filepath.ToSlash(rel), nil
	case r.allowedIndex(real) >= 0:
		return real, nil
	}
	return "", fmt.Errorf("path %s is outside the workdir %s; tools may only touch files inside it (or in directories the user allowed)", p, r.dir)
}

// Abs returns the absolute path of a path returned by Rel.
func (r *Root) Abs(rel string) string {
	if filepath.IsAbs(rel) {
		return rel
	}
	return filepath.Join(r.dir, filepath.FromSlash(rel))
}

// Loc is a checked path and the confined handle to reach it.
type Loc struct {
	// Path is the path as Rel returns it: workdir-relative and
	// slash-separated, or absolute inside an allowed directory. Report this
	// one to the model and use it in snapshots.
	Path string
	// FS is the os.Root that confines access: the workdir's, or that of the
	// allowed directory the path really lives in.
	FS *os.Root
	// Name is the path to pass to FS's methods: relative to FS, with the
	// symlinks that existed at Locate time resolved (os.Root refuses
	// absolute links, even ones that stay inside).
	Name string
}

// Locate checks p like Rel and returns where to reach it. Every open, read,
// write, mkdir or remove must go through loc.FS with loc.Name: if a
// directory on the way is swapped for a symlink after Locate returns, os.Root
// refuses to follow it out and nothing outside is touched.
func (r *Root) Locate(p string) (Loc, error) {
	rel, err := r.Rel(p)
	if err != nil {
		return Loc{}, err
	}
	real, err := resolve(r.Abs(rel))
	if err != nil {
		return Loc{}, fmt.Errorf("path %s: %w", p, err)
	}
	if within(r.dir, real) {
		name, _ := filepath.Rel(r.dir, real)
		return Loc{Path: rel, FS: r.root, Name: name}, nil
	}
	if i := r.allowedIndex(real); i >= 0 {
		name, _ := filepath.Rel(r.allow[i], real)
		return Loc{Path: rel, FS: r.allowRoots[i], Name: name}, nil
	}
	// The filesystem changed between Rel and here.
	return Loc{}, fmt.Errorf("path %s leads outside the workdir (to %s); refused", p, real)
}

// WriteFile replaces the file at l with data, durably and atomically: a
// temporary file beside it is written, synced and given perm (exactly, not
// masked by the umask), then renamed over it, and the directory is synced,
// so a crash or a concurrent reader never sees half a file. Missing parent
// directories are created (0755). If the directory does not allow creating
// the temporary file, the file is rewritten in place instead, keeping its
// mode. Everything goes through l.FS, so nothing outside its root is
// touched. A symlink at l was resolved by Locate: its target is replaced and
// the link kept. Tools and restore share this one way of writing.
func (l Loc) WriteFile(data []byte, perm fs.FileMode) error {
	dir, base := filepath.Split(l.Name)
	if dir != "" {
		if err := l.FS.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	tmp := filepath.Join(dir, tempName(base, strings.ToLower(rand.Text()[:tempRandom])))
	f, err := l.FS.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrPermission) {
		return l.writeInPlace(data, perm)
	}
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		// Chmod the open file, not a name: no link can be swapped in.
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = l.FS.Rename(tmp, l.Name)
	}
	if err != nil {
		l.FS.Remove(tmp)
		return err
	}
	// Make the rename durable; best effort, as some filesystems refuse to
	// sync directories.
	if dir == "" {
		dir = "."
	}
	if d, err := l.FS.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// writeInPlace truncates and rewrites the file; an existing file keeps its
// mode and owner (it may belong to someone else).
func (l Loc) writeInPlace(data []byte, perm fs.FileMode) error {
	f, err := l.FS.OpenFile(l.Name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// reachable reports whether a resolved path is in the workdir or an allowed
// directory.
func (r *Root) reachable(real string) bool {
	return within(r.dir, real) || r.allowedIndex(real) >= 0
}

// allowedIndex returns the index of the deepest allowed directory holding
// p, or -1.
func (r *Root) allowedIndex(p string) int {
	best := -1
	for i, a := range r.allow {
		if within(a, p) && (best < 0 || len(a) > len(r.allow[best])) {
			best = i
		}
	}
	return best
}

// within reports whether p is dir or below it. Both are clean and absolute.
func within(dir, p string) bool {
	if p == dir {
		return true
	}
	prefix := dir
	if !strings.HasSuffix(prefix, string(filepath.Separator)) {
		prefix += string(filepath.Separator)
	}
	return strings.HasPrefix(p, prefix)
}

// maxLinks bounds symlink resolution, as the kernel does (ELOOP).
const maxLinks = 40

// resolve returns the clean absolute path p with every symlink in its
// existing prefix resolved, the part that does not exist appended as is.
// Unlike filepath.EvalSymlinks it resolves a dangling link to where it
// points, so a link to a missing file outside the workdir is seen as outside.
func resolve(p string) (string, error) {
	vol := filepath.VolumeName(p)
	cur := vol + string(filepath.Separator)
	rest := splitPath(p[len(vol):])
	links := 0
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		fi, err := os.Lstat(next)
		if err != nil {
			// Missing (or unreadable): the rest is taken lexically.
			return filepath.Join(append([]string{next}, rest...)...), nil
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			cur = next
			continue
		}
		if links++; links > maxLinks {
			return "", fmt.Errorf("too many levels of symbolic links at %s", next)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(target) {
			tv := filepath.VolumeName(target)
			cur = tv + string(filepath.Separator)
			target = target[len(tv):]
		}
		rest = append(splitPath(target), rest...)
	}
	return cur, nil
}

func splitPath(p string) []string {
	return strings.FieldsFunc(p, func(r rune) bool { return r < 0x80 && os.IsPathSeparator(uint8(r)) })
}
