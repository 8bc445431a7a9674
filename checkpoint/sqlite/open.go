package sqlite

import (
	"bytes"
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/internal/groupcommit"
	msqlite "modernc.org/sqlite"
)

// Opening a store: checking what is at the path before SQLite touches it,
// the connection settings, and the first connection that checks, switches
// to WAL and migrates the database.

// walSizeLimit is the size the WAL file is cut back to when it restarts
// after a checkpoint (a large event can grow it far beyond its usual few
// MiB).
const walSizeLimit = 64 << 20

// sqliteHeader starts every SQLite database file.
var sqliteHeader = []byte("SQLite format 3\x00")

// Open opens the SQLite session database at path, creating it (mode 0600)
// and its schema if needed, or an in-memory database if path is Memory
// (":memory:"). A nil opts means defaults.
//
// The file must be a lite-agent session database or not exist yet; Open
// refuses, without changing anything, a directory, a file that is not a
// SQLite database, another program's database and a database of a newer
// schema. With opts.ReadOnly a missing file is an error that matches
// fs.ErrNotExist and checkpoint.ErrNotFound.
func Open(path string, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	s := &Store{path: path, readOnly: o.ReadOnly, maxEventBytes: o.MaxEventBytes, busyTimeout: o.BusyTimeout}
	switch {
	case s.maxEventBytes == 0:
		s.maxEventBytes = DefaultMaxEventBytes
	case s.maxEventBytes < 0 || s.maxEventBytes > MaxEventBytesLimit:
		return nil, fmt.Errorf("open sqlite store %s: MaxEventBytes %d is out of range; use 0 for the default (%d) or a limit up to %d", path, s.maxEventBytes, DefaultMaxEventBytes, MaxEventBytesLimit)
	}
	switch {
	case s.busyTimeout == 0:
		s.busyTimeout = DefaultBusyTimeout
	case s.busyTimeout < 0:
		return nil, fmt.Errorf("open sqlite store %s: negative BusyTimeout %v; use 0 for the default (%v)", path, s.busyTimeout, DefaultBusyTimeout)
	}

	var err error
	switch {
	case path == "":
		return nil, errors.New("open sqlite store: empty path; pass a database file path, or \":memory:\" for a store that lives in memory")
	case path == Memory && s.readOnly:
		return nil, errors.New("open sqlite store :memory: read-only: a new in-memory database is always empty; pass the path of a database file to inspect")
	case path == Memory:
		s.memory = true
		err = s.openMemory()
	case s.readOnly:
		err = s.openReadOnly()
	default:
		err = s.openWritable()
	}
	if err != nil {
		return nil, err
	}
	s.group = groupcommit.New(s.commit)
	return s, nil
}

// pragmas are the connection settings every writable connection gets:
// busy_timeout first, so that the others wait for locks too. The database
// file is read through a memory map (up to 256 MiB), so that reading a log
// copies pages once instead of through a read system call each.
func (s *Store) pragmas() string {
	return fmt.Sprintf("_pragma=busy_timeout(%d)&_pragma=synchronous(FULL)&_pragma=foreign_keys(0)&_pragma=journal_size_limit(%d)&_pragma=mmap_size(268435456)",
		s.busyMillis(), walSizeLimit)
}

// busyMillis is the busy_timeout pragma's value: BusyTimeout in
// milliseconds, at most what SQLite's int holds (about 24 days; retry waits
// for the rest).
func (s *Store) busyMillis() int64 {
	return min(s.busyTimeout.Milliseconds(), math.MaxInt32)
}

// openMemory opens one connection to a new in-memory database: all calls
// share it, so they all see one database.
func (s *Store) openMemory() error {
	dsn := "file::memory:?" + s.pragmas()
	s.pool = newPool(1, true, func() (driver.Conn, error) { return s.drv.Open(dsn) })
	return s.setUp()
}

// openWritable checks path, creates the file if it is missing and opens
// the database with its schema.
func (s *Store) openWritable() error {
	abs, err := filepath.Abs(s.path)
	if err != nil {
		return fmt.Errorf("open sqlite store %s: %w", s.path, err)
	}
	created, err := s.prepareFile(abs)
	if err != nil {
		return err
	}
	// mode=rw: SQLite must never create the file itself (it would not be
	// 0600); if it vanished since prepareFile, opening fails.
	dsn := "file:" + uriPath(abs) + "?mode=rw&" + s.pragmas()
	s.pool = newPool(8, true, func() (driver.Conn, error) { return s.openWritableConn(dsn) })
	if err := s.setUp(); err != nil {
		if created {
			removeIfEmpty(abs)
		}
		return err
	}
	return nil
}

// keepWAL makes a writable connection keep the -wal file when it closes
// (SQLITE_FCNTL_PERSIST_WAL): the last connection to close checkpoints the
// WAL and truncates it to zero bytes (journal_size_limit is set) instead
// of deleting it and the -shm file. The next process then reuses both
// files instead of creating them, and neither the unlink nor the creation
// costs a directory fsync: two of the four fsyncs a one-shot process paid
// for the WAL alone. A database at rest is still whole in its main file.
// It is set only once the first connection has found the file to be ours,
// so a refused open still leaves nothing behind.
func keepWAL(dc driver.Conn) error {
	fc, ok := dc.(msqlite.FileControl)
	if !ok {
		return nil
	}
	if _, err := fc.FileControlPersistWAL("main", 1); err != nil {
		return fmt.Errorf("keep the write-ahead log across connections: %w", err)
	}
	return nil
}

// openWritableConn opens one more writable connection of the pool.
func (s *Store) openWritableConn(dsn string) (driver.Conn, error) {
	dc, err := s.drv.Open(dsn)
	if err != nil || !s.walKept {
		return dc, err
	}
	if err := keepWAL(dc); err != nil {
		dc.Close()
		return nil, err
	}
	return dc, nil
}

// prepareFile checks what is at abs: a SQLite database it may write, or
// nothing, in which case it creates an empty file readable by its owner
// only. created reports the latter.
func (s *Store) prepareFile(abs string) (created bool, err error) {
	fi, err := os.Stat(abs)
	switch {
	case err == nil:
		if err := s.checkExisting(abs, fi, os.O_RDWR); err != nil {
			return false, err
		}
		return false, nil
	case errors.Is(err, fs.ErrNotExist):
	default:
		return false, s.statError(abs, err)
	}
	dir := filepath.Dir(abs)
	if di, err := os.Stat(dir); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, fmt.Errorf("open sqlite store %s: directory %s does not exist; create it first (mkdir -p %s) or pass another path", s.path, dir, dir)
		}
		return false, s.statError(abs, err)
	} else if !di.IsDir() {
		return false, fmt.Errorf("open sqlite store %s: %s is not a directory; pass a path inside a directory", s.path, dir)
	}
	f, err := os.OpenFile(abs, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	switch {
	case err == nil:
		if err := f.Close(); err != nil {
			return false, fmt.Errorf("open sqlite store %s: %w", s.path, err)
		}
		return true, nil
	case errors.Is(err, fs.ErrExist): // another process created it just now
		fi, err := os.Stat(abs)
		if err != nil {
			return false, s.statError(abs, err)
		}
		return false, s.checkExisting(abs, fi, os.O_RDWR)
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EROFS):
		return false, fmt.Errorf("open sqlite store %s: cannot create the database file: %w; pass a path in a directory you can write to (inspection commands can open an existing database read-only)", s.path, err)
	default:
		return false, fmt.Errorf("open sqlite store %s: cannot create the database file: %w", s.path, err)
	}
}

// statError explains an error of os.Stat on the database path.
func (s *Store) statError(abs string, err error) error {
	if errors.Is(err, syscall.ENOTDIR) {
		return fmt.Errorf("open sqlite store %s: a parent of %s is a file, not a directory; pass a path inside a directory", s.path, abs)
	}
	return fmt.Errorf("open sqlite store %s: %w", s.path, err)
}

// checkExisting refuses what is not a SQLite database file at abs, or one
// this process cannot open with flag (os.O_RDWR or os.O_RDONLY).
func (s *Store) checkExisting(abs string, fi fs.FileInfo, flag int) error {
	switch {
	case fi.IsDir():
		return fmt.Errorf("open sqlite store %s: %s is a directory, not a database file; pass a file path such as %s", s.path, abs, filepath.Join(abs, "sessions.db"))
	case !fi.Mode().IsRegular():
		return fmt.Errorf("open sqlite store %s: %s is not a regular file (%v); pass the path of a database file", s.path, abs, fi.Mode().Type())
	}
	f, err := os.OpenFile(abs, flag, 0)
	if err != nil {
		if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS) {
			hint := "fix its permissions"
			if flag != os.O_RDONLY {
				hint += ", or open it read-only to inspect it"
			}
			return fmt.Errorf("open sqlite store %s: %w; %s", s.path, err, hint)
		}
		return fmt.Errorf("open sqlite store %s: %w", s.path, err)
	}
	defer f.Close()
	if fi.Size() == 0 {
		return nil // an empty file is an empty database
	}
	head := make([]byte, len(sqliteHeader))
	if _, err := io.ReadFull(f, head); err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("open sqlite store %s: %w", s.path, err)
	}
	if !bytes.Equal(head, sqliteHeader) {
		return fmt.Errorf("open sqlite store %s: %s is not a SQLite database (it does not start with the SQLite header); nothing was changed; pass the path of a session database or of a file that does not exist yet", s.path, abs)
	}
	return nil
}

// removeIfEmpty removes the file Open created if nothing was written to it,
// so that a failed Open leaves nothing behind.
func removeIfEmpty(abs string) {
	if fi, err := os.Stat(abs); err == nil && fi.Size() == 0 {
		os.Remove(abs)
	}
}

// uriPath escapes an absolute path for a file: URI.
func uriPath(p string) string {
	return strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(filepath.ToSlash(p))
}

// readCacheSize is the page cache of a read-only connection, in SQLite's
// units (a negative size is KiB): 256 KiB instead of SQLite's 2 MiB. A
// read-only connection lives for one call, so the cache only ever holds
// what that call reads, and a call that reads a lot (a listing, a search
// of common words) filled all of it with pages it read once: fresh memory
// the process faulted in for nothing. `--sessions` on 10,000 sessions
// made 3,620 page faults with the default and 2,750 with this, and its
// CPU time went down by a sixth (README, "One turn against its physical
// floor").
const readCacheSize = -256

// openReadOnly opens an existing database without writing anything.
func (s *Store) openReadOnly() error {
	abs, err := filepath.Abs(s.path)
	if err != nil {
		return fmt.Errorf("open sqlite store %s read-only: %w", s.path, err)
	}
	fi, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &missingError{path: s.path}
	case err != nil:
		return s.statError(abs, err)
	}
	if err := s.checkExisting(abs, fi, os.O_RDONLY); err != nil {
		return err
	}
	if fi.Size() == 0 && walBytes(abs) == 0 {
		s.empty = true
		s.pool = newPool(0, false, nil)
		return nil
	}
	// Every connection is opened for one call and closed after it, and
	// picks its mode when it opens:
	//   - No -wal file, or an empty one (writers keep it when they close,
	//     cut to zero bytes after their last checkpoint): the file holds
	//     every committed transaction. immutable=1 reads it without locks
	//     and without creating -wal or -shm files.
	//   - A -wal and a -shm file: a writer is open (or one crashed). The
	//     shared memory is mapped read-only, so neither file changes.
	//   - A -wal file alone (its -shm was deleted): SQLite must rebuild the
	//     -shm file to read the WAL; the database and the WAL stay unchanged.
	base := fmt.Sprintf("file:%s?mode=ro&_pragma=query_only(1)&_pragma=cache_size(%d)&_pragma=busy_timeout(%d)", uriPath(abs), readCacheSize, s.busyMillis())
	open := func() (driver.Conn, error) {
		dsn := base
		switch {
		case walBytes(abs) == 0:
			dsn += "&immutable=1"
		case exists(abs + "-shm"):
			dsn += "&readonly_shm=1"
		}
		return s.drv.Open(dsn)
	}
	s.pool = newPool(4, false, open)
	return s.setUp()
}

// exists reports whether a file exists at p.
func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// missingError is the error of a read-only Open of a file that does not
// exist.
type missingError struct{ path string }

func (e *missingError) Error() string {
	return fmt.Sprintf("open sqlite store %s read-only: no such database file; check the path (a read-only open never creates a database)", e.path)
}

// Is makes the error match fs.ErrNotExist and checkpoint.ErrNotFound.
func (e *missingError) Is(target error) bool {
	return target == fs.ErrNotExist || target == checkpoint.ErrNotFound
}

// setUp opens the first connection: it checks that the file is a database
// this build can use and, for a writable store, switches it to WAL and
// creates or migrates the schema.
func (s *Store) setUp() error {
	ctx := context.Background()
	c, err := s.pool.get(ctx)
	if err != nil {
		return s.openError(err)
	}
	err = s.setUpConn(ctx, c)
	s.pool.put(c, err != nil)
	if err != nil {
		s.pool.close()
		return s.openError(err)
	}
	return nil
}

func (s *Store) setUpConn(ctx context.Context, c *conn) error {
	if s.readOnly {
		return s.checkReadable(ctx, c)
	}
	// Refuse a file that is not ours before anything writes to it: even
	// switching to WAL rewrites the header.
	st, err := s.state(ctx, c)
	if err != nil {
		return err
	}
	if err := s.checkVersion(st.app, st.ver, st.tables); err != nil {
		return err
	}
	if !s.memory {
		if err := keepWAL(c.dc); err != nil {
			return err
		}
		s.walKept = true
		var mode string
		err := s.retry(ctx, func() error {
			dest := make([]driver.Value, 1)
			if _, err := c.row(ctx, dest, "PRAGMA journal_mode = WAL"); err != nil {
				return err
			}
			mode, _ = dest[0].(string)
			return nil
		})
		if err != nil {
			return err
		}
		if !strings.EqualFold(mode, "wal") {
			return fmt.Errorf("%s cannot use write-ahead logging (journal mode %q); put the database on a local file system", s.path, mode)
		}
	}
	if st.ver != schemaVersion {
		if err := s.migrate(ctx, c, st.ver); err != nil {
			return err
		}
		if st, err = s.state(ctx, c); err != nil {
			return err
		}
	}
	return s.ensureIndex(ctx, c, st)
}

// openError explains an error of the first connection to the database.
func (s *Store) openError(err error) error {
	switch code(err) & 0xff {
	case sqliteNotADB:
		return fmt.Errorf("open sqlite store %s: the file is not a SQLite database; nothing was changed; pass the path of a session database or of a file that does not exist yet: %w", s.path, err)
	case sqliteCorrupt:
		return fmt.Errorf("open sqlite store %s: the database is damaged; restore it from a backup or move it away: %w", s.path, err)
	case sqliteCantOpen, sqliteReadOnly, sqlitePerm:
		return fmt.Errorf("open sqlite store %s: cannot open the database file for writing; check the permissions of the file and its directory: %w", s.path, err)
	}
	if strings.HasPrefix(err.Error(), "open sqlite store") {
		return err
	}
	return fmt.Errorf("open sqlite store %s: %w", s.path, err)
}
