//go:build unix

package workspace

import (
	"io/fs"
	"syscall"
)

// inode returns the file's inode number, 0 where the system gives none.
func inode(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}

// openFlags make opening a FIFO or a device return at once.
const openFlags = syscall.O_NONBLOCK
