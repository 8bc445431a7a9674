package file

import (
	"context"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
)

// Head implements checkpoint.Checkpointer. A stored summary of an older
// fold version is recomputed from the log (and written back, unless the
// store is read-only).
func (s *Store) Head(ctx context.Context, id string) (session.Summary, error) {
	return checkpoint.RefoldedHead(ctx, id, s.head, s.refoldStale)
}

// List implements checkpoint.Checkpointer. Stored summaries of an older
// fold version are recomputed from their logs, as Head does.
func (s *Store) List(ctx context.Context, namespace string, opts checkpoint.ListOptions) ([]session.Summary, error) {
	out, err := s.list(ctx, namespace, opts)
	return checkpoint.RefoldedList(ctx, out, err, s.refoldStale)
}

// refoldStale recomputes stale summaries; a writable store also records
// each in the index (writeBack), a read-only one keeps them as stored.
func (s *Store) refoldStale(ctx context.Context, sums []session.Summary) error {
	if s.readOnly {
		return checkpoint.Refold(ctx, s, sums)
	}
	return checkpoint.RefoldWith(ctx, sums, s.writeBack)
}

// writeBack folds session id's log under the log's lock, as a writer does
// before it appends (handle.load refolds a summary of an older fold), and
// records the fold in the index; ok is false when the session is gone.
// Holding the lock is what makes it safe: no writer can append and report
// a later state between the fold and its record.
func (s *Store) writeBack(ctx context.Context, id string) (_ session.Summary, ok bool, _ error) {
	if err := s.enter(); err != nil {
		return session.Summary{}, false, err
	}
	defer s.leave()
	h := s.acquire(id)
	defer s.release(h)
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.open(ctx, nil); err != nil || h.f == nil {
		return session.Summary{}, false, err
	}
	defer h.unlock()
	n := s.ns(h.folder)
	n.mu.Lock()
	if e := n.entries[id]; e == nil || !e.has || e.st.tok != h.st.tok || checkpoint.Stale(&e.st.sum) {
		h.reported = false // the index moved behind this handle (another process rewrote it)
	}
	n.mu.Unlock()
	if err := h.report(ctx); err != nil {
		return session.Summary{}, false, err
	}
	return cloneSummary(h.st.sum), true, nil
}
