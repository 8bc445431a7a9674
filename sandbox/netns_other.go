//go:build !linux

package sandbox

import "syscall"

// setNetns does nothing where there are no network namespaces; New finds
// that they cannot be made and says so.
func setNetns(*syscall.SysProcAttr, bool) {}
