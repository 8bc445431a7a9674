//go:build !unix

package file

import (
	"context"
	"errors"
	"os"
)

// lockSupported is false where the store cannot lock files.
const lockSupported = false

var errNoLock = errors.New("the file store needs flock, which this system lacks; use the sqlite backend")

func tryLock(f *os.File, exclusive bool) (bool, error)              { return false, errNoLock }
func lock(ctx context.Context, f *os.File, exclusive bool) error    { return errNoLock }
func unlock(f *os.File) error                                       { return errNoLock }
func sameFile(f *os.File, path string) (bool, int64, error)         { return false, 0, errNoLock }
func statID(path string) (id fileID, size int64, ok bool, err error) { return id, 0, false, errNoLock }
func fstatID(f *os.File) (id fileID, size int64, err error)         { return id, 0, errNoLock }

type fileID struct{ dev, ino uint64 }
