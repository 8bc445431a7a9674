//go:build linux

package sandbox

import (
	"os"
	"syscall"
)

// setNetns asks for a new network namespace, inside a new user namespace
// mapping the caller's ids when userns (for callers who are not root).
func setNetns(a *syscall.SysProcAttr, userns bool) {
	a.Cloneflags |= syscall.CLONE_NEWNET
	if userns {
		a.Cloneflags |= syscall.CLONE_NEWUSER
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
		a.GidMappingsEnableSetgroups = false
	}
}
