package file

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"os"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
)

// Read streams the session's events with seq >= fromSeq. It takes a shared
// lock only long enough to note the log's size, then reads that snapshot
// without holding the lock: frames are never changed in place (Truncate
// replaces the file), so writers are not held up. Event data is never
// re-parsed: it is handed out as stored. See checkpoint.Checkpointer.
func (s *Store) Read(ctx context.Context, id string, fromSeq int64) iter.Seq2[session.Event, error] {
	return func(yield func(session.Event, error) bool) {
		f, path, size, recorded, err := s.openSnapshot(ctx, id)
		if err != nil {
			yield(session.Event{}, err)
			return
		}
		defer f.Close()
		if err := s.readFrames(ctx, f, path, id, size, recorded, fromSeq, yield); err != nil {
			yield(session.Event{}, err)
		}
	}
}

// openSnapshot opens the session's log and returns the size of its
// committed part and the head the index recorded for it (0 if none), both
// noted under a shared lock.
func (s *Store) openSnapshot(ctx context.Context, id string) (f *os.File, path string, size, recorded int64, err error) {
	if err := s.enter(); err != nil {
		return nil, "", 0, 0, err
	}
	defer s.leave()
	if err := checkID("read", id); err != nil {
		return nil, "", 0, 0, err
	}
	for range 100 {
		folder, _, ok, err := s.lookup(id)
		if err != nil {
			return nil, "", 0, 0, err
		}
		if !ok {
			return nil, "", 0, 0, fmt.Errorf("read %s: %w", id, checkpoint.ErrNotFound)
		}
		path := s.logPath(folder, id)
		f, err := os.Open(path)
		if errors.Is(err, fs.ErrNotExist) {
			if rec, rerr := s.recorded(folder, id); rerr == nil && rec > 0 {
				return nil, "", 0, 0, fmt.Errorf("read %s: %w", id, &checkpoint.CorruptError{Session: id, Seq: 1,
					Reason: fmt.Sprintf("its log %s is missing, but the store recorded head %d for it", path, rec)})
			}
			return nil, "", 0, 0, fmt.Errorf("read %s: %w", id, checkpoint.ErrNotFound)
		}
		if err != nil {
			return nil, "", 0, 0, fmt.Errorf("read %s: %w", id, err)
		}
		if err := lock(ctx, f, false); err != nil {
			f.Close()
			return nil, "", 0, 0, fmt.Errorf("read %s: %w", id, err)
		}
		same, size, err := sameFile(f, path)
		var recorded int64
		if err == nil && same {
			recorded, err = s.recorded(folder, id)
		}
		unlock(f)
		if err != nil {
			f.Close()
			return nil, "", 0, 0, fmt.Errorf("read %s: %w", id, err)
		}
		if !same {
			f.Close() // replaced or removed while we waited: look again
			continue
		}
		return f, path, size, recorded, nil
	}
	return nil, "", 0, 0, fmt.Errorf("read %s: the log kept changing while this reader waited; try again", id)
}

// readFrames yields the events of the snapshot [0, size) of a log, which
// must reach recorded, the head its index recorded.
func (s *Store) readFrames(ctx context.Context, f *os.File, path, id string, size, recorded, fromSeq int64, yield func(session.Event, error) bool) error {
	torn := size == 0
	if !torn {
		var err error
		if torn, err = checkLogHeader(f, path, size); err != nil {
			return fmt.Errorf("read %s: %w", id, err)
		}
	}
	if torn {
		if recorded > 0 {
			return fmt.Errorf("read %s: %w", id, cutError(id, path, 0, size, recorded))
		}
		return fmt.Errorf("read %s: %w", id, checkpoint.ErrNotFound)
	}
	fr := newFrameReader(f, path, logHeaderLen, size)
	var head int64
	var events []session.Event
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		// Registered as a call in progress while decoding, so that Close
		// never pulls the decoder from under a reader.
		if err := s.enter(); err != nil {
			return err
		}
		var more bool
		var err error
		events, more, err = s.readFrame(fr, id, &head, fromSeq, events[:0])
		s.leave()
		if err != nil {
			return err
		}
		for _, e := range events {
			if !yield(e, nil) {
				return nil
			}
		}
		if !more {
			break
		}
	}
	if head < recorded {
		return fmt.Errorf("read %s: %w", id, cutError(id, path, head, fr.off, recorded))
	}
	if head == 0 {
		return fmt.Errorf("read %s: %w", id, checkpoint.ErrNotFound)
	}
	return nil
}

// readFrame decodes the next frame's events with seq >= fromSeq into events.
// more is false at the end of the snapshot or at a torn tail.
func (s *Store) readFrame(fr *frameReader, id string, head *int64, fromSeq int64, events []session.Event) (_ []session.Event, more bool, _ error) {
	off := fr.off
	h, _, payload, ok, bad, err := fr.next()
	if err != nil {
		return events, false, fmt.Errorf("read %s: %w", id, err)
	}
	if bad != nil {
		next, err := validFrameAfter(fr.r, bad.off, fr.end)
		if err != nil {
			return events, false, fmt.Errorf("read %s: %w", id, err)
		}
		if next >= 0 {
			if first, ok := fr.firstSeqAt(next); ok && first > *head+1 && first <= fromSeq {
				// The damage holds only seqs before the ones asked for:
				// read on from the next good frame (salvage does this).
				fr.off, *head = next, first-1
				return events, true, nil
			}
			return events, false, fmt.Errorf("read %s: %w", id, askedFor(corruptError(id, fr.path, bad.off, *head, bad.reason, next), fromSeq))
		}
		return events, false, nil // a torn tail: never acknowledged, never read
	}
	if !ok {
		return events, false, nil
	}
	if h.firstSeq != *head+1 && (h.firstSeq < *head+1 || h.firstSeq > fromSeq) {
		// A gap is damage unless it lies wholly before the seqs asked for.
		return events, false, fmt.Errorf("read %s: %w", id, askedFor(corruptError(id, fr.path, off, *head, fmt.Sprintf("it holds seq %d where seq %d belongs", h.firstSeq, *head+1), -1), fromSeq))
	}
	*head = h.lastSeq()
	if *head < fromSeq {
		return events, true, nil
	}
	raw, err := s.rawPayload(h, payload)
	if err == nil {
		events, err = decodeEvents(raw, h.firstSeq, h.count, fromSeq, events)
	}
	if err != nil {
		return events, false, fmt.Errorf("read %s: %w", id, corruptError(id, fr.path, off, h.firstSeq-1, err.Error(), -1))
	}
	return events, true, nil
}

// askedFor makes a *checkpoint.CorruptError name the first seq a Read from
// fromSeq could not read: seqs before fromSeq were not asked for.
func askedFor(err error, fromSeq int64) error {
	if ce, ok := checkpoint.IsCorrupt(err); ok && ce.Seq < fromSeq {
		ce.Seq = fromSeq
	}
	return err
}

// firstSeqAt returns the first seq of the frame at off, which
// validFrameAfter found whole and verified.
func (fr *frameReader) firstSeqAt(off int64) (int64, bool) {
	got, err := fr.fill(off, frameHeaderLen)
	if err != nil || !got {
		return 0, false
	}
	h, err := parseFrameHeader(fr.buf[off-fr.bufO:][:frameHeaderLen])
	if err != nil {
		return 0, false
	}
	return h.firstSeq, true
}
