package tool

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
)

// A write (Loc.WriteFile) goes through a temporary file beside its target,
// named ".BASE.lite-agent-XXXXXXXXXX.tmp" (ten characters of [a-z2-7]). A
// process killed between creating and renaming it leaves that file behind.
// The functions below find such strays by that exact shape, so no file of
// the user's is ever taken for one.

// tempInfix and tempSuffix frame the random part of a temporary file's name.
const (
	tempInfix  = ".lite-agent-"
	tempSuffix = ".tmp"
	tempRandom = 10
)

// tempName is the name of a temporary file for base with random part rnd.
func tempName(base, rnd string) string { return "." + base + tempInfix + rnd + tempSuffix }

// StrayTempOf returns the base name of the file a temporary file named name
// was written for, and whether name has the shape WriteFile gives one.
func StrayTempOf(name string) (base string, ok bool) {
	rest, ok := strings.CutPrefix(name, ".")
	if !ok {
		return "", false
	}
	rest, ok = strings.CutSuffix(rest, tempSuffix)
	if !ok || len(rest) < len(tempInfix)+tempRandom+1 {
		return "", false
	}
	rnd := rest[len(rest)-tempRandom:]
	base, ok = strings.CutSuffix(rest[:len(rest)-tempRandom], tempInfix)
	if !ok || base == "" {
		return "", false
	}
	for _, c := range rnd {
		if !(c >= 'a' && c <= 'z' || c >= '2' && c <= '7') {
			return "", false
		}
	}
	return base, true
}

// FindStrayTemps returns the temporary files that interrupted writes of
// paths (relative to the workdir, as tools record them) left beside them,
// as paths relative to the workdir: regular files of the exact shape for
// that path's base name. Paths that no longer resolve inside the workdir,
// or whose directory is gone, have none. It reads only.
func (r *Root) FindStrayTemps(paths []string) ([]string, error) {
	var found []string
	seen := map[string]bool{}
	for _, p := range paths {
		l, err := r.Locate(p)
		if err != nil {
			continue
		}
		dir, base := filepath.Split(l.Name)
		if seen[dir+"\x00"+base] {
			continue
		}
		seen[dir+"\x00"+base] = true
		fsDir := filepath.ToSlash(filepath.Clean(dir))
		if dir == "" {
			fsDir = "."
		}
		entries, err := fs.ReadDir(l.FS.FS(), fsDir)
		if err != nil {
			continue // the directory is gone: nothing was left there
		}
		for _, e := range entries {
			if b, ok := StrayTempOf(e.Name()); ok && b == base && e.Type().IsRegular() {
				found = append(found, filepath.Join(filepath.Dir(p), e.Name()))
			}
		}
	}
	return found, nil
}

// RemoveStrayTemps removes what FindStrayTemps finds for paths and
// returns the removed files' paths. It is meant for the moment a crash is
// reviewed: no write of the session runs then.
func (r *Root) RemoveStrayTemps(paths []string) ([]string, error) {
	found, err := r.FindStrayTemps(paths)
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, p := range found {
		l, err := r.Locate(p)
		if err == nil {
			// Still the stray itself, not a link swapped in for it.
			var fi fs.FileInfo
			if fi, err = l.FS.Lstat(l.Name); err == nil && (!fi.Mode().IsRegular() || filepath.Base(l.Name) != filepath.Base(p)) {
				continue
			}
		}
		if err == nil {
			err = l.FS.Remove(l.Name)
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, p)
	}
	return removed, errors.Join(errs...)
}
