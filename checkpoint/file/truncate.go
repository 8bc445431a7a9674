package file

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
)

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
	if err := dropFold(h.path, keepThrough); err != nil { // fold.go
		return 0, fmt.Errorf("truncate %s: drop its fold: %w", id, err)
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
			return corruptError(h.id, h.path, fr.off, st.head(), reason, -1)
		}
		raw, err := s.rawPayload(fh, payload)
		if err == nil {
			events, err = decodeEvents(raw, fh.firstSeq, fh.count, 0, events[:0])
		}
		if err != nil {
			return corruptError(h.id, h.path, fr.off, st.head(), err.Error(), -1)
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
	if err := n.syncRecords(); err != nil {
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
