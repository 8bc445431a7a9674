package file

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
)

// Index file names inside a namespace folder.
const (
	indexName     = "index"
	indexLockName = "index.lock"
	indexTmpName  = "index.tmp"
	// indexMagic opens every index file: 14 bytes of name and a 2-byte
	// big-endian format version (indexFormat). A build that changes the
	// records' layout must write a higher version: this one refuses an
	// index of a version above its own (ErrNewer) instead of taking it for
	// damage and rebuilding it in the old format.
	indexMagic  = "LITEAGENT-IDX\n\x00\x01"
	indexFormat = 1
	// recordHeaderLen: CRC32C and length before each record's payload.
	recordHeaderLen = 8
	// maxRecordLen bounds a sane record (a summary with its open calls).
	maxRecordLen = 16 << 20
)

// entry is what an index says about one session.
type entry struct {
	id      string
	st      logState
	has     bool   // st holds a summary
	pending bool   // a writer announced a change and did not report it (yet)
	gen     uint64 // bumped by every record applied for the session
}

// nsIndex is this process's view of one namespace's index file: a journal
// of summary records, read incrementally and rewritten (compacted) now and
// then. The logs are the truth; the index is derived from them and rebuilt
// when it is missing, damaged or written before the machine last booted.
type nsIndex struct {
	s        *Store
	folder   string
	dir      string
	path     string
	lockPath string

	// Records are appended under a shared flock on index.lock and the file
	// is rewritten under an exclusive one. In this process, rw stands for
	// the same (one open file can hold only one flock), and shared counts
	// the holders of the one shared flock.
	rw     sync.RWMutex
	lmu    sync.Mutex
	lockF  *os.File
	shared int
	// recheck is set when the shared flock is taken anew: until then the
	// file cannot have been replaced, so appends skip checking it.
	recheck atomic.Bool
	// writes counts records appended by this process, to compact now and
	// then even when this process never lists.
	writes atomic.Int64
	// baseSize is the file's size when it was last loaded (after a
	// rewrite, its compact size).
	baseSize atomic.Int64

	mu       sync.Mutex // guards everything below
	f        *os.File   // the index file (read-write, O_APPEND, unless read-only)
	fid      fileID
	off      int64 // bytes applied
	loaded   bool
	stale    bool  // entries may disagree with the logs: verify before trusting
	damaged  bool  // the file is missing or damaged: rewrite it (unless read-only)
	newer    error // a newer lite-agent wrote the file (wraps a *session.NewerError): neither read on nor written
	verified bool  // entries were checked against the logs in memory
	entries  map[string]*entry
	npending int // entries with pending set
	records  int // records applied since the file was loaded
	sorted   []*entry
	dirty    bool // sorted is out of date
	buf      []byte
}

func newNSIndex(s *Store, folder string) *nsIndex {
	dir := s.nsPath(folder)
	return &nsIndex{
		s:        s,
		folder:   folder,
		dir:      dir,
		path:     filepath.Join(dir, indexName),
		lockPath: filepath.Join(dir, indexLockName),
		entries:  map[string]*entry{},
	}
}

func (n *nsIndex) close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.f != nil {
		n.f.Close()
		n.f = nil
	}
	n.loaded = false
	n.lmu.Lock()
	defer n.lmu.Unlock()
	if n.lockF != nil {
		n.lockF.Close()
		n.lockF = nil
	}
}

// createIndex creates an empty index file recording boot (fs.ErrExist if
// there is one). An index created with boot "" is verified against the logs
// by its next reader.
func createIndex(path, boot string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	b := appendFramedRecord([]byte(indexMagic), indexRecord{kind: recHeader, id: boot})
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// appendFramedRecord appends one record with its CRC32C and length.
func appendFramedRecord(b []byte, rec indexRecord) []byte {
	start := len(b)
	b = append(b, make([]byte, recordHeaderLen)...)
	b = appendRecord(b, rec)
	binary.LittleEndian.PutUint32(b[start+4:], uint32(len(b)-start-recordHeaderLen))
	binary.LittleEndian.PutUint32(b[start:], crc32.Checksum(b[start+4:], castagnoli))
	return b
}

// lockFile returns the open index.lock; callers hold lmu or rw exclusively.
func (n *nsIndex) lockFile() (*os.File, error) {
	if n.lockF == nil {
		flag := os.O_RDWR | os.O_CREATE
		if n.s.readOnly {
			flag = os.O_RDONLY
		}
		f, err := os.OpenFile(n.lockPath, flag, 0o600)
		if err != nil {
			return nil, err
		}
		n.lockF = f
	}
	return n.lockF, nil
}

// acquireShared lets the caller append records until releaseShared.
func (n *nsIndex) acquireShared(ctx context.Context) error {
	n.rw.RLock()
	n.lmu.Lock()
	defer n.lmu.Unlock()
	if n.shared == 0 {
		n.recheck.Store(true)
		f, err := n.lockFile()
		if err == nil {
			err = lock(ctx, f, false)
			if err != nil {
				f.Close()
				n.lockF = nil
			}
		}
		if err != nil {
			n.rw.RUnlock()
			return fmt.Errorf("lock index %s: %w", n.path, err)
		}
	}
	n.shared++
	return nil
}

func (n *nsIndex) releaseShared() {
	n.lmu.Lock()
	n.shared--
	if n.shared == 0 && n.lockF != nil {
		unlock(n.lockF)
	}
	n.lmu.Unlock()
	n.rw.RUnlock()
}

// write appends records; the caller holds acquireShared. The records are
// not synced: the index is derived data (see doc.go for why that is safe).
func (n *nsIndex) write(recs ...indexRecord) error {
	var b []byte
	for _, r := range recs {
		b = appendFramedRecord(b, r)
	}
	n.writes.Add(int64(len(recs)))
	n.mu.Lock()
	defer n.mu.Unlock()
	for range 3 {
		if n.loaded && n.recheck.Load() {
			// Still in place unless it lost its name (replaced or removed).
			if ok, _, err := linked(n.f); err == nil && ok {
				n.recheck.Store(false)
			}
		}
		if n.newer != nil {
			return n.newer // never a record of this build's in a newer index
		}
		if n.loaded && !n.recheck.Load() {
			_, err := n.f.Write(b)
			if err != nil {
				return fmt.Errorf("write index %s: %w", n.path, err)
			}
			return nil
		}
		// Make sure n.f is the index file now in place. The records
		// themselves are read by the next refresh.
		id, _, ok, err := statID(n.path)
		if err != nil {
			return fmt.Errorf("write index %s: %w", n.path, err)
		}
		if !ok {
			// The index is missing (removed by hand?): start one that its
			// next reader rebuilds from the logs.
			if err := createIndex(n.path, ""); err != nil && !errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("create index %s: %w", n.path, err)
			}
			continue
		}
		if !n.loaded || id != n.fid {
			if err := n.loadLocked(); err != nil {
				return err
			}
		}
		n.recheck.Store(!n.loaded)
	}
	return fmt.Errorf("write index %s: the file keeps disappearing", n.path)
}

// refreshLocked applies the records appended since the last call, reloading
// the file if it was replaced. It never blocks on a lock. An index a newer
// lite-agent wrote is an ErrNewer error until it is replaced.
func (n *nsIndex) refreshLocked() error {
	if err := n.refreshFile(); err != nil {
		return err
	}
	return n.newer
}

// refreshFile is refreshLocked before the check for a newer index.
func (n *nsIndex) refreshFile() error {
	id, size, ok, err := statID(n.path)
	if err != nil {
		return fmt.Errorf("read index %s: %w", n.path, err)
	}
	if !ok {
		if n.loaded {
			n.f.Close()
			n.f, n.loaded, n.verified = nil, false, false
		}
		if !n.verified {
			n.stale, n.damaged = true, true
		}
		return nil
	}
	if !n.loaded || id != n.fid {
		if err := n.loadLocked(); err != nil {
			return err
		}
		id, size = n.fid, n.off
		if _, sz, err := fstatID(n.f); err == nil {
			size = sz
		}
	}
	if size <= n.off {
		return nil
	}
	if cap(n.buf) < int(size-n.off) {
		n.buf = make([]byte, size-n.off)
	}
	b := n.buf[:size-n.off]
	if _, err := n.f.ReadAt(b, n.off); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read index %s: %w", n.path, err)
	}
	n.applyLocked(b)
	return nil
}

// loadLocked opens the index file anew and reads its header.
func (n *nsIndex) loadLocked() error {
	if n.f != nil {
		n.f.Close()
		n.f = nil
	}
	n.loaded, n.verified, n.stale, n.damaged, n.newer = false, false, false, false, nil
	n.entries, n.npending, n.records, n.dirty, n.off = map[string]*entry{}, 0, 0, true, 0
	flag := os.O_RDWR | os.O_APPEND
	if n.s.readOnly {
		flag = os.O_RDONLY
	}
	f, err := os.OpenFile(n.path, flag, 0)
	if errors.Is(err, fs.ErrNotExist) {
		n.stale, n.damaged = true, true
		return nil
	}
	if err != nil {
		return fmt.Errorf("open index %s: %w", n.path, err)
	}
	id, size, err := fstatID(f)
	if err != nil {
		f.Close()
		return fmt.Errorf("open index %s: %w", n.path, err)
	}
	n.f, n.fid, n.loaded = f, id, true
	n.baseSize.Store(size)
	hb := make([]byte, min(size, int64(len(indexMagic))+recordHeaderLen+256))
	if _, err := f.ReadAt(hb, 0); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read index %s: %w", n.path, err)
	}
	if v, ok := newerIndex(hb); ok {
		n.newer = fmt.Errorf("the index %s was %w", n.path, &session.NewerError{Format: "index format", Version: v, Known: indexFormat})
		n.off = size
		return nil
	}
	if len(hb) < len(indexMagic) || string(hb[:len(indexMagic)]) != indexMagic {
		n.stale, n.damaged, n.off = true, true, size // damaged or foreign: rebuilt from the logs
		return nil
	}
	rec, used, ok := nextRecord(hb[len(indexMagic):])
	if !ok || rec.kind != recHeader {
		n.stale, n.damaged, n.off = true, true, size
		return nil
	}
	n.off = int64(len(indexMagic) + used)
	n.stale = rec.id == "" || rec.id != n.s.boot
	return nil
}

// newerIndex reports whether b, the start of an index file, names an index
// format newer than indexFormat, and which.
func newerIndex(b []byte) (int, bool) {
	name := len(indexMagic) - 2
	if len(b) < len(indexMagic) || string(b[:name]) != indexMagic[:name] {
		return 0, false
	}
	v := int(binary.BigEndian.Uint16(b[name:]))
	return v, v > indexFormat
}

// nextRecord decodes the first record of b. ok is false when b does not
// start with a complete, valid record.
func nextRecord(b []byte) (indexRecord, int, bool) {
	if len(b) < recordHeaderLen {
		return indexRecord{}, 0, false
	}
	l := int64(binary.LittleEndian.Uint32(b[4:8]))
	if int64(len(b)-recordHeaderLen) < l {
		return indexRecord{}, 0, false
	}
	end := recordHeaderLen + int(l)
	if crc32.Checksum(b[4:end], castagnoli) != binary.LittleEndian.Uint32(b[0:4]) {
		return indexRecord{}, 0, false
	}
	rec, err := decodeRecord(b[recordHeaderLen:end])
	if err != nil {
		return indexRecord{}, 0, false
	}
	return rec, end, true
}

// applyLocked applies the records in b (the bytes after n.off).
func (n *nsIndex) applyLocked(b []byte) {
	for len(b) > 0 {
		rec, used, ok := nextRecord(b)
		if !ok {
			l := int64(0)
			if len(b) >= recordHeaderLen {
				l = int64(binary.LittleEndian.Uint32(b[4:8]))
			}
			if len(b) >= recordHeaderLen && (l <= int64(len(b)-recordHeaderLen) || l > maxRecordLen) {
				// A complete record that does not check out, or a length
				// no record has: damage, not a write in progress. Rebuild
				// from the logs.
				n.stale, n.damaged, n.verified = true, true, false
				n.off += int64(len(b))
			}
			return // else a record being written: read it next time
		}
		n.apply(rec)
		n.off += int64(used)
		b = b[used:]
	}
}

func (n *nsIndex) apply(rec indexRecord) {
	n.records++
	e := n.entries[rec.id]
	switch rec.kind {
	case recIntent:
		if e == nil {
			e = &entry{id: rec.id}
			n.entries[rec.id] = e
		}
		n.mark(e, true)
		e.gen++
	case recSummary:
		if err := session.CheckFold(&rec.st.sum); err != nil {
			n.newer = fmt.Errorf("the summary of session %s in the index %s was %w", rec.id, n.path, err)
			return
		}
		if e == nil {
			e = &entry{id: rec.id}
			n.entries[rec.id] = e
		}
		e.st, e.has = rec.st, true
		n.mark(e, false)
		e.gen++
		n.dirty = true
	case recDelete:
		n.remove(rec.id)
	}
}

// mark sets or clears an entry's pending flag, keeping count.
func (n *nsIndex) mark(e *entry, pending bool) {
	if e.pending != pending {
		e.pending = pending
		if pending {
			n.npending++
		} else {
			n.npending--
		}
	}
}

// remove forgets a session.
func (n *nsIndex) remove(id string) {
	if e := n.entries[id]; e != nil {
		n.mark(e, false)
		delete(n.entries, id)
		n.dirty = true
	}
}

// ensure brings the view up to date: new records are applied and, when the
// index cannot be trusted, it is checked against the logs (and rewritten
// unless the store is read-only). It also compacts an index that has grown
// well past its live records.
func (n *nsIndex) ensure(ctx context.Context) error {
	n.mu.Lock()
	err := n.refreshLocked()
	verify := n.stale && !n.verified
	// A stale index is rewritten when that records something: the boot it
	// was checked in (where the boot is known), or a repaired file.
	rewrite := !n.s.readOnly && (n.damaged || verify && n.s.boot != "" || n.needsCompaction())
	if _, serr := os.Stat(n.dir); errors.Is(serr, fs.ErrNotExist) {
		// The namespace folder is gone: nothing to index.
		n.entries, n.npending, n.dirty, n.verified, verify, rewrite = map[string]*entry{}, 0, true, true, false, false
	}
	if err == nil && verify && !rewrite {
		err = n.verifyLocked()
	}
	n.mu.Unlock()
	if err != nil || !rewrite {
		return err
	}
	return n.rewrite(ctx)
}

// needsCompaction reports an index file grown well past its live records.
func (n *nsIndex) needsCompaction() bool {
	return n.loaded && n.records > 2*len(n.entries)+1024
}

// verifyLocked checks every entry against its log and finds logs the index
// does not know. Entries that do not match are marked pending, so they are
// refolded from their logs before use.
func (n *nsIndex) verifyLocked() error {
	des, err := os.ReadDir(n.dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("check index %s: %w", n.path, err)
	}
	logs := map[string]bool{}
	for _, de := range des {
		name := de.Name()
		id, ok := strings.CutSuffix(name, ".log")
		if ok && de.Type().IsRegular() && checkID("", id) == nil {
			logs[id] = true
		}
	}
	for id := range n.entries {
		if !logs[id] {
			n.remove(id)
		}
	}
	for id := range logs {
		e := n.entries[id]
		if e == nil {
			e = &entry{id: id}
			n.entries[id] = e
		}
		if e.has && !e.pending && !checkpoint.Stale(&e.st.sum) && n.keep(id, e.st.tok) {
			continue
		}
		n.mark(e, true)
		e.gen++
	}
	n.verified = true
	return nil
}

// keep reports whether an entry whose token is tok can be kept as it is:
// the log of id still ends where tok says, or it is shorter than tok says.
// A shorter log lost acknowledged events (the intents of Truncate and
// Delete are synced, so no lost record explains it): the entry stays, so
// that reads and writes compare the log with it and report the damage.
// Otherwise records of later writes were lost (they are not synced) and
// the entry is refolded from the log.
func (n *nsIndex) keep(id string, tok token) bool {
	f, err := os.Open(n.s.logPath(n.folder, id))
	if err != nil {
		return false
	}
	defer f.Close()
	_, size, err := fstatID(f)
	return err == nil && (size < tok.size || size == tok.size && tokenMatches(f, tok))
}

// tokenMatches reports whether the frame tok names is where it says, whole
// and with its checksum: then the log's first tok.size bytes are the ones the
// token's summary was folded from. It reads that one frame.
func tokenMatches(r io.ReaderAt, tok token) bool {
	if tok.size <= logHeaderLen || tok.lastOff < logHeaderLen || tok.size-tok.lastOff > frameHeaderLen+maxFramePayload {
		return false
	}
	frame := make([]byte, tok.size-tok.lastOff)
	if len(frame) < frameHeaderLen {
		return false
	}
	if _, err := r.ReadAt(frame, tok.lastOff); err != nil {
		return false
	}
	h, err := parseFrameHeader(frame)
	return err == nil && h.crc == tok.lastCRC && h.size() == int64(len(frame)) &&
		frameCRC(frame, frame[frameHeaderLen:]) == h.crc
}

// resolveLocked refolds pending entries whose logs nobody is writing, from
// the entry's token onwards when it still holds. Entries whose log is locked
// by a writer stay pending: the writer reports the change itself.
func (n *nsIndex) resolveLocked() {
	for id, e := range n.entries {
		if e.pending {
			n.resolveOneLocked(id, e)
		}
	}
}

// fold reads the log of id under a shared lock (without waiting for it) and
// returns its state. gone: the log does not exist or holds no events;
// busy: a writer holds it or it could not be read (st nil).
func (n *nsIndex) fold(id string, e *entry) (st *logState, gone, busy bool) {
	path := n.s.logPath(n.folder, id)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, true, false
	}
	if err != nil {
		return nil, false, true
	}
	defer f.Close()
	if ok, err := tryLock(f, false); !ok || err != nil {
		return nil, false, true
	}
	defer unlock(f)
	same, size, err := sameFile(f, path)
	if err != nil || !same {
		return nil, false, true
	}
	var base *logState
	if e.has {
		base = &e.st
	}
	got, _, err := n.s.loadState(f, path, id, size, base, false)
	if err != nil {
		return nil, false, true
	}
	if got.head() == 0 {
		return nil, true, false
	}
	return &got, false, false
}

// rewrite replaces the index with a compact one holding the current summary
// of every session, checked against the logs first if the index was stale.
// It holds the index's exclusive lock: record writers wait (they hold it
// shared for one commit at most); session locks are only tried, never waited
// for, so a writer holding its log while waiting for the index cannot
// deadlock with it.
func (n *nsIndex) rewrite(ctx context.Context) error {
	n.rw.Lock()
	defer n.rw.Unlock()
	lf, err := n.lockFile()
	if err == nil {
		if err = lock(ctx, lf, true); err != nil {
			lf.Close()
			n.lockF = nil
		}
	}
	if err != nil {
		return fmt.Errorf("lock index %s: %w", n.path, err)
	}
	defer unlock(lf)

	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.refreshLocked(); err != nil {
		return err
	}
	if n.stale || n.damaged {
		if err := n.verifyLocked(); err != nil {
			return err
		}
	} else if !n.needsCompaction() {
		return nil // another process rewrote it meanwhile
	}
	n.resolveLocked()
	b := appendFramedRecord([]byte(indexMagic), indexRecord{kind: recHeader, id: n.s.boot})
	ids := make([]string, 0, len(n.entries))
	for id := range n.entries {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		e := n.entries[id]
		if e.has {
			b = appendFramedRecord(b, indexRecord{kind: recSummary, id: id, st: e.st})
		}
		if e.pending {
			b = appendFramedRecord(b, indexRecord{kind: recIntent, id: id})
		}
	}
	tmp := filepath.Join(n.dir, indexTmpName)
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("rewrite index %s: %w", n.path, err)
	}
	_, err = f.Write(b)
	if err == nil {
		// Synced so that a crash cannot leave an empty index in place of a
		// good one (which would cost a rebuild from every log).
		err = datasync(f)
	}
	if err == nil {
		err = os.Rename(tmp, n.path)
	}
	if err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("rewrite index %s: %w", n.path, err)
	}
	f.Close()
	if err := n.loadLocked(); err != nil {
		return err
	}
	return n.refreshLocked()
}

// head returns the summary of one session.
func (n *nsIndex) head(ctx context.Context, id string) (session.Summary, bool, error) {
	if err := n.ensure(ctx); err != nil {
		return session.Summary{}, false, err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	e := n.entries[id]
	if e == nil {
		// Not in the index: a log the index missed (or none at all).
		e = &entry{id: id}
		n.entries[id] = e
		n.mark(e, true)
	}
	if e.pending {
		n.resolveOneLocked(id, e)
	}
	if e = n.entries[id]; e == nil || !e.has {
		if e != nil && !e.pending {
			n.remove(id)
		}
		return session.Summary{}, false, nil
	}
	return cloneSummary(e.st.sum), true, nil
}

func (n *nsIndex) resolveOneLocked(id string, e *entry) {
	st, gone, busy := n.fold(id, e)
	switch {
	case gone:
		n.remove(id)
	case busy:
	case st != nil:
		e.st, e.has = *st, true
		n.mark(e, false)
		e.gen++
		n.dirty = true
	}
}

// list returns the namespace's summaries, newest first.
func (n *nsIndex) list(ctx context.Context, namespace string, opts checkpoint.ListOptions) ([]session.Summary, error) {
	if err := n.ensure(ctx); err != nil {
		return nil, err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.npending > 0 {
		n.resolveLocked()
	}
	if n.dirty {
		n.sorted = n.sorted[:0]
		for _, e := range n.entries {
			if e.has {
				n.sorted = append(n.sorted, e)
			}
		}
		slices.SortFunc(n.sorted, func(a, b *entry) int { return compareSummaryPtrs(&a.st.sum, &b.st.sum) })
		n.dirty = false
	}
	size := len(n.sorted)
	if opts.Limit > 0 {
		size = min(size, opts.Limit)
	}
	out := make([]session.Summary, 0, size)
	for _, e := range n.sorted {
		s := &e.st.sum
		if !opts.AllKinds && s.Kind != opts.Kind || namespace != "" && s.Namespace != namespace {
			continue
		}
		out = append(out, *s)
		if c := &out[len(out)-1]; c.Open != nil || c.Parent != nil {
			*c = cloneSummary(*c)
		}
		if opts.Limit > 0 && len(out) == opts.Limit {
			break
		}
	}
	return out, nil
}
