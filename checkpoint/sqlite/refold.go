package sqlite

import (
	"context"
	"errors"
	"fmt"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
)

// Head implements checkpoint.Checkpointer. A stored summary of another
// fold version is recomputed from the log.
func (s *Store) Head(ctx context.Context, id string) (session.Summary, error) {
	return checkpoint.RefoldedHead(ctx, id, s.head, s.refoldStale)
}

// List implements checkpoint.Checkpointer. Stored summaries of another
// fold version are recomputed from their logs.
func (s *Store) List(ctx context.Context, namespace string, opts checkpoint.ListOptions) ([]session.Summary, error) {
	out, err := s.list(ctx, namespace, opts)
	return checkpoint.RefoldedList(ctx, out, err, s.refoldStale)
}

// refoldStale recomputes stale summaries and, unless the store is read-only,
// writes them back, each in a write of its own (opRefold, which recomputes
// again under the write lock, as a writer may have moved the log).
func (s *Store) refoldStale(ctx context.Context, sums []session.Summary) error {
	var stale []string
	for i := range sums {
		if checkpoint.Stale(&sums[i]) {
			stale = append(stale, sums[i].ID)
		}
	}
	if len(stale) == 0 {
		return nil
	}
	if err := checkpoint.Refold(ctx, s, sums); err != nil || s.readOnly {
		return err
	}
	for _, id := range stale {
		if _, err := s.submit(&request{ctx: ctx, op: opRefold, id: id}); err != nil && !errors.Is(err, checkpoint.ErrNotFound) {
			return fmt.Errorf("write back the summary of %s: %w", id, err)
		}
	}
	return nil
}
