package file

import (
	"context"
	"encoding/binary"
	"encoding/json"
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
	h.reported = known && base.tok == st.tok
	return nil
}

// loadState folds the log's valid frames into a state, starting from base
// when base's token matches the log (after checking the frames before it,
// with validate). tornAt is the offset of a torn tail (-1 if none); damage
// followed by valid frames is an ErrCorrupt error.
func (s *Store) loadState(f *os.File, path, id string, size int64, base *logState, validate bool) (st logState, tornAt int64, err error) {
	st.sum.ID = id
	start := logHeaderLen
	if base != nil && base.tok.size > 0 && size >= base.tok.size && tokenMatches(f, base.tok) {
		if validate {
			ok, err := validatePrefix(f, path, base.tok, base.head())
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
			return st, -1, corruptError(path, bad.off, st.head(), bad.reason, next)
		}
		if !ok {
			break
		}
		if h.firstSeq != st.head()+1 {
			return st, -1, corruptError(path, off, st.head(), fmt.Sprintf("it holds seq %d where seq %d belongs", h.firstSeq, st.head()+1), -1)
		}
		raw, err := s.rawPayload(h, payload)
		if err == nil {
			events, err = decodeEvents(raw, h.firstSeq, h.count, 0, events[:0])
		}
		if err != nil {
			return st, -1, corruptError(path, off, st.head(), err.Error(), -1)
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
func validatePrefix(f *os.File, path string, tok token, head int64) (ok bool, err error) {
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
			return false, corruptError(path, bad.off, seen, bad.reason, next)
		case !ok:
			return fr.off == tok.size && seen == head, nil
		case h.firstSeq != seen+1:
			return false, corruptError(path, off, seen, fmt.Sprintf("it holds seq %d where seq %d belongs", h.firstSeq, seen+1), -1)
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

// corruptError describes damage in the middle of a log.
func corruptError(path string, off, lastSeq int64, reason string, nextValid int64) error {
	where := ""
	if nextValid >= 0 {
		where = fmt.Sprintf(", and valid records follow at offset %d", nextValid)
	}
	return fmt.Errorf("%w: %s: the record at offset %d, after seq %d, is damaged (%s)%s. Nothing was changed. Events 1 to %d can still be read; copy them out (for example by forking the session), then move %s out of the store to go on without it",
		ErrCorrupt, path, off, lastSeq, reason, where, lastSeq, path)
}

// encodeFrame appends one frame holding events (with consecutive seqs) to dst.
func (s *Store) encodeFrame(dst []byte, events []session.Event) ([]byte, uint32, error) {
	at := len(dst)
	dst = append(dst, make([]byte, frameHeaderLen)...)
	var raw []byte
	if s.enc == encRaw {
		for _, e := range events {
			dst = appendEvent(dst, e)
		}
		raw = dst[at+frameHeaderLen:]
	} else {
		for _, e := range events {
			raw = appendEvent(raw, e)
		}
		enc, err := s.encoder()
		if err != nil {
			return nil, 0, err
		}
		dst = enc.EncodeAll(raw, dst)
	}
	payload := dst[at+frameHeaderLen:]
	if len(raw) > maxFramePayload || len(payload) > maxFramePayload {
		return nil, 0, fmt.Errorf("%w: %d bytes in one append; split it", checkpoint.ErrTooLarge, len(raw))
	}
	hb := dst[at : at+frameHeaderLen]
	copy(hb, frameMagic)
	binary.LittleEndian.PutUint32(hb[8:], uint32(len(payload)))
	hb[12] = s.enc
	binary.LittleEndian.PutUint64(hb[16:], uint64(events[0].Seq))
	binary.LittleEndian.PutUint32(hb[24:], uint32(len(events)))
	binary.LittleEndian.PutUint32(hb[28:], uint32(len(raw)))
	crc := frameCRC(hb, payload)
	binary.LittleEndian.PutUint32(hb[4:], crc)
	return dst, crc, nil
}

// Append appends events to the session's log if its head is expectedHead.
// Concurrent appends to one session share one write and one fsync; each
// still gets its own head check. See checkpoint.Checkpointer.
func (s *Store) Append(ctx context.Context, id string, expectedHead int64, events []session.Event) (int64, error) {
	if err := s.enter(); err != nil {
		return 0, err
	}
	defer s.leave()
	if err := checkID("append", id); err != nil {
		return 0, err
	}
	if s.readOnly {
		return 0, fmt.Errorf("append %s: %w", id, checkpoint.ErrReadOnly)
	}
	evs, err := checkpoint.Prepare(id, expectedHead, events, s.maxEvent)
	if err != nil {
		return 0, err
	}
	req := &appendReq{ctx: ctx, expected: expectedHead, events: evs}
	for i := range evs {
		evs[i].Time = evs[i].Time.UTC()
		req.size += encodedEventSize(evs[i])
	}
	if req.size > maxFramePayload {
		return 0, fmt.Errorf("append %s: %w: %d bytes in one append is over this store's limit of %d; split it", id, checkpoint.ErrTooLarge, req.size, maxFramePayload)
	}
	if expectedHead == 0 {
		var p session.SessionStarted
		if err := json.Unmarshal(evs[0].Data, &p); err != nil {
			return 0, fmt.Errorf("append %s: %w: the session_started event's data is not valid (%v); build it with session.New", id, checkpoint.ErrInvalid, err)
		}
		req.ns, req.folder = p.Namespace, folderFor(p.Namespace)
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	h := s.acquire(id)
	defer s.release(h)
	h.group.Submit(req)
	return req.head, req.err
}

// commit runs one group commit: one lock, one head check per request, one
// write and one sync for every request that passed.
func (h *handle) commit(batch []*appendReq) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var live []*appendReq
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.err = err
		} else {
			live = append(live, r)
		}
	}
	var create *appendReq
	for _, r := range live {
		if r.expected == 0 {
			create = r
			break
		}
	}
	// Wait for the lock on behalf of the first caller still waiting.
	for len(live) > 0 {
		err := h.open(live[0].ctx, create)
		if err == nil {
			break
		}
		if live[0].ctx.Err() == nil {
			for _, r := range live {
				r.err = fmt.Errorf("append %s: %w", h.id, err)
			}
			return
		}
		live[0].err = live[0].ctx.Err()
		if live[0] == create {
			create = nil
			for _, r := range live[1:] {
				if r.expected == 0 {
					create = r
					break
				}
			}
		}
		live = live[1:]
	}
	if len(live) == 0 {
		return
	}
	if h.f == nil {
		for _, r := range live {
			r.err = &checkpoint.ConflictError{Session: h.id, Expected: r.expected, Actual: 0}
		}
		return
	}
	defer h.unlock()

	head := h.st.head()
	var accepted []*appendReq
	for _, r := range live {
		if r.expected != head {
			r.err = &checkpoint.ConflictError{Session: h.id, Expected: r.expected, Actual: head}
			continue
		}
		accepted = append(accepted, r)
		head += int64(len(r.events))
		r.head = head
	}
	if len(accepted) == 0 && h.reported {
		return
	}
	n := h.s.ns(h.folder)
	defer n.maybeCompact(accepted0ctx(accepted, live))
	if err := n.acquireShared(accepted0ctx(accepted, live)); err != nil {
		for _, r := range accepted {
			r.err = fmt.Errorf("append %s: %w", h.id, err)
		}
		return
	}
	defer n.releaseShared()
	if len(accepted) == 0 {
		// Nothing to add, but the index did not know this state.
		if n.write(indexRecord{kind: recSummary, id: h.id, st: h.st}) == nil {
			h.reported = true
		}
		return
	}
	if err := n.write(indexRecord{kind: recIntent, id: h.id}); err != nil {
		for _, r := range accepted {
			r.err = fmt.Errorf("append %s: %w", h.id, err)
		}
		return
	}
	h.reported = false
	for len(accepted) > 0 {
		k, bytes := 1, accepted[0].size
		for k < len(accepted) && bytes+accepted[k].size <= softFrameBytes {
			bytes += accepted[k].size
			k++
		}
		if err := h.writeFrame(accepted[:k]); err != nil {
			for _, r := range accepted {
				r.err, r.head = fmt.Errorf("append %s: %w", h.id, err), 0
			}
			break
		}
		accepted = accepted[k:]
	}
	// The log is durable; if the index cannot record it, its intent record
	// makes readers fold the log instead.
	if n.write(indexRecord{kind: recSummary, id: h.id, st: h.st}) == nil {
		h.reported = true
	}
}

// compactEvery is how many index records a process appends between checks
// that the index is not growing without bound.
const compactEvery = 1024

// maybeCompact compacts the index now and then, outside any lock, when it
// has grown well past its size after the last rewrite.
func (n *nsIndex) maybeCompact(ctx context.Context) {
	if w := n.writes.Load(); w < compactEvery || !n.writes.CompareAndSwap(w, 0) {
		return
	}
	_, size, ok, err := statID(n.path)
	if err == nil && ok && size > 1<<20 && size > 4*n.baseSize.Load() {
		n.ensure(ctx) // best effort: a failure here is retried next time
	}
}

func accepted0ctx(accepted, live []*appendReq) context.Context {
	if len(accepted) > 0 {
		return accepted[0].ctx
	}
	return live[0].ctx
}

// writeFrame writes the events of reqs as one frame after the log's end and
// syncs it. On failure the log is cut back to where it was.
func (h *handle) writeFrame(reqs []*appendReq) error {
	var events []session.Event
	for _, r := range reqs {
		events = append(events, r.events...)
	}
	var buf []byte
	if h.size == 0 {
		buf = append(buf, logMagic...)
	}
	frameOff := h.size + int64(len(buf))
	buf, crc, err := h.s.encodeFrame(buf, events)
	if err != nil {
		return err
	}
	created := h.size == 0
	_, err = h.f.WriteAt(buf, h.size)
	if err == nil {
		err = datasync(h.f)
	}
	if err == nil && created {
		err = syncDir(filepath.Dir(h.path))
	}
	if err != nil {
		// Take the partial frame back out; if that fails too, the next
		// writer finds it as a torn tail and cuts it.
		if h.f.Truncate(h.size) != nil || datasync(h.f) != nil {
			h.loaded = false
		}
		return fmt.Errorf("write %s: %w", h.path, err)
	}
	st := h.st
	st.sum.Open = slices.Clone(st.sum.Open)
	for _, e := range events {
		st.sum.Apply(e)
	}
	st.sum.ID = h.id
	h.size += int64(len(buf))
	st.tok = token{size: h.size, lastOff: frameOff, lastCRC: crc}
	h.st = st
	return nil
}

// Truncate drops the events after keepThrough. The kept frames are copied to
// a new file that replaces the log by rename, so readers holding the old file
// keep a consistent view. See checkpoint.Checkpointer.
func (s *Store) Truncate(ctx context.Context, id string, keepThrough, expectedHead int64) (int64, error) {
	if err := s.enter(); err != nil {
		return 0, err
	}
	defer s.leave()
	if err := checkID("truncate", id); err != nil {
		return 0, err
	}
	if s.readOnly {
		return 0, fmt.Errorf("truncate %s: %w", id, checkpoint.ErrReadOnly)
	}
	h := s.acquire(id)
	defer s.release(h)
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.open(ctx, nil); err != nil {
		return 0, fmt.Errorf("truncate %s: %w", id, err)
	}
	if h.f == nil {
		return 0, fmt.Errorf("truncate %s: %w", id, checkpoint.ErrNotFound)
	}
	defer h.unlock()
	head := h.st.head()
	switch {
	case head == 0:
		return 0, fmt.Errorf("truncate %s: %w", id, checkpoint.ErrNotFound)
	case expectedHead != head:
		return 0, &checkpoint.ConflictError{Session: id, Expected: expectedHead, Actual: head}
	case keepThrough < 1 || keepThrough > head:
		return 0, fmt.Errorf("truncate %s: %w: cannot keep events through seq %d of a log whose head is %d; pick a seq from 1 to the head", id, checkpoint.ErrInvalid, keepThrough, head)
	case keepThrough == head:
		return head, nil
	}
	if err := h.truncate(ctx, keepThrough); err != nil {
		return 0, fmt.Errorf("truncate %s: %w", id, err)
	}
	return keepThrough, nil
}

func (h *handle) truncate(ctx context.Context, keep int64) error {
	s := h.s
	tmp := h.path + ".tmp"
	nf, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			nf.Close()
			os.Remove(tmp)
		}
	}()
	w := &bufWriter{f: nf}
	w.write([]byte(logMagic))
	st := logState{sum: session.Summary{ID: h.id}}
	fr := newFrameReader(h.f, h.path, logHeaderLen, h.size)
	fr.reuse = true
	var events []session.Event
	for st.head() < keep {
		off := w.size()
		fh, frame, payload, good, bad, err := fr.next()
		if err != nil {
			return err
		}
		if !good {
			reason := "the log ends early"
			if bad != nil {
				reason = bad.reason
			}
			return corruptError(h.path, fr.off, st.head(), reason, -1)
		}
		raw, err := s.rawPayload(fh, payload)
		if err == nil {
			events, err = decodeEvents(raw, fh.firstSeq, fh.count, 0, events[:0])
		}
		if err != nil {
			return corruptError(h.path, fr.off, st.head(), err.Error(), -1)
		}
		crc := fh.crc
		if fh.lastSeq() <= keep {
			w.write(frame)
		} else {
			// The frame straddles the cut: write its kept events as a new frame.
			events = events[:keep-fh.firstSeq+1]
			var b []byte
			if b, crc, err = s.encodeFrame(nil, events); err != nil {
				return err
			}
			w.write(b)
		}
		for _, e := range events {
			st.sum.Apply(e)
		}
		st.tok = token{size: w.size(), lastOff: off, lastCRC: crc}
	}
	if err := w.flush(); err != nil {
		return err
	}
	st.sum.ID = h.id
	if err := h.replace(ctx, nf, tmp, st, w.size()); err != nil {
		return err
	}
	ok = true
	return nil
}

// bufWriter writes a new file through a buffer, remembering the first error.
type bufWriter struct {
	f   *os.File
	off int64 // bytes flushed
	buf []byte
	err error
}

func (w *bufWriter) size() int64 { return w.off + int64(len(w.buf)) }

func (w *bufWriter) write(b []byte) {
	w.buf = append(w.buf, b...)
	if len(w.buf) >= 1<<20 {
		w.flush()
	}
}

func (w *bufWriter) flush() error {
	if w.err == nil && len(w.buf) > 0 {
		_, w.err = w.f.WriteAt(w.buf, w.off)
	}
	w.off += int64(len(w.buf))
	w.buf = w.buf[:0]
	return w.err
}

// replace makes the new file (holding state st, size bytes) the log: synced,
// locked, announced to the index, renamed over the log, reported.
func (h *handle) replace(ctx context.Context, nf *os.File, tmp string, st logState, size int64) error {
	if err := datasync(nf); err != nil {
		return err
	}
	if ok, err := tryLock(nf, true); !ok || err != nil {
		return fmt.Errorf("lock %s: busy or failed (%v)", tmp, err)
	}
	n := h.s.ns(h.folder)
	if err := n.acquireShared(ctx); err != nil {
		return err
	}
	defer n.releaseShared()
	if err := n.write(indexRecord{kind: recIntent, id: h.id}); err != nil {
		return err
	}
	if err := os.Rename(tmp, h.path); err != nil {
		return err
	}
	fid, _, ferr := fstatID(nf)
	if ferr == nil {
		h.s.setValidated(h.id, fid) // built from checked frames
	}
	unlock(h.f)
	h.f.Close()
	h.f, h.fid, h.st, h.size, h.loaded, h.reported = nf, fid, st, size, ferr == nil, false
	if err := syncDir(filepath.Dir(h.path)); err != nil {
		return err
	}
	if n.write(indexRecord{kind: recSummary, id: h.id, st: st}) == nil {
		h.reported = true
	}
	return nil
}

// Delete removes the session's log, its mapping and its index entry. See
// checkpoint.Checkpointer.
func (s *Store) Delete(ctx context.Context, id string) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	if err := checkID("delete", id); err != nil {
		return err
	}
	if s.readOnly {
		return fmt.Errorf("delete %s: %w", id, checkpoint.ErrReadOnly)
	}
	h := s.acquire(id)
	defer s.release(h)
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.open(ctx, nil); err != nil {
		return fmt.Errorf("delete %s: %w", id, err)
	}
	if h.f == nil {
		return fmt.Errorf("delete %s: %w", id, checkpoint.ErrNotFound)
	}
	exists := h.st.head() > 0
	n := s.ns(h.folder)
	err := n.acquireShared(ctx)
	if err != nil {
		unlock(h.f)
		h.drop()
		return fmt.Errorf("delete %s: %w", id, err)
	}
	err = h.remove(n)
	n.releaseShared()
	s.mu.Lock()
	delete(s.checked, id)
	s.mu.Unlock()
	unlock(h.f)
	h.drop()
	if err != nil {
		return fmt.Errorf("delete %s: %w", id, err)
	}
	if !exists {
		return fmt.Errorf("delete %s: %w", id, checkpoint.ErrNotFound)
	}
	return nil
}

// remove deletes the locked log, then its mapping: a crash in between leaves
// a mapping to nothing, which reads as no session.
func (h *handle) remove(n *nsIndex) error {
	s := h.s
	if err := n.write(indexRecord{kind: recIntent, id: h.id}); err != nil {
		return err
	}
	if err := os.Remove(h.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	os.Remove(h.path + ".tmp")
	if err := syncDir(filepath.Dir(h.path)); err != nil {
		return err
	}
	if t, err := os.Readlink(s.mappingPath(h.id)); err == nil && t == mappingTarget(h.folder, h.id) {
		if err := os.Remove(s.mappingPath(h.id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if err := syncDir(filepath.Join(s.root, idsDir)); err != nil {
			return err
		}
	}
	return n.write(indexRecord{kind: recDelete, id: h.id})
}
