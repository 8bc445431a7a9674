package liteagent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"os"
	"sync"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/file"
	"github.com/lite-agent/lite-agent/session"
)

// lazyStore is the default file store under StateDir(), opened on first
// use so that New writes nothing: until something is written, reads of a
// store whose directory does not exist yet find it empty, and leave it so.
type lazyStore struct {
	dir string

	mu     sync.Mutex
	st     *file.Store
	closed bool
}

var _ checkpoint.Checkpointer = (*lazyStore)(nil)

// open returns the file store; when it was never opened and its directory
// does not exist, it returns nil unless create.
func (l *lazyStore) open(create bool) (*file.Store, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, checkpoint.ErrClosed
	}
	if l.st != nil {
		return l.st, nil
	}
	if !create {
		if _, err := os.Stat(l.dir); errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
	}
	st, err := file.Open(l.dir, nil)
	if err != nil {
		return nil, err
	}
	l.st = st
	return st, nil
}

func notFound(id string) error { return fmt.Errorf("session %s: %w", id, checkpoint.ErrNotFound) }

func (l *lazyStore) Append(ctx context.Context, id string, expectedHead int64, events []session.Event) (int64, error) {
	st, err := l.open(true)
	if err != nil {
		return 0, err
	}
	return st.Append(ctx, id, expectedHead, events)
}

func (l *lazyStore) Read(ctx context.Context, id string, fromSeq int64) iter.Seq2[session.Event, error] {
	return func(yield func(session.Event, error) bool) {
		st, err := l.open(false)
		switch {
		case err != nil:
			yield(session.Event{}, err)
		case st == nil:
			yield(session.Event{}, notFound(id))
		default:
			for e, err := range st.Read(ctx, id, fromSeq) {
				if !yield(e, err) {
					return
				}
			}
		}
	}
}

func (l *lazyStore) Head(ctx context.Context, id string) (session.Summary, error) {
	st, err := l.open(false)
	if err != nil || st == nil {
		return session.Summary{}, errors.Join(err, notFoundIf(st == nil && err == nil, id))
	}
	return st.Head(ctx, id)
}

func (l *lazyStore) List(ctx context.Context, namespace string, opts checkpoint.ListOptions) ([]session.Summary, error) {
	st, err := l.open(false)
	if err != nil || st == nil {
		return nil, err
	}
	return st.List(ctx, namespace, opts)
}

func (l *lazyStore) Delete(ctx context.Context, id string) error {
	st, err := l.open(false)
	if err != nil || st == nil {
		return errors.Join(err, notFoundIf(st == nil && err == nil, id))
	}
	return st.Delete(ctx, id)
}

func (l *lazyStore) Truncate(ctx context.Context, id string, keepThrough, expectedHead int64) (int64, error) {
	st, err := l.open(false)
	if err != nil || st == nil {
		return 0, errors.Join(err, notFoundIf(st == nil && err == nil, id))
	}
	return st.Truncate(ctx, id, keepThrough, expectedHead)
}

func (l *lazyStore) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	if l.st == nil {
		return nil
	}
	return l.st.Close()
}

// notFoundIf returns the not-found error of id when cond holds.
func notFoundIf(cond bool, id string) error {
	if cond {
		return notFound(id)
	}
	return nil
}
