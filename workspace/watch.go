package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// ErrUntrusted is the error (wrapped, with the reason) of a Watcher that
// may have missed a change: the queue overflowed, a directory could not be
// watched, a watched directory was renamed, an ignore file changed, or the
// watcher was closed. Its caller takes a full Scan instead.
var ErrUntrusted = errors.New("the file-system watcher may have missed changes")

// DefaultMaxDirs is how many directories a Watcher watches at most; past
// it the tree is scanned whole each time instead (each inotify watch holds
// kernel memory, and the user's watches are shared with editors).
const DefaultMaxDirs = 8192

// WatchOptions adjust NewWatcher; nil means the defaults.
type WatchOptions struct {
	// MaxDirs bounds the directories watched; 0 is DefaultMaxDirs.
	MaxDirs int
	// SyncTimeout bounds how long Changed waits for the kernel's queue to
	// be read to its end; 0 is two seconds.
	SyncTimeout time.Duration
}

// Watcher follows, through the kernel's file-system notifications
// (inotify, through fsnotify), which paths under a workdir changed, so
// that Update can take the next manifest from the previous one without
// reading the whole tree. It watches the directories it is given (a
// Scan's or Update's Options.Dir) and tells, when asked, every path named
// by an event since it was last asked.
//
// To know that it has read every event that happened before it was asked,
// Changed writes to a private file (outside the workdir, unlinked once
// watched) the same watcher watches and waits for that write's event: the kernel
// queues one watcher's events in order, so every earlier change has been
// read.
//
// A Watcher's methods are safe for concurrent use; a nil *Watcher is one
// that cannot be trusted.
type Watcher struct {
	fw       *fsnotify.Watcher
	dir      string // the workdir, absolute
	syncPath string
	syncFile *os.File // written by Changed; its events are not changes
	syncMu   sync.Mutex
	maxDirs  int
	timeout  time.Duration
	done     chan struct{}

	mu      sync.Mutex
	dirs    map[string]bool // watched, relative and slash-separated
	changed map[string]bool // path → its directory's listing changed
	broken  error
	// waiting is closed when the sync file's next write event is read.
	waiting chan struct{}
}

// NewWatcher starts a Watcher of the tree at dir (an absolute path: the
// workdir's). It returns an error where the system has no watcher this
// package trusts (inotify is used on Linux only) or none could be made.
// The caller must Close it.
func NewWatcher(dir string, opts *WatchOptions) (*Watcher, error) {
	if runtime.GOOS != "linux" {
		return nil, fmt.Errorf("%w: no inotify on %s", ErrUntrusted, runtime.GOOS)
	}
	var o WatchOptions
	if opts != nil {
		o = *opts
	}
	if o.MaxDirs <= 0 {
		o.MaxDirs = DefaultMaxDirs
	}
	if o.SyncTimeout <= 0 {
		o.SyncTimeout = 2 * time.Second
	}
	fw, err := fsnotify.NewBufferedWatcher(4096)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUntrusted, err)
	}
	// The sync file is watched itself and then unlinked: its inode lives
	// as long as the open file, so its writes still make events, and a
	// process that dies leaves nothing behind.
	syncFile, err := os.CreateTemp("", "lite-agent-watch-")
	if err == nil {
		err = fw.Add(syncFile.Name())
		os.Remove(syncFile.Name())
	}
	if err != nil {
		fw.Close()
		if syncFile != nil {
			syncFile.Close()
		}
		return nil, fmt.Errorf("%w: %v", ErrUntrusted, err)
	}
	w := &Watcher{
		fw: fw, dir: filepath.Clean(dir), syncPath: syncFile.Name(), syncFile: syncFile, maxDirs: o.MaxDirs, timeout: o.SyncTimeout,
		done: make(chan struct{}), dirs: map[string]bool{}, changed: map[string]bool{},
	}
	go w.run()
	return w, nil
}

// Watch adds the directory p (relative to the workdir, slash-separated;
// "." is the workdir) to those watched. A failure (the watch limit, a
// directory that cannot be read, MaxDirs reached) makes the watcher
// untrusted rather than being returned: Changed reports it.
func (w *Watcher) Watch(p string) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.broken != nil || w.dirs[p] {
		return
	}
	if len(w.dirs) >= w.maxDirs {
		w.breakLocked(fmt.Errorf("more than %d directories to watch", w.maxDirs))
		return
	}
	if err := w.fw.Add(filepath.Join(w.dir, filepath.FromSlash(p))); err != nil {
		w.breakLocked(fmt.Errorf("watch %s: %v", p, err))
		return
	}
	w.dirs[p] = true
}

// Changes are the paths events named, relative to the workdir and
// slash-separated, in no order.
type Changes struct {
	// Paths were created, written, removed, renamed or chmod-ed.
	Paths []string
	// Listed are the Paths whose name may have come or gone in its
	// directory (created, removed, renamed): their directories are listed
	// again, while a path only written or chmod-ed is stat-ed alone.
	Listed []string
}

// Changed returns the paths events named since the previous call, or
// since the watcher started, after reading the kernel's queue to the
// present. It returns an error wrapping ErrUntrusted when the watcher may
// have missed a change; it stays untrusted from then on.
func (w *Watcher) Changed(ctx context.Context) (Changes, error) {
	if w == nil {
		return Changes{}, fmt.Errorf("%w: not started", ErrUntrusted)
	}
	w.syncMu.Lock()
	defer w.syncMu.Unlock()
	w.mu.Lock()
	if w.broken != nil {
		w.mu.Unlock()
		return Changes{}, w.broken
	}
	seen := make(chan struct{})
	w.waiting = seen
	w.mu.Unlock()
	_, err := w.syncFile.WriteAt([]byte{0}, 0)
	if err == nil {
		timer := time.NewTimer(w.timeout)
		select {
		case <-seen:
		case <-ctx.Done():
			err = ctx.Err()
		case <-timer.C:
			err = fmt.Errorf("%w: its queue was not read within %v", ErrUntrusted, w.timeout)
		case <-w.done:
			err = fmt.Errorf("%w: closed", ErrUntrusted)
		}
		timer.Stop()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.waiting == seen {
		w.waiting = nil
	}
	if err != nil {
		// A later write's event could be taken for this one's.
		w.breakLocked(err)
	}
	if w.broken != nil {
		return Changes{}, w.broken
	}
	var c Changes
	for p, listed := range w.changed {
		c.Paths = append(c.Paths, p)
		if listed {
			c.Listed = append(c.Listed, p)
		}
	}
	clear(w.changed)
	return c, nil
}

// Err returns the reason the watcher is untrusted (wrapping ErrUntrusted),
// nil while it is trusted.
func (w *Watcher) Err() error {
	if w == nil {
		return fmt.Errorf("%w: not started", ErrUntrusted)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.broken
}

// Close stops the watcher.
func (w *Watcher) Close() error {
	if w == nil {
		return nil
	}
	err := w.fw.Close()
	<-w.done
	w.syncFile.Close()
	return err
}

// run reads the events until the watcher is closed.
func (w *Watcher) run() {
	defer close(w.done)
	for {
		select {
		case ev, ok := <-w.fw.Events:
			if !ok {
				return
			}
			w.note(ev)
		case err, ok := <-w.fw.Errors:
			if !ok {
				return
			}
			w.mu.Lock()
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				w.breakLocked(errors.New("the kernel's event queue overflowed"))
			} else {
				w.breakLocked(err)
			}
			w.mu.Unlock()
		}
	}
}

// note records one event.
func (w *Watcher) note(ev fsnotify.Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if ev.Name == w.syncPath {
		if w.waiting != nil && ev.Has(fsnotify.Write) {
			close(w.waiting)
			w.waiting = nil
		}
		return
	}
	rel, err := filepath.Rel(w.dir, ev.Name)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return
	}
	p := filepath.ToSlash(rel)
	switch {
	case ev.Has(fsnotify.Rename) && w.dirs[p]:
		// fsnotify drops a moved directory's own watch but not those
		// below it, which go on naming the old paths.
		w.breakLocked(fmt.Errorf("the watched directory %s was moved", p))
		return
	case ev.Has(fsnotify.Remove) && w.dirs[p]:
		delete(w.dirs, p) // the kernel drops the watch
	}
	switch filepath.Base(p) {
	case ".gitignore", ".ignore":
		w.breakLocked(fmt.Errorf("the ignore file %s changed", p))
		return
	}
	if p != "." {
		w.changed[p] = w.changed[p] || ev.Has(fsnotify.Create) || ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename)
	}
	if len(w.changed) > maxChanged {
		w.breakLocked(fmt.Errorf("more than %d paths changed", maxChanged))
	}
}

// maxChanged bounds the paths a Watcher remembers between two calls of
// Changed; past it a full scan costs less than the updates.
const maxChanged = 100_000

// breakLocked makes the watcher untrusted, for good. The caller holds w.mu.
func (w *Watcher) breakLocked(reason error) {
	if w.broken != nil {
		return
	}
	if !errors.Is(reason, ErrUntrusted) {
		reason = fmt.Errorf("%w: %v", ErrUntrusted, reason)
	}
	w.broken = reason
	clear(w.changed)
	if w.waiting != nil {
		close(w.waiting)
		w.waiting = nil
	}
}
