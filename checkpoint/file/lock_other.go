//go:build !unix

package file

import (
	"context"
	"os"
)

// lockSupported is false where the store cannot lock files: Open fails.
const lockSupported = false

func tryLock(f *os.File, exclusive bool) (bool, error)           { return false, errNoLockSupport }
func lock(ctx context.Context, f *os.File, exclusive bool) error { return errNoLockSupport }
func unlock(f *os.File) error                                    { return errNoLockSupport }
func sameFile(f *os.File, path string) (bool, int64, error)      { return false, 0, errNoLockSupport }

func linked(f *os.File) (bool, int64, error) { return false, 0, errNoLockSupport }

func statID(path string) (id fileID, size int64, ok bool, err error) {
	return id, 0, false, errNoLockSupport
}

func fstatID(f *os.File) (id fileID, size int64, err error) { return id, 0, errNoLockSupport }

// fileID is what identifies an open file.
type fileID struct{ dev, ino uint64 }
