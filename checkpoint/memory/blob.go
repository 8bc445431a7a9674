package memory

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"time"

	"github.com/lite-agent/lite-agent/checkpoint"
)

var _ checkpoint.BlobStore = (*Store)(nil)

// storedBlob is one blob's content and when it was first stored.
type storedBlob struct {
	data   []byte
	stored time.Time
}

// PutBlobs implements checkpoint.BlobStore.
func (s *Store) PutBlobs(ctx context.Context, blobs []checkpoint.Blob) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("put blobs: %w", err)
	}
	if err := checkpoint.CheckBlobs(blobs); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("put blobs: %w", checkpoint.ErrClosed)
	}
	if s.blobs == nil {
		s.blobs = map[string]storedBlob{}
	}
	now := time.Now()
	for _, b := range blobs {
		if _, ok := s.blobs[b.Digest]; !ok {
			s.blobs[b.Digest] = storedBlob{data: slices.Clone(b.Data), stored: now}
		}
	}
	return nil
}

// Blob implements checkpoint.BlobStore.
func (s *Store) Blob(ctx context.Context, digest string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("blob %s: %w", digest, err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, fmt.Errorf("blob %s: %w", digest, checkpoint.ErrClosed)
	}
	b, ok := s.blobs[digest]
	if !ok {
		return nil, fmt.Errorf("blob %s: %w", digest, checkpoint.ErrNotFound)
	}
	return slices.Clone(b.data), nil
}

// HasBlobs implements checkpoint.BlobStore.
func (s *Store) HasBlobs(ctx context.Context, digests []string) (map[string]bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("has blobs: %w", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, fmt.Errorf("has blobs: %w", checkpoint.ErrClosed)
	}
	out := make(map[string]bool, len(digests))
	for _, d := range digests {
		_, out[d] = s.blobs[d]
	}
	return out, nil
}

// Blobs implements checkpoint.BlobStore.
func (s *Store) Blobs(ctx context.Context) iter.Seq2[checkpoint.BlobInfo, error] {
	return func(yield func(checkpoint.BlobInfo, error) bool) {
		s.mu.RLock()
		if s.closed {
			s.mu.RUnlock()
			yield(checkpoint.BlobInfo{}, fmt.Errorf("list blobs: %w", checkpoint.ErrClosed))
			return
		}
		infos := make([]checkpoint.BlobInfo, 0, len(s.blobs))
		for d, b := range s.blobs {
			infos = append(infos, checkpoint.BlobInfo{Digest: d, Size: int64(len(b.data)), Stored: b.stored})
		}
		s.mu.RUnlock()
		for _, in := range infos {
			if err := ctx.Err(); err != nil {
				yield(checkpoint.BlobInfo{}, fmt.Errorf("list blobs: %w", err))
				return
			}
			if !yield(in, nil) {
				return
			}
		}
	}
}

// DeleteBlobs implements checkpoint.BlobStore.
func (s *Store) DeleteBlobs(ctx context.Context, digests []string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("delete blobs: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("delete blobs: %w", checkpoint.ErrClosed)
	}
	for _, d := range digests {
		delete(s.blobs, d)
	}
	return nil
}
