package file

import (
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// datasync makes f's data and size durable. fdatasync skips the timestamps,
// which the store never relies on.
func datasync(f *os.File) error {
	for {
		err := unix.Fdatasync(int(f.Fd()))
		if err != unix.EINTR {
			return err
		}
	}
}

// bootID names the current boot of the machine, "" if unknown. Index files
// record it: an index written before the last boot may have lost writes
// that were never flushed, so it is checked against the logs once.
func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
