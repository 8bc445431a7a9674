package sqlite

import (
	"context"
	"errors"
	"fmt"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
)

// Head implements checkpoint.Checkpointer. A stored summary of an older
// fold version is recomputed from the log (checkpoint.Refold).
func (s *Store) Head(ctx context.Context, id string) (session.Summary, error) {
	sum, err := s.head(ctx, id)
	if err != nil || !checkpoint.Stale(&sum) {
		return sum, err
	}
	one := []session.Summary{sum}
	if err := s.refoldStale(ctx, one); err != nil {
		return session.Summary{}, err
	}
	return one[0], nil
}

// List implements checkpoint.Checkpointer. Stored summaries of an older
// fold version are recomputed from their logs (checkpoint.Refold).
func (s *Store) List(ctx context.Context, namespace string, opts checkpoint.ListOptions) ([]session.Summary, error) {
	out, err := s.list(ctx, namespace, opts)
	if err != nil {
		return nil, err
	}
	return out, s.refoldStale(ctx, out)
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
