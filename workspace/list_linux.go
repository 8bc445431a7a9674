package workspace

import (
	"encoding/binary"
	"io/fs"
	"os"
	"slices"
	"sync"

	"golang.org/x/sys/unix"
)

// direntBufs are getdents buffers, one per directory being listed.
var direntBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// listDir lists directory p of root (opened through root, so confined to
// it) and lstats each entry relative to the directory's descriptor. It
// gives what os.Root's ReadDir and each entry's Info give, in name order
// (an entry gone since it was listed is left out; an entry that cannot be
// stat-ed otherwise fails the listing), with no FileInfo or DirEntry per
// entry: a warm scan's cost is its system calls.
func listDir(root *os.Root, p string) (es []Entry, err error) {
	f, err := root.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	bp := direntBufs.Get().(*[]byte)
	defer direntBufs.Put(bp)
	buf := *bp
	var paths []string
	var lerr error
	prefix := ""
	if p != "." {
		prefix = p + "/"
	}
	cerr := rc.Control(func(fd uintptr) {
		for {
			n, err := unix.Getdents(int(fd), buf)
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				lerr = &fs.PathError{Op: "readdirent", Path: p, Err: err}
				return
			}
			if n <= 0 {
				break
			}
			for b := buf[:n]; len(b) >= 19; {
				// struct linux_dirent64: ino, off, reclen, type, name.
				ino := binary.NativeEndian.Uint64(b[0:8])
				reclen := int(binary.NativeEndian.Uint16(b[16:18]))
				if reclen < 19 || reclen > len(b) {
					lerr = &fs.PathError{Op: "readdirent", Path: p, Err: unix.EIO}
					return
				}
				name := b[19:reclen]
				if i := slices.Index(name, 0); i >= 0 {
					name = name[:i]
				}
				b = b[reclen:]
				if ino == 0 || string(name) == "." || string(name) == ".." {
					continue
				}
				paths = append(paths, prefix+string(name))
			}
		}
		// Stat-ed in name order: the entries need no sorting.
		slices.Sort(paths)
		es = make([]Entry, 0, len(paths))
		var st unix.Stat_t
		for _, path := range paths {
			var err error
			for {
				err = unix.Fstatat(int(fd), path[len(prefix):], &st, unix.AT_SYMLINK_NOFOLLOW)
				if err != unix.EINTR {
					break
				}
			}
			if err == unix.ENOENT {
				continue // gone since it was listed
			}
			if err != nil {
				lerr = &fs.PathError{Op: "lstatat", Path: path, Err: err}
				return
			}
			e := Entry{Path: path, Mode: fileMode(st.Mode), Inode: st.Ino}
			if !e.IsDir() {
				e.Size, e.MTime = st.Size, st.Mtim.Sec*1e9+st.Mtim.Nsec
			}
			es = append(es, e)
		}
	})
	if cerr != nil {
		return nil, cerr
	}
	if lerr != nil {
		return nil, lerr
	}
	return es, nil
}

// fileMode is the fs.FileMode of a stat's mode, as package os makes it.
func fileMode(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	switch m & unix.S_IFMT {
	case unix.S_IFBLK:
		mode |= fs.ModeDevice
	case unix.S_IFCHR:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFDIR:
		mode |= fs.ModeDir
	case unix.S_IFIFO:
		mode |= fs.ModeNamedPipe
	case unix.S_IFLNK:
		mode |= fs.ModeSymlink
	case unix.S_IFSOCK:
		mode |= fs.ModeSocket
	}
	if m&unix.S_ISGID != 0 {
		mode |= fs.ModeSetgid
	}
	if m&unix.S_ISUID != 0 {
		mode |= fs.ModeSetuid
	}
	if m&unix.S_ISVTX != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}
