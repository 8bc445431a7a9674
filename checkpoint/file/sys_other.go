//go:build !linux && !darwin && !dragonfly && !freebsd && !netbsd && !openbsd

package file

import "os"

// datasync makes f's data and size durable.
func datasync(f *os.File) error { return f.Sync() }

// bootID is unknown here: every process checks an index against the logs
// once when it first loads it.
func bootID() string { return "" }
