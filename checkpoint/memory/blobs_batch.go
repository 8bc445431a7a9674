package memory

import (
	"context"
	"fmt"
	"slices"

	"github.com/lite-agent/lite-agent/checkpoint"
)

var _ checkpoint.BlobBatchReader = (*Store)(nil)

// ReadBlobs implements checkpoint.BlobBatchReader: one read lock for the
// batch.
func (s *Store) ReadBlobs(ctx context.Context, digests []string) (map[string][]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("read blobs: %w", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, fmt.Errorf("read blobs: %w", checkpoint.ErrClosed)
	}
	out := make(map[string][]byte, len(digests))
	for _, d := range digests {
		if b, ok := s.blobs[d]; ok {
			out[d] = slices.Clone(b.data)
		}
	}
	return out, nil
}
