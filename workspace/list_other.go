//go:build !linux

package workspace

import (
	"errors"
	"io/fs"
	"os"
)

// listDir lists directory p of root in name order with each entry's
// lstat, through os.Root's ReadDir: an entry gone since it was listed is
// left out, one that cannot be stat-ed otherwise fails the listing.
func listDir(root *os.Root, p string) ([]Entry, error) {
	des, err := fs.ReadDir(root.FS(), p)
	if err != nil {
		return nil, err
	}
	es := make([]Entry, 0, len(des))
	for _, d := range des {
		cp := d.Name()
		if p != "." {
			cp = p + "/" + cp
		}
		fi, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		e := Entry{Path: cp, Mode: fi.Mode(), Inode: inode(fi)}
		if !e.IsDir() {
			e.Size, e.MTime = fi.Size(), fi.ModTime().UnixNano()
		}
		es = append(es, e)
	}
	return es, nil
}
