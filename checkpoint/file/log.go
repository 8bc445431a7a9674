package file

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/internal/groupcommit"
	"github.com/lite-agent/lite-agent/session"
)

// softFrameBytes: a group commit larger than this is written as several
// frames, each written and synced before the next.
const softFrameBytes = 64 << 20

// appendReq is one Append call waiting in a session's group commit.
type appendReq struct {
	ctx      context.Context
	expected int64
	events   []session.Event
	ns       string // the namespace, when creating
	folder   string
	size     int // bound on the encoded size
	head     int64
	err      error
}

// handle is this process's door to one session log. Appends, truncates and
// deletes of the session in this process go through it one at a time (mu);
// between them it keeps the log open, so that an unchanged log (same file,
// same size) needs no re-reading.
type handle struct {
	s     *Store
	id    string
	refs  int // guarded by s.mu
	group *groupcommit.Group[appendReq]

	mu       sync.Mutex
	f        *os.File // the log, or nil
	fid      fileID
	path     string
	folder   string
	loaded   bool     // st and size describe f
	st       logState // what the log holds
	size     int64    // the log's size on disk
	reported bool     // the index knows st
}

// acquire returns the session's handle; release it when done.
func (s *Store) acquire(id string) *handle {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.handles[id]
	if h == nil {
		h = &handle{s: s, id: id}
		h.group = groupcommit.New(h.commit)
		s.handles[id] = h
	}
	h.refs++
	return h
}

func (s *Store) release(h *handle) {
	s.mu.Lock()
	h.refs--
	evict := h.refs == 0 && len(s.handles) > maxIdleLogs
	if evict {
		delete(s.handles, h.id)
	}
	s.mu.Unlock()
	if evict {
		h.mu.Lock()
		h.drop()
		h.mu.Unlock()
	}
}

// unlock releases the lock on the log, if it is still open.
func (h *handle) unlock() {
	if h.f != nil {
		unlock(h.f)
	}
}

// drop forgets the open log. The caller holds h.mu (or owns h).
func (h *handle) drop() {
	if h.f != nil {
		h.f.Close()
	}
	h.f, h.loaded, h.reported = nil, false, false
}

// open finds the session's log and locks it exclusively, loading its state
// unless the log is unchanged since this handle last held it. With create
// set, a missing session is created (mapping, folder, empty log) for it.
// On return h.f is nil when the session does not exist, else the locked log.
func (h *handle) open(ctx context.Context, create *appendReq) error {
	s := h.s
	for range 100 {
		if h.f != nil {
			if err := lock(ctx, h.f, true); err != nil {
				h.drop()
				return err
			}
			ok, size, err := linked(h.f)
			if err != nil {
				unlock(h.f)
				h.drop()
				return err
			}
			if ok {
				if h.loaded && size == h.size {
					return nil
				}
				return h.load(ctx, size)
			}
			unlock(h.f) // replaced (truncated) or removed meanwhile
			h.drop()
			continue
		}
		folder, target, ok, err := s.lookup(h.id)
		if err != nil {
			return err
		}
		if !ok {
			if create == nil {
				return nil
			}
			if err := s.ensureNamespace(create.folder, create.ns); err != nil {
				return err
			}
			err := os.Symlink(mappingTarget(create.folder, h.id), s.mappingPath(h.id))
			if err == nil {
				err = syncDir(filepath.Join(s.root, idsDir))
			} else if errors.Is(err, fs.ErrExist) {
				err = nil // another writer is creating it: go again
			}
			if err != nil {
				return fmt.Errorf("create session %s: %w", h.id, err)
			}
			continue
		}
		path := s.logPath(folder, h.id)
		flag := os.O_RDWR
		if create != nil {
			flag |= os.O_CREATE
		}
		f, err := os.OpenFile(path, flag, 0o600)
		if errors.Is(err, fs.ErrNotExist) {
			if create == nil {
				return nil // a mapping left by an unfinished creation
			}
			if folder == create.folder {
				if err := s.ensureNamespace(create.folder, create.ns); err != nil {
					return err
				}
			} else if err := s.repoint(h.id, create.folder); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("open log of %s: %w", h.id, err)
		}
		if err := lock(ctx, f, true); err != nil {
			f.Close()
			return err
		}
		same, size, err := sameFile(f, path)
		now, lerr := os.Readlink(s.mappingPath(h.id))
		if err != nil || !same || lerr != nil || now != target {
			if same && size == 0 && (lerr != nil || now != target) {
				os.Remove(path) // an empty log no mapping points to any more
			}
			unlock(f)
			f.Close()
			if err != nil {
				return fmt.Errorf("open log of %s: %w", h.id, err)
			}
			continue
		}
		fid, _, err := fstatID(f)
		if err != nil {
			unlock(f)
			f.Close()
			return fmt.Errorf("open log of %s: %w", h.id, err)
		}
		h.f, h.fid, h.path, h.folder, h.loaded = f, fid, path, folder, false
		if err := h.load(ctx, size); err != nil {
			return err
		}
		if h.st.head() == 0 && create != nil && folder != create.folder {
			// An empty log left by an unfinished creation in another
			// namespace: the session is created where it is asked for.
			err := s.repoint(h.id, create.folder)
			if err == nil {
				os.Remove(path)
			}
			unlock(h.f)
			h.drop()
			if err != nil {
				return err
			}
			continue
		}
		return nil
	}
	return fmt.Errorf("open log of %s: it kept changing while this writer waited; try again", h.id)
}

// repoint makes the mapping of id name a log in folder.
func (s *Store) repoint(id, folder string) error {
	tmp := filepath.Join(s.root, idsDir, ".tmp-"+id+"-"+strconv.FormatInt(time.Now().UnixNano(), 36))
	err := os.Symlink(mappingTarget(folder, id), tmp)
	if err == nil {
		err = os.Rename(tmp, s.mappingPath(id))
	}
	if err == nil {
		err = syncDir(filepath.Join(s.root, idsDir))
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("create session %s: %w", id, err)
	}
	return nil
}

// load establishes what the locked log holds: from the index's summary when
// its token still matches (reading only the frames appended after it), else
// from the whole log. A torn tail is cut. On error the log is unlocked and
// dropped.
func (h *handle) load(ctx context.Context, size int64) error {
	fail := func(err error) error {
		unlock(h.f)
		h.drop()
		return err
	}
	n := h.s.ns(h.folder)
	if err := n.ensure(ctx); err != nil {
		return fail(err)
	}
	var base *logState
	n.mu.Lock()
	e := n.entries[h.id]
	known := e != nil && e.has && !e.pending
	if e != nil && e.has {
		b := e.st
		b.sum = cloneSummary(b.sum)
		base = &b
	}
	n.mu.Unlock()
	// The first time this process writes to a log file, every frame is
	// checked (CRC only, where the index vouches for the summary), so that
	// damage in the middle is reported before anything is appended after it.
	validate := !h.s.validated(h.id, h.fid)
	st, tornAt, err := h.s.loadState(h.f, h.path, h.id, size, base, validate)
	if err != nil {
		return fail(fmt.Errorf("open log of %s: %w", h.id, err))
	}
	if known && st.head() < base.head() {
		// Shorter than the index recorded: acknowledged events are gone.
		// Nothing is cut or appended after it.
		end := size
		if tornAt >= 0 {
			end = tornAt
		}
		return fail(fmt.Errorf("open log of %s: %w", h.id, cutError(h.id, h.path, st.head(), end, base.head())))
	}
	h.s.setValidated(h.id, h.fid)
	if tornAt >= 0 {
		// The tail of a write that never finished (its Append did not
		// return nil): cut it before anything is appended after it.
		err := h.f.Truncate(tornAt)
		if err == nil {
			err = datasync(h.f)
		}
		if err != nil {
			return fail(fmt.Errorf("cut the torn tail of %s at offset %d: %w", h.path, tornAt, err))
		}
		size = tornAt
	}
	h.st, h.size, h.loaded = st, size, true
	// A summary of an older fold was folded again: the index needs the new
	// one even when the log did not move.
	h.reported = known && base.tok == st.tok && !checkpoint.Stale(&base.sum)
	return nil
}

// report records h.st in the index unless the index knows it already. The
// caller holds h.mu and the log's lock, so no writer can report a later
// state before it.
func (h *handle) report(ctx context.Context) error {
	if h.reported {
		return nil
	}
	n := h.s.ns(h.folder)
	if err := n.acquireShared(ctx); err != nil {
		return err
	}
	defer n.releaseShared()
	if err := n.write(indexRecord{kind: recSummary, id: h.id, st: h.st}); err != nil {
		return err
	}
	h.reported = true
	return nil
}

// loadState folds the log's valid frames into a state, starting from base
// when base's token matches the log (after checking the frames before it,
// with validate). tornAt is the offset of a torn tail (-1 if none); damage
// followed by valid frames is an ErrCorrupt error.
func (s *Store) loadState(f *os.File, path, id string, size int64, base *logState, validate bool) (st logState, tornAt int64, err error) {
	st.sum.ID = id
	start := logHeaderLen
	if base != nil && checkpoint.Stale(&base.sum) {
		base = nil // folded by an older fold: refold from the first event
	}
	if base != nil && base.tok.size > 0 && size >= base.tok.size && tokenMatches(f, base.tok) {
		if validate {
			ok, err := validatePrefix(f, path, id, base.tok, base.head())
			if err != nil {
				return st, -1, err
			}
			if !ok {
				return s.loadState(f, path, id, size, nil, false)
			}
		}
		st = *base
		st.sum.Open = slices.Clone(st.sum.Open)
		start = base.tok.size
	} else {
		if size == 0 {
			return st, -1, nil
		}
		torn, err := checkLogHeader(f, path, size)
		if err != nil {
			return st, -1, err
		}
		if torn {
			return st, 0, nil
		}
	}
	fr := newFrameReader(f, path, start, size)
	fr.reuse = true
	var events []session.Event
	for {
		off := fr.off
		h, _, payload, ok, bad, err := fr.next()
		if err != nil {
			return st, -1, err
		}
		if bad != nil {
			next, err := validFrameAfter(f, bad.off, size)
			if err != nil {
				return st, -1, fmt.Errorf("read %s: %w", path, err)
			}
			if next < 0 {
				return st, bad.off, nil
			}
			return st, -1, corruptError(id, path, bad.off, st.head(), bad.reason, next)
		}
		if !ok {
			break
		}
		if h.firstSeq != st.head()+1 {
			return st, -1, corruptError(id, path, off, st.head(), fmt.Sprintf("it holds seq %d where seq %d belongs", h.firstSeq, st.head()+1), -1)
		}
		raw, err := s.rawPayload(h, payload)
		if err == nil {
			events, err = decodeEvents(raw, h.firstSeq, h.count, 0, events[:0])
		}
		if err != nil {
			return st, -1, corruptError(id, path, off, st.head(), err.Error(), -1)
		}
		for _, e := range events {
			st.sum.Apply(e)
		}
		st.tok = token{size: fr.off, lastOff: off, lastCRC: h.crc}
	}
	st.sum.ID = id
	return st, -1, nil
}

// validatePrefix checks the frames of a log up to the end of the frame a
// token names: checksums and seqs only, nothing is decoded. ok is false when
// the frames are sound but do not end where the token says with its head.
func validatePrefix(f *os.File, path, id string, tok token, head int64) (ok bool, err error) {
	torn, err := checkLogHeader(f, path, tok.size)
	if err != nil || torn {
		return false, err
	}
	fr := newFrameReader(f, path, logHeaderLen, tok.size)
	fr.reuse = true
	var seen int64
	for {
		off := fr.off
		h, _, _, ok, bad, err := fr.next()
		switch {
		case err != nil:
			return false, err
		case bad != nil:
			// The token's frame checked out, so good frames follow.
			next, err := validFrameAfter(f, bad.off, tok.size)
			if err != nil {
				return false, fmt.Errorf("read %s: %w", path, err)
			}
			return false, corruptError(id, path, bad.off, seen, bad.reason, next)
		case !ok:
			return fr.off == tok.size && seen == head, nil
		case h.firstSeq != seen+1:
			return false, corruptError(id, path, off, seen, fmt.Sprintf("it holds seq %d where seq %d belongs", h.firstSeq, seen+1), -1)
		}
		seen = h.lastSeq()
	}
}

// validated reports whether this process has checked every frame of the
// session's log file fid.
func (s *Store) validated(id string, fid fileID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.checked[id]
	return ok && v == fid
}

func (s *Store) setValidated(id string, fid fileID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.checked[id] = fid
}
