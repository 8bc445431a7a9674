//go:build !unix

package tool

// openNonblock is 0 where the system has no O_NONBLOCK for files (there
// are no FIFOs to block on in a workdir there either).
const openNonblock = 0
