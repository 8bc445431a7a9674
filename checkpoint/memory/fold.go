package memory

import (
	"context"
	"fmt"
	"slices"

	"github.com/lite-agent/lite-agent/checkpoint"
)

var _ checkpoint.FoldKeeper = (*Store)(nil)

// SaveFold implements checkpoint.FoldKeeper: the fold is kept with the
// log, a copy of f.State.
func (s *Store) SaveFold(ctx context.Context, id string, f checkpoint.Fold) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("save the fold of %s: %w", id, err)
	}
	f.State = slices.Clone(f.State)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("save the fold of %s: %w", id, checkpoint.ErrClosed)
	}
	l := s.sessions[id]
	if l == nil || f.Seq < 1 || f.Seq > l.summary.Head {
		return fmt.Errorf("save the fold of %s through seq %d: %w", id, f.Seq, checkpoint.ErrNotFound)
	}
	l.fold = f
	return nil
}

// LoadFold implements checkpoint.FoldKeeper.
func (s *Store) LoadFold(ctx context.Context, id string) (checkpoint.Fold, error) {
	if err := ctx.Err(); err != nil {
		return checkpoint.Fold{}, fmt.Errorf("load the fold of %s: %w", id, err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return checkpoint.Fold{}, fmt.Errorf("load the fold of %s: %w", id, checkpoint.ErrClosed)
	}
	l := s.sessions[id]
	if l == nil || l.fold.Seq == 0 {
		return checkpoint.Fold{}, fmt.Errorf("load the fold of %s: %w", id, checkpoint.ErrNotFound)
	}
	f := l.fold
	f.State = slices.Clone(f.State)
	return f, nil
}
