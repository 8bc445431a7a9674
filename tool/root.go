package tool

import (
	"fmt"
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
	dir   string   // canonical absolute workdir
	allow []string // canonical absolute extra directories the user allowed
	root  *os.Root
}

// OpenRoot opens dir (made canonical: absolute, symlinks resolved) as a tool
// root. allow names extra directories tools may reach.
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
		if err != nil {
			r.Close()
			return nil, fmt.Errorf("allowed path %s: %w", a, err)
		}
		rt.allow = append(rt.allow, c)
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

// FS returns the os.Root of the workdir, for confined file access.
func (r *Root) FS() *os.Root { return r.root }

// Close releases the root.
func (r *Root) Close() error { return r.root.Close() }

// Rel turns a path from the model (relative to the workdir, or absolute
// inside it) into a clean, slash-separated workdir-relative path. It refuses
// paths that leave the workdir lexically or through a symlink. A path inside
// an allowed extra directory is returned absolute.
func (r *Root) Rel(p string) (string, error) {
	if strings.TrimSpace(p) == "" {
		return "", fmt.Errorf("empty path")
	}
	abs := p
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(r.dir, p)
	}
	abs = filepath.Clean(abs)
	for _, a := range r.allow {
		if within(a, abs) {
			return abs, nil
		}
	}
	if !within(r.dir, abs) {
		return "", fmt.Errorf("path %s is outside the workdir %s; tools may only touch files inside it", p, r.dir)
	}
	rel, _ := filepath.Rel(r.dir, abs)
	// Resolve symlinks of the longest existing prefix: a link inside the
	// workdir that points out is refused.
	if real, err := evalExisting(abs); err == nil && !within(r.dir, real) {
		inAllowed := false
		for _, a := range r.allow {
			inAllowed = inAllowed || within(a, real)
		}
		if !inAllowed {
			return "", fmt.Errorf("path %s leads outside the workdir through a symlink (to %s); refused", p, real)
		}
	}
	return filepath.ToSlash(rel), nil
}

// Abs returns the absolute path of a path returned by Rel.
func (r *Root) Abs(rel string) string {
	if filepath.IsAbs(rel) {
		return rel
	}
	return filepath.Join(r.dir, filepath.FromSlash(rel))
}

func within(dir, p string) bool {
	return p == dir || strings.HasPrefix(p, dir+string(filepath.Separator))
}

// evalExisting resolves symlinks in the longest prefix of p that exists.
func evalExisting(p string) (string, error) {
	rest := ""
	for cur := p; ; {
		real, err := filepath.EvalSymlinks(cur)
		if err == nil {
			return filepath.Join(real, rest), nil
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return "", err
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}
