package memory

import (
	"context"

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

// refoldStale recomputes stale summaries in memory; the store keeps them as
// stored.
func (s *Store) refoldStale(ctx context.Context, sums []session.Summary) error {
	return checkpoint.Refold(ctx, s, sums)
}
