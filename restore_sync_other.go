//go:build !linux

package liteagent

// syncFiles makes the restored files durable, one fsync per file.
func (a *Agent) syncFiles(paths []string) error { return a.fsyncEach(paths) }
