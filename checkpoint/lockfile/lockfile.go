// Package lockfile is the fallback liveness lease of checkpoint.Leaser for
// stores on a local disk: one lock file per session in a directory of its
// own (beside the store, never inside its data), locked with flock(2) by the
// process running a turn and holding that process's pid, host name, boot id
// and start time as JSON. The kernel lets the lock go when the process
// dies, so a lock that can be taken means nobody runs the session, whatever
// the file still says.
//
// A lease's file is removed when the lease ends, by its holder while it
// still holds the lock. A process that opened the file just before that
// and locks it after holds the lock of a file no longer at the path: Lease
// checks, after locking, that the path still names the file it locked
// (same device and inode), and starts again when it does not. Only a
// process that dies while holding a lease leaves its file behind, until
// the session's next lease ends.
package lockfile

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/lite-agent/lite-agent/checkpoint"
)

// probeRetries and probeWait bound how long Lease waits out readers'
// shared locks (see LeaseHolder): about a second.
const (
	probeRetries = 1000
	probeWait    = time.Millisecond
)

// Dir keeps session leases as lock files in one directory.
type Dir struct {
	dir string
}

// New returns the leases kept in dir (created, 0700, on the first Lease).
func New(dir string) *Dir { return &Dir{dir: dir} }

var _ checkpoint.Leaser = (*Dir)(nil)

// path names session id's lock file; ids that are not plain names are hashed.
func (d *Dir) path(id string) string {
	name := id
	if name == "" || strings.ContainsAny(name, `/\`) || strings.HasPrefix(name, ".") || len(name) > 100 {
		sum := sha256.Sum256([]byte(id))
		name = "h-" + hex.EncodeToString(sum[:12])
	}
	return filepath.Join(d.dir, name+".lease")
}

// Lease implements checkpoint.Leaser.
func (d *Dir) Lease(ctx context.Context, id string) (func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(d.dir, 0o700); err != nil {
		return nil, fmt.Errorf("lease %s: %w", id, err)
	}
	for {
		release, err := d.lease(ctx, id)
		if err != errRemoved {
			return release, err
		}
	}
}

// errRemoved is lease's answer when the file it locked was removed from
// the path by the lease's last holder in the meantime: Lease tries again.
var errRemoved = errors.New("lock file removed")

// lease takes the lease through the file at id's path, once.
func (d *Dir) lease(ctx context.Context, id string) (func(), error) {
	p := d.path(id)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lease %s: %w", id, err)
	}
	ok, err := tryLock(f, true)
	// A LeaseHolder elsewhere holds a shared lock for a moment while it
	// looks: only an exclusive lock is a holder, so while the file can be
	// locked shared, the exclusive lock is tried again.
	for try := 0; err == nil && !ok && try < probeRetries; try++ {
		if free, _ := tryLock(f, false); !free {
			break
		}
		unlock(f)
		select {
		case <-time.After(probeWait):
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		}
		ok, err = tryLock(f, true)
	}
	if err != nil || !ok {
		defer f.Close()
		if err != nil {
			return nil, fmt.Errorf("lease %s: %w", id, err)
		}
		h, _ := readHolder(f)
		if h == nil {
			h = &checkpoint.Holder{}
		}
		return nil, &checkpoint.LeaseHeldError{Session: id, Holder: *h}
	}
	if !samePath(f, p) {
		unlock(f)
		f.Close()
		return nil, errRemoved
	}
	me := Self()
	b, _ := json.Marshal(me)
	if err := f.Truncate(0); err == nil {
		_, err = f.WriteAt(append(b, '\n'), 0)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			// Removed while still locked: whoever opened it meanwhile
			// finds, once it has the lock, that the path is not its file.
			f.Truncate(0)
			os.Remove(p)
			unlock(f)
			f.Close()
		})
	}, nil
}

// samePath reports whether path still names the open file f.
func samePath(f *os.File, path string) bool {
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	pi, err := os.Stat(path)
	return err == nil && os.SameFile(fi, pi)
}

// LeaseHolder implements checkpoint.Leaser. It only opens files to read.
func (d *Dir) LeaseHolder(ctx context.Context, id string) (*checkpoint.Holder, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := os.Open(d.path(id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("lease of %s: %w", id, err)
	}
	defer f.Close()
	free, err := tryLock(f, false)
	if err != nil {
		return nil, fmt.Errorf("lease of %s: %w", id, err)
	}
	if free {
		unlock(f)
		return nil, nil
	}
	h, err := readHolder(f)
	if h == nil || err != nil {
		// Locked by a process that has not written itself down yet.
		return &checkpoint.Holder{}, nil
	}
	return h, nil
}

func readHolder(f *os.File) (*checkpoint.Holder, error) {
	b, err := io.ReadAll(io.NewSectionReader(f, 0, 4096))
	if err != nil || len(b) == 0 {
		return nil, err
	}
	var h checkpoint.Holder
	if err := json.Unmarshal(b, &h); err != nil {
		return nil, err
	}
	return &h, nil
}

// Self is this process as a lease holder.
func Self() checkpoint.Holder {
	host, _ := os.Hostname()
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return checkpoint.Holder{PID: os.Getpid(), Host: host, BootID: strings.TrimSpace(string(boot)), Since: time.Now().UTC().Truncate(time.Second)}
}
