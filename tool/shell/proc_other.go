//go:build !linux

package shell

import (
	"errors"
	"syscall"
)

// GroupAlive reports whether process group pgid has a process left; zombies
// count, as kill(2) cannot tell them apart.
func GroupAlive(pgid int) bool {
	return !errors.Is(syscall.Kill(-pgid, 0), errNoProcess)
}

// Exited reports whether process pid has exited; a zombie counts as
// running, as kill(2) cannot tell them apart.
func Exited(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), errNoProcess)
}
