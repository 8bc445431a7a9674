package file

import (
	"context"

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

// refoldStale recomputes stale summaries in memory; the store keeps them as
// stored.
func (s *Store) refoldStale(ctx context.Context, sums []session.Summary) error {
	return checkpoint.Refold(ctx, s, sums)
}
