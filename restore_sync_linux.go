package liteagent

import (
	"golang.org/x/sys/unix"
)

// syncFiles makes the restored files durable. On Linux one syncfs(2) of
// the workdir's file system is far cheaper than a fsync per file; a path
// outside the workdir (an allowed directory) is synced on its own.
func (a *Agent) syncFiles(paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	dir, err := a.root.FS().Open(".")
	if err != nil {
		return err
	}
	defer dir.Close()
	if err := unix.Syncfs(int(dir.Fd())); err != nil {
		return err
	}
	var outside []string
	for _, p := range paths {
		if isAbs(p) {
			outside = append(outside, p)
		}
	}
	return a.fsyncEach(outside)
}
