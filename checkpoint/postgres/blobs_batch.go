package postgres

import (
	"context"
	"fmt"

	"github.com/lite-agent/lite-agent/checkpoint"
)

var _ checkpoint.BlobBatchReader = (*Store)(nil)

// ReadBlobs implements checkpoint.BlobBatchReader: one query for the batch
// (digest = ANY of the array).
func (s *Store) ReadBlobs(ctx context.Context, digests []string) (map[string][]byte, error) {
	if err := s.enter(); err != nil {
		return nil, fmt.Errorf("read blobs: %w", err)
	}
	defer s.leave()
	var out map[string][]byte
	err := s.retry(ctx, func() error {
		out = make(map[string][]byte, len(digests))
		rows, err := s.pool.Query(ctx, `SELECT digest, data FROM blobs WHERE digest = ANY($1)`, digests)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var d string
			var data []byte
			if err := rows.Scan(&d, &data); err != nil {
				return err
			}
			if data == nil {
				data = []byte{}
			}
			out[d] = data
		}
		return rows.Err()
	})
	if undefinedTable(err) {
		return map[string][]byte{}, nil
	}
	if err != nil {
		return nil, s.fail("read blobs", err)
	}
	for d, data := range out {
		if err := checkpoint.CheckReadBlob(d, data); err != nil {
			return nil, err
		}
	}
	return out, nil
}
