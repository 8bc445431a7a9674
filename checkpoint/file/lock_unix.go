//go:build unix

package file

import (
	"context"
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// lockSupported is false where the store cannot lock files.
const lockSupported = true

func flockRetry(fd, how int) error {
	for {
		err := unix.Flock(fd, how)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// tryLock takes a shared or exclusive lock on f without waiting. It reports
// false when another open file holds a conflicting lock.
func tryLock(f *os.File, exclusive bool) (bool, error) {
	err := flockRetry(int(f.Fd()), lockHow(exclusive)|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}

// lock takes a shared or exclusive lock on f, waiting for holders to let go
// (they hold locks for one commit at most) unless ctx ends first. On a
// ctx error the lock may still be granted later to a helper that releases it
// at once, so the caller must close f and not lock it again.
func lock(ctx context.Context, f *os.File, exclusive bool) error {
	how := lockHow(exclusive)
	fd := int(f.Fd())
	err := flockRetry(fd, how|unix.LOCK_NB)
	if !errors.Is(err, unix.EWOULDBLOCK) {
		return err
	}
	if ctx.Done() == nil {
		return flockRetry(fd, how)
	}
	// flock cannot be interrupted: wait in a helper on a duplicate of the
	// descriptor (same open file, same lock) so that ctx can win the race.
	dup, err := unix.Dup(fd)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- flockRetry(dup, how) }()
	select {
	case err := <-done:
		unix.Close(dup)
		return err
	case <-ctx.Done():
		go func() {
			if <-done == nil {
				flockRetry(dup, unix.LOCK_UN)
			}
			unix.Close(dup)
		}()
		return ctx.Err()
	}
}

// unlock releases f's lock.
func unlock(f *os.File) error { return flockRetry(int(f.Fd()), unix.LOCK_UN) }

func lockHow(exclusive bool) int {
	if exclusive {
		return unix.LOCK_EX
	}
	return unix.LOCK_SH
}

// sameFile reports whether path names the very file f has open, so a lock on
// f protects path: a log replaced by rename or removed while we waited for
// its lock is detected.
func sameFile(f *os.File, path string) (same bool, size int64, err error) {
	var a, b unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &a); err != nil {
		return false, 0, err
	}
	if err := unix.Stat(path, &b); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return false, 0, nil
		}
		return false, 0, err
	}
	return a.Dev == b.Dev && a.Ino == b.Ino, b.Size, nil
}

// linked reports whether the open file f still has a name and its size: a
// log or index replaced by rename, or removed, has none. Nothing in a store
// makes other links, so a linked file is still at the path it was opened by.
func linked(f *os.File) (ok bool, size int64, err error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return false, 0, err
	}
	return st.Nlink > 0, st.Size, nil
}

// fileID is what identifies an open file: device and inode.
type fileID struct{ dev, ino uint64 }

// statID returns the identity and size of the file at path (ok false if it
// does not exist).
func statID(path string) (id fileID, size int64, ok bool, err error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return id, 0, false, nil
		}
		return id, 0, false, err
	}
	return fileID{uint64(st.Dev), uint64(st.Ino)}, st.Size, true, nil
}

// fstatID returns the identity and size of an open file.
func fstatID(f *os.File) (id fileID, size int64, err error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return id, 0, err
	}
	return fileID{uint64(st.Dev), uint64(st.Ino)}, st.Size, nil
}
