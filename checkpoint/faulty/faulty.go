// Package faulty wraps a checkpoint.Checkpointer and injects faults, for
// tests of what its users do when storage fails: the Nth Append fails or
// meets a concurrent writer, and Reads are slowed. Everything else passes
// through to the wrapped store, so the log a test inspects afterwards is
// exactly what a real store kept.
package faulty

import (
	"context"
	"errors"
	"iter"
	"sync"
	"time"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
)

// ErrInjected is the error of an Append that Fail makes fail.
var ErrInjected = errors.New("injected storage failure")

// Store is a Checkpointer that injects faults into the one it wraps. Its
// methods are safe for concurrent use.
type Store struct {
	checkpoint.Checkpointer

	mu      sync.Mutex
	appends int              // Appends seen so far
	faults  map[int]error    // Append number → the error it returns
	delay   time.Duration    // added before each Read
	events  map[int][]string // Append number → the event types it carried
}

var _ checkpoint.Checkpointer = (*Store)(nil)

// New wraps c; with no fault set, the Store behaves exactly as c.
func New(c checkpoint.Checkpointer) *Store {
	return &Store{Checkpointer: c, faults: map[int]error{}, events: map[int][]string{}}
}

// Fail makes the nth Append (counting from 1 over all sessions) return
// ErrInjected without writing anything.
func (s *Store) Fail(n int) { s.set(n, ErrInjected) }

// Conflict makes the nth Append return a *checkpoint.ConflictError, as if
// another writer had appended one event first; nothing is written.
func (s *Store) Conflict(n int) { s.set(n, errConflict) }

// errConflict marks a conflict to build with the Append's own session and
// head.
var errConflict = errors.New("conflict")

func (s *Store) set(n int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[n] = err
}

// SlowReads makes every Read wait d before it starts (or until its ctx
// ends).
func (s *Store) SlowReads(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delay = d
}

// Appends returns how many Appends were made, failed ones included.
func (s *Store) Appends() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.appends
}

// AppendTypes returns the event types the nth Append carried, whether or
// not it was let through.
func (s *Store) AppendTypes(n int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.events[n]
}

// Append passes the call through unless a fault is set for it.
func (s *Store) Append(ctx context.Context, id string, expectedHead int64, events []session.Event) (int64, error) {
	s.mu.Lock()
	s.appends++
	n := s.appends
	for _, e := range events {
		s.events[n] = append(s.events[n], string(e.Type))
	}
	err := s.faults[n]
	s.mu.Unlock()
	switch {
	case errors.Is(err, errConflict):
		return 0, &checkpoint.ConflictError{Session: id, Expected: expectedHead, Actual: expectedHead + 1}
	case err != nil:
		return 0, err
	}
	return s.Checkpointer.Append(ctx, id, expectedHead, events)
}

// Read waits the delay SlowReads set, then passes the call through.
func (s *Store) Read(ctx context.Context, id string, fromSeq int64) iter.Seq2[session.Event, error] {
	s.mu.Lock()
	d := s.delay
	s.mu.Unlock()
	return func(yield func(session.Event, error) bool) {
		if d > 0 {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-t.C:
			case <-ctx.Done():
				yield(session.Event{}, ctx.Err())
				return
			}
		}
		for e, err := range s.Checkpointer.Read(ctx, id, fromSeq) {
			if !yield(e, err) {
				return
			}
		}
	}
}
