package checkpoint

import (
	"context"
	"errors"
	"fmt"
)

// BlobBatchReader is an optional ability of a BlobStore: reading many
// blobs in one round trip (one query, one lock) instead of one Blob call
// each, for a restore that puts back hundreds of files.
//
// The fallback, for a BlobStore without it, is one Blob call per digest:
// ReadBlobs below does either.
type BlobBatchReader interface {
	// ReadBlobs returns the content of each of digests that is stored,
	// by digest; the slices are the caller's to keep. A digest not stored
	// (or not of the form of one) is absent from the map, not an error. A
	// stored content that does not match its digest is ErrCorrupt. The
	// whole result is held in memory: callers bound the batch (by the
	// sizes their logs record). Safe for concurrent use, like the rest of
	// BlobStore; after Close it returns ErrClosed.
	ReadBlobs(ctx context.Context, digests []string) (map[string][]byte, error)
}

// ReadBlobs reads digests from bs in one call when it is a
// BlobBatchReader, else with one Blob call per digest. Digests not stored
// are absent from the result (see BlobBatchReader).
func ReadBlobs(ctx context.Context, bs BlobStore, digests []string) (map[string][]byte, error) {
	if br, ok := bs.(BlobBatchReader); ok {
		return br.ReadBlobs(ctx, digests)
	}
	out := make(map[string][]byte, len(digests))
	for _, d := range digests {
		if _, done := out[d]; done {
			continue
		}
		data, err := bs.Blob(ctx, d)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[d] = data
	}
	return out, nil
}

// CheckReadBlob verifies, for backends' ReadBlobs, that data is the
// content digest names.
func CheckReadBlob(digest string, data []byte) error {
	if BlobDigest(data) != digest {
		return fmt.Errorf("blob %s: %w: the stored content does not match its digest", digest, ErrCorrupt)
	}
	return nil
}
