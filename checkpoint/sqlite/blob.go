package sqlite

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"iter"
	"strings"
	"time"

	"github.com/lite-agent/lite-agent/checkpoint"
)

var _ checkpoint.BlobStore = (*Store)(nil)

// blobsTable is the blob table (see the package documentation). It is
// created by the first PutBlobs rather than by a migration: it is an
// optional ability, and a database without it simply holds no blobs, so
// older builds keep opening databases a newer one put blobs in.
const blobsTable = `CREATE TABLE IF NOT EXISTS blobs (
	digest TEXT PRIMARY KEY,
	size   INTEGER NOT NULL,
	stored INTEGER NOT NULL,
	data   BLOB NOT NULL
) WITHOUT ROWID`

// noBlobTable reports whether err says the blob table does not exist yet.
func noBlobTable(err error) bool {
	return err != nil && strings.Contains(err.Error(), "no such table: blobs")
}

// PutBlobs implements checkpoint.BlobStore: one write transaction for the
// batch, each blob inserted unless its digest is there already.
func (s *Store) PutBlobs(ctx context.Context, blobs []checkpoint.Blob) error {
	if err := s.enter(); err != nil {
		return fmt.Errorf("put blobs: %w", err)
	}
	defer s.mu.RUnlock()
	if err := s.writable("put", "blobs"); err != nil {
		return err
	}
	if err := checkpoint.CheckBlobs(blobs); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("put blobs: %w", err)
	}
	c, err := s.conn(ctx)
	if err != nil {
		return fmt.Errorf("put blobs: %w", s.readError(err))
	}
	now := time.Now().UnixNano()
	err = s.inTx(ctx, c, func() error {
		if err := c.script(context.Background(), blobsTable); err != nil {
			return err
		}
		for _, b := range blobs {
			data := b.Data
			if data == nil {
				data = []byte{}
			}
			if _, err := c.exec(context.Background(), `INSERT INTO blobs (digest, size, stored, data) VALUES (?, ?, ?, ?) ON CONFLICT (digest) DO NOTHING`,
				b.Digest, int64(len(b.Data)), now, data); err != nil {
				return err
			}
		}
		return nil
	})
	s.pool.put(c, err != nil)
	if err != nil {
		return fmt.Errorf("put blobs: %w", s.readError(err))
	}
	return nil
}

// Blob implements checkpoint.BlobStore.
func (s *Store) Blob(ctx context.Context, digest string) ([]byte, error) {
	var data []byte
	found, err := s.blobQuery(ctx, "blob "+digest, func(c *conn) (bool, error) {
		dest := make([]driver.Value, 1)
		ok, err := c.row(ctx, dest, `SELECT data FROM blobs WHERE digest = ?`, digest)
		if ok {
			b, _ := dest[0].([]byte)
			data = append([]byte{}, b...)
		}
		return ok, err
	})
	switch {
	case err != nil:
		return nil, err
	case !found:
		return nil, fmt.Errorf("blob %s: %w", digest, checkpoint.ErrNotFound)
	case checkpoint.BlobDigest(data) != digest:
		return nil, fmt.Errorf("blob %s: %w: the stored content does not match its digest", digest, checkpoint.ErrCorrupt)
	}
	return data, nil
}

// HasBlobs implements checkpoint.BlobStore.
func (s *Store) HasBlobs(ctx context.Context, digests []string) (map[string]bool, error) {
	out := make(map[string]bool, len(digests))
	for _, d := range digests {
		out[d] = false // so for a database without the blob table
	}
	_, err := s.blobQuery(ctx, "has blobs", func(c *conn) (bool, error) {
		dest := make([]driver.Value, 1)
		for _, d := range digests {
			ok, err := c.row(ctx, dest, `SELECT 1 FROM blobs WHERE digest = ?`, d)
			if err != nil {
				return false, err
			}
			out[d] = ok
		}
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Blobs implements checkpoint.BlobStore.
func (s *Store) Blobs(ctx context.Context) iter.Seq2[checkpoint.BlobInfo, error] {
	return func(yield func(checkpoint.BlobInfo, error) bool) {
		var infos []checkpoint.BlobInfo
		_, err := s.blobQuery(ctx, "list blobs", func(c *conn) (bool, error) {
			rows, err := c.query(ctx, `SELECT digest, size, stored FROM blobs`)
			if err != nil {
				return false, err
			}
			defer rows.Close()
			dest := make([]driver.Value, 3)
			for {
				err := rows.Next(dest)
				if errors.Is(err, io.EOF) {
					return true, nil
				}
				if err != nil {
					return false, err
				}
				size, _ := dest[1].(int64)
				stored, _ := dest[2].(int64)
				infos = append(infos, checkpoint.BlobInfo{Digest: asString(dest[0]), Size: size, Stored: time.Unix(0, stored)})
			}
		})
		if err != nil {
			yield(checkpoint.BlobInfo{}, err)
			return
		}
		for _, in := range infos {
			if !yield(in, nil) {
				return
			}
		}
	}
}

// blobQuery runs read on a pooled connection; a database without the blob
// table holds no blob (found false, no error).
func (s *Store) blobQuery(ctx context.Context, what string, read func(*conn) (bool, error)) (bool, error) {
	if err := s.enter(); err != nil {
		return false, fmt.Errorf("%s: %w", what, err)
	}
	defer s.mu.RUnlock()
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("%s: %w", what, err)
	}
	if s.empty {
		return false, nil
	}
	c, err := s.conn(ctx)
	if err != nil {
		return false, fmt.Errorf("%s: %w", what, s.readError(err))
	}
	defer s.pool.put(c, false)
	var found bool
	err = s.retry(ctx, func() (err error) {
		found, err = read(c)
		return err
	})
	if noBlobTable(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("%s: %w", what, s.readError(err))
	}
	return found, nil
}

// DeleteBlobs implements checkpoint.BlobStore.
func (s *Store) DeleteBlobs(ctx context.Context, digests []string) error {
	if err := s.enter(); err != nil {
		return fmt.Errorf("delete blobs: %w", err)
	}
	defer s.mu.RUnlock()
	if err := s.writable("delete", "blobs"); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("delete blobs: %w", err)
	}
	c, err := s.conn(ctx)
	if err != nil {
		return fmt.Errorf("delete blobs: %w", s.readError(err))
	}
	err = s.inTx(ctx, c, func() error {
		for _, d := range digests {
			if _, err := c.exec(context.Background(), `DELETE FROM blobs WHERE digest = ?`, d); err != nil {
				return err
			}
		}
		return nil
	})
	s.pool.put(c, err != nil && !noBlobTable(err))
	if err != nil && !noBlobTable(err) {
		return fmt.Errorf("delete blobs: %w", s.readError(err))
	}
	return nil
}
