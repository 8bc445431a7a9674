//go:build unix

package tool

import "syscall"

// openNonblock makes opening a FIFO or a device return at once.
const openNonblock = syscall.O_NONBLOCK
