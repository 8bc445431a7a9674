//go:build !linux

package builtin

import (
	"errors"
	"syscall"
)

// groupAlive reports whether process group pgid has a process left; zombies
// count, as kill(2) cannot tell them apart.
func groupAlive(pgid int) bool {
	return !errors.Is(syscall.Kill(-pgid, 0), errNoProcess)
}
