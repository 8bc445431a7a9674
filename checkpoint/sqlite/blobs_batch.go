package sqlite

import (
	"context"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/lite-agent/lite-agent/checkpoint"
)

var _ checkpoint.BlobBatchReader = (*Store)(nil)

// ReadBlobs implements checkpoint.BlobBatchReader: one query for the
// batch, the digests passed as one JSON array (json_each), so that no
// limit on bound parameters applies.
func (s *Store) ReadBlobs(ctx context.Context, digests []string) (map[string][]byte, error) {
	list, err := json.Marshal(digests)
	if err != nil {
		return nil, fmt.Errorf("read blobs: %w", err)
	}
	out := make(map[string][]byte, len(digests))
	_, err = s.blobQuery(ctx, "read blobs", func(c *conn) (bool, error) {
		clear(out) // a retry starts over
		rows, err := c.query(ctx, `SELECT digest, data FROM blobs WHERE digest IN (SELECT value FROM json_each(?))`, string(list))
		if err != nil {
			return false, err
		}
		defer rows.Close()
		dest := make([]driver.Value, 2)
		for {
			err := rows.Next(dest)
			if errors.Is(err, io.EOF) {
				return true, nil
			}
			if err != nil {
				return false, err
			}
			b, _ := dest[1].([]byte)
			out[asString(dest[0])] = append([]byte{}, b...)
		}
	})
	if err != nil {
		return nil, err
	}
	for d, data := range out {
		if err := checkpoint.CheckReadBlob(d, data); err != nil {
			return nil, err
		}
	}
	return out, nil
}
