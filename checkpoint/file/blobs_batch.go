package file

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/lite-agent/lite-agent/checkpoint"
)

var _ checkpoint.BlobBatchReader = (*Store)(nil)

// ReadBlobs implements checkpoint.BlobBatchReader: each blob is a file of
// its own, so the batch is one read per blob under one entry into the
// store.
func (s *Store) ReadBlobs(ctx context.Context, digests []string) (map[string][]byte, error) {
	if err := s.enter(); err != nil {
		return nil, fmt.Errorf("read blobs: %w", err)
	}
	defer s.leave()
	out := make(map[string][]byte, len(digests))
	for _, d := range digests {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("read blobs: %w", err)
		}
		if _, done := out[d]; done || !checkpoint.ValidDigest(d) {
			continue
		}
		data, err := os.ReadFile(s.blobPath(d))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("blob %s: %w", d, unwrapPath(err))
		}
		if checkpoint.BlobDigest(data) != d {
			return nil, fmt.Errorf("blob %s: %w: its file %s does not hold the content it names", d, checkpoint.ErrCorrupt, s.blobPath(d))
		}
		out[d] = data
	}
	return out, nil
}
