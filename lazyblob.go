package liteagent

import (
	"context"
	"fmt"
	"iter"

	"github.com/lite-agent/lite-agent/checkpoint"
)

// The default store keeps blobs like the file store it opens on first use
// (see checkpoint.BlobStore): reads of a store never opened find none.
var _ checkpoint.BlobStore = (*lazyStore)(nil)

func (l *lazyStore) PutBlobs(ctx context.Context, blobs []checkpoint.Blob) error {
	st, err := l.open(true)
	if err != nil {
		return err
	}
	return st.PutBlobs(ctx, blobs)
}

func (l *lazyStore) Blob(ctx context.Context, digest string) ([]byte, error) {
	st, err := l.open(false)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return nil, fmt.Errorf("blob %s: %w", digest, checkpoint.ErrNotFound)
	}
	return st.Blob(ctx, digest)
}

func (l *lazyStore) HasBlobs(ctx context.Context, digests []string) (map[string]bool, error) {
	st, err := l.open(false)
	if err != nil {
		return nil, err
	}
	if st == nil {
		out := make(map[string]bool, len(digests))
		for _, d := range digests {
			out[d] = false
		}
		return out, nil
	}
	return st.HasBlobs(ctx, digests)
}

func (l *lazyStore) Blobs(ctx context.Context) iter.Seq2[checkpoint.BlobInfo, error] {
	return func(yield func(checkpoint.BlobInfo, error) bool) {
		st, err := l.open(false)
		if err != nil {
			yield(checkpoint.BlobInfo{}, err)
			return
		}
		if st == nil {
			return
		}
		for in, err := range st.Blobs(ctx) {
			if !yield(in, err) {
				return
			}
		}
	}
}

func (l *lazyStore) DeleteBlobs(ctx context.Context, digests []string) error {
	st, err := l.open(false)
	if err != nil || st == nil {
		return err
	}
	return st.DeleteBlobs(ctx, digests)
}

var _ checkpoint.BlobBatchReader = (*lazyStore)(nil)

func (l *lazyStore) ReadBlobs(ctx context.Context, digests []string) (map[string][]byte, error) {
	st, err := l.open(false)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return map[string][]byte{}, nil
	}
	return checkpoint.ReadBlobs(ctx, st, digests)
}
