//go:build !unix

package builtin

import (
	"io/fs"
	"os"
)

// searchFS is the fs.FS glob and grep walk: root's own.
func searchFS(root *os.Root) fs.FS { return root.FS() }
