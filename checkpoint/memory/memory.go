package memory

import (
	"cmp"
	"context"
	"fmt"
	"iter"
	"slices"
	"sort"
	"sync"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
)

var _ checkpoint.Checkpointer = (*Store)(nil)

// Store is an in-memory checkpoint.Checkpointer. Its zero value is not
// usable; call New.
type Store struct {
	mu       sync.RWMutex
	closed   bool
	sessions map[string]*sessionLog
	blobs    map[string]storedBlob       // see blob.go
	mail     map[mailKey]checkpoint.Mail // see mailbox.go
}

// sessionLog is one session's events, their checksums and their summary.
// sums[i] is checkpoint.Checksum(events[i]), taken when it was appended, so
// that a read checks the log it hands out like every other backend does.
type sessionLog struct {
	events  []session.Event
	sums    []uint32
	summary session.Summary
	fold    checkpoint.Fold // see fold.go; Seq 0 for none
}

// New returns an empty store.
func New() *Store {
	return &Store{sessions: make(map[string]*sessionLog)}
}

// Append implements checkpoint.Checkpointer.
func (s *Store) Append(ctx context.Context, id string, expectedHead int64, events []session.Event) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("append %s: %w", id, err)
	}
	prepared, err := checkpoint.Prepare(id, expectedHead, events, 0)
	if err != nil {
		return 0, err
	}
	for i := range prepared {
		prepared[i].Data = clone(prepared[i].Data)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, fmt.Errorf("append %s: %w", id, checkpoint.ErrClosed)
	}
	l := s.sessions[id]
	var head int64
	if l != nil {
		if err := session.CheckFold(&l.summary); err != nil {
			return 0, fmt.Errorf("append %s: the stored summary was %w", id, err)
		}
		head = l.summary.Head
	}
	if head != expectedHead {
		return 0, &checkpoint.ConflictError{Session: id, Expected: expectedHead, Actual: head}
	}
	if l == nil {
		l = &sessionLog{summary: session.Summary{ID: id}}
		s.sessions[id] = l
	}
	for _, e := range prepared {
		l.events = append(l.events, e)
		l.sums = append(l.sums, checkpoint.Checksum(e))
		l.summary.Apply(e)
	}
	return l.summary.Head, nil
}

// Read implements checkpoint.Checkpointer. It takes the events to yield
// under the lock without copying them (appended events are never changed,
// and Truncate gives the log a new array), then copies each as it yields it,
// so a slow consumer never blocks writers.
func (s *Store) Read(ctx context.Context, id string, fromSeq int64) iter.Seq2[session.Event, error] {
	return func(yield func(session.Event, error) bool) {
		events, sums, head, err := s.snapshot(ctx, id, fromSeq)
		if err != nil {
			yield(session.Event{}, err)
			return
		}
		v := checkpoint.NewVerifier(id, fromSeq, head)
		for i, e := range events {
			if err := v.Event(e, sums[i]); err != nil {
				yield(session.Event{}, fmt.Errorf("read %s: %w", id, err))
				return
			}
			e.Data = clone(e.Data)
			if !yield(e, nil) {
				return
			}
		}
		if err := v.End(); err != nil {
			yield(session.Event{}, fmt.Errorf("read %s: %w", id, err))
		}
	}
}

// snapshot returns the events of id with seq >= fromSeq, their checksums
// and the head. The caller must not modify them.
func (s *Store) snapshot(ctx context.Context, id string, fromSeq int64) ([]session.Event, []uint32, int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, 0, fmt.Errorf("read %s: %w", id, err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, nil, 0, fmt.Errorf("read %s: %w", id, checkpoint.ErrClosed)
	}
	l := s.sessions[id]
	if l == nil {
		return nil, nil, 0, fmt.Errorf("read %s: %w", id, checkpoint.ErrNotFound)
	}
	n := int64(len(l.events))
	start := min(max(fromSeq, 1)-1, n)
	if start < n && l.events[start].Seq != fromSeq {
		// Only a damaged log has gaps (see the Damage hook): find fromSeq.
		start = int64(sort.Search(int(n), func(i int) bool { return l.events[i].Seq >= fromSeq }))
	}
	return l.events[start:n:n], l.sums[start:n:n], l.summary.Head, nil
}

// head is Head before the refold; it reads the stored summary.
func (s *Store) head(ctx context.Context, id string) (session.Summary, error) {
	if err := ctx.Err(); err != nil {
		return session.Summary{}, fmt.Errorf("head %s: %w", id, err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return session.Summary{}, fmt.Errorf("head %s: %w", id, checkpoint.ErrClosed)
	}
	l := s.sessions[id]
	if l == nil {
		return session.Summary{}, fmt.Errorf("head %s: %w", id, checkpoint.ErrNotFound)
	}
	return copySummary(l.summary), nil
}

// list is List before the refold; it reads the stored summary. It sorts pointers to the logs
// and copies only the summaries it returns.
func (s *Store) list(ctx context.Context, namespace string, opts checkpoint.ListOptions) ([]session.Summary, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("list %s: %w", namespace, err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, fmt.Errorf("list %s: %w", namespace, checkpoint.ErrClosed)
	}
	var logs []*sessionLog
	for _, l := range s.sessions {
		if (namespace == "" || l.summary.Namespace == namespace) && opts.Matches(l.summary) {
			logs = append(logs, l)
		}
	}
	slices.SortFunc(logs, func(a, b *sessionLog) int {
		return cmp.Or(b.summary.Updated.Compare(a.summary.Updated), cmp.Compare(a.summary.ID, b.summary.ID))
	})
	if opts.Limit > 0 && len(logs) > opts.Limit {
		logs = logs[:opts.Limit]
	}
	out := make([]session.Summary, len(logs))
	for i, l := range logs {
		out[i] = copySummary(l.summary)
	}
	return out, nil
}

// Delete implements checkpoint.Checkpointer.
func (s *Store) Delete(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("delete %s: %w", id, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("delete %s: %w", id, checkpoint.ErrClosed)
	}
	if s.sessions[id] == nil {
		return fmt.Errorf("delete %s: %w", id, checkpoint.ErrNotFound)
	}
	delete(s.sessions, id)
	s.unpost(id, "")
	return nil
}

// Truncate implements checkpoint.Checkpointer.
func (s *Store) Truncate(ctx context.Context, id string, keepThrough, expectedHead int64) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("truncate %s: %w", id, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, fmt.Errorf("truncate %s: %w", id, checkpoint.ErrClosed)
	}
	l := s.sessions[id]
	if l == nil {
		return 0, fmt.Errorf("truncate %s: %w", id, checkpoint.ErrNotFound)
	}
	head := l.summary.Head
	if head != expectedHead {
		return 0, &checkpoint.ConflictError{Session: id, Expected: expectedHead, Actual: head}
	}
	if keepThrough < 1 || keepThrough > head {
		return 0, fmt.Errorf("truncate %s: %w: cannot keep through seq %d of a log whose head is %d; pick a seq from 1 to %d", id, checkpoint.ErrInvalid, keepThrough, head, head)
	}
	if keepThrough == head {
		return head, nil
	}
	// A new array: readers may still hold the old one, and appends must not
	// write over the events they are about to yield.
	l.events = slices.Clone(l.events[:keepThrough])
	l.sums = slices.Clone(l.sums[:keepThrough])
	l.summary = session.Summarize(id, l.events)
	if l.fold.Seq > keepThrough {
		l.fold = checkpoint.Fold{}
	}
	return keepThrough, nil
}

// Close implements checkpoint.Checkpointer. It drops every log; later calls
// return checkpoint.ErrClosed, and Close itself returns nil.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.sessions = nil
	return nil
}

// clone copies b, keeping nil as nil.
func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return slices.Clone(b)
}

// copySummary returns s with its slices copied, so callers own the result.
func copySummary(s session.Summary) session.Summary {
	s.Open = slices.Clone(s.Open)
	if s.Parent != nil {
		p := *s.Parent
		s.Parent = &p
	}
	return s
}
