package file

import (
	"os"

	"golang.org/x/sys/unix"
)

// syncFS makes everything written to the file system holding dir durable
// with one syncfs(2); done is false where the system has none.
func syncFS(dir string) (done bool, err error) {
	d, err := os.Open(dir)
	if err != nil {
		return false, err
	}
	defer d.Close()
	return true, unix.Syncfs(int(d.Fd()))
}
