//go:build darwin || dragonfly || freebsd || netbsd || openbsd

package file

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// datasync makes f's data and size durable (on darwin os.File.Sync uses
// F_FULLFSYNC).
func datasync(f *os.File) error { return f.Sync() }

// bootID names the current boot of the machine, "" if unknown. Index files
// record it: an index written before the last boot may have lost writes
// that were never flushed, so it is checked against the logs once.
func bootID() string {
	tv, err := unix.SysctlTimeval("kern.boottime")
	if err != nil {
		return ""
	}
	return fmt.Sprintf("boottime-%d.%06d", tv.Sec, tv.Usec)
}
