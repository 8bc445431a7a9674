package postgres

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/lite-agent/lite-agent/checkpoint"
)

var _ checkpoint.BlobStore = (*Store)(nil)

// createBlobs creates the blob table (see the package documentation) under
// the schema's advisory lock, so that hosts putting their first blobs at
// once do not race on CREATE TABLE. It is created on first use rather than
// by a migration: an optional ability, and a database without it holds no
// blobs, so older builds keep opening databases a newer one put blobs in.
const createBlobs = `CREATE TABLE IF NOT EXISTS blobs (
	digest text PRIMARY KEY,
	size   bigint NOT NULL,
	stored timestamptz NOT NULL DEFAULT now(),
	data   bytea NOT NULL
)`

// undefinedTable reports whether err is PostgreSQL's "relation does not
// exist": the blob table was never created, so no blob is stored.
func undefinedTable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "42P01"
}

// PutBlobs implements checkpoint.BlobStore: one transaction for the batch,
// each blob inserted unless its digest is there already.
func (s *Store) PutBlobs(ctx context.Context, blobs []checkpoint.Blob) error {
	if s.readOnly {
		return fmt.Errorf("put blobs: %w", checkpoint.ErrReadOnly)
	}
	if err := s.enter(); err != nil {
		return fmt.Errorf("put blobs: %w", err)
	}
	defer s.leave()
	if err := checkpoint.CheckBlobs(blobs); err != nil {
		return err
	}
	err := s.retrySafe(ctx, func() error {
		return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			if !s.blobTable.Load() {
				if _, err := tx.Exec(ctx, lockSQL); err != nil {
					return err
				}
				if _, err := tx.Exec(ctx, createBlobs); err != nil {
					return err
				}
			}
			b := &pgx.Batch{}
			for _, bl := range blobs {
				data := bl.Data
				if data == nil {
					data = []byte{}
				}
				b.Queue(`INSERT INTO blobs (digest, size, data) VALUES ($1, $2, $3) ON CONFLICT (digest) DO NOTHING`, bl.Digest, int64(len(bl.Data)), data)
			}
			return tx.SendBatch(ctx, b).Close()
		})
	})
	if err != nil {
		return s.fail("put blobs", err)
	}
	s.blobTable.Store(true)
	return nil
}

// Blob implements checkpoint.BlobStore.
func (s *Store) Blob(ctx context.Context, digest string) ([]byte, error) {
	if err := s.enter(); err != nil {
		return nil, fmt.Errorf("blob %s: %w", digest, err)
	}
	defer s.leave()
	var data []byte
	err := s.retry(ctx, func() error {
		return s.pool.QueryRow(ctx, `SELECT data FROM blobs WHERE digest = $1`, digest).Scan(&data)
	})
	switch {
	case errors.Is(err, pgx.ErrNoRows) || undefinedTable(err):
		return nil, fmt.Errorf("blob %s: %w", digest, checkpoint.ErrNotFound)
	case err != nil:
		return nil, s.fail("blob "+digest, err)
	case checkpoint.BlobDigest(data) != digest:
		return nil, fmt.Errorf("blob %s: %w: the stored content does not match its digest", digest, checkpoint.ErrCorrupt)
	}
	return data, nil
}

// HasBlobs implements checkpoint.BlobStore.
func (s *Store) HasBlobs(ctx context.Context, digests []string) (map[string]bool, error) {
	if err := s.enter(); err != nil {
		return nil, fmt.Errorf("has blobs: %w", err)
	}
	defer s.leave()
	out := make(map[string]bool, len(digests))
	for _, d := range digests {
		out[d] = false
	}
	err := s.retry(ctx, func() error {
		rows, err := s.pool.Query(ctx, `SELECT digest FROM blobs WHERE digest = ANY($1)`, digests)
		if err != nil {
			return err
		}
		found, err := pgx.CollectRows(rows, pgx.RowTo[string])
		for _, d := range found {
			out[d] = true
		}
		return err
	})
	if err != nil && !undefinedTable(err) {
		return nil, s.fail("has blobs", err)
	}
	return out, nil
}

// Blobs implements checkpoint.BlobStore.
func (s *Store) Blobs(ctx context.Context) iter.Seq2[checkpoint.BlobInfo, error] {
	return func(yield func(checkpoint.BlobInfo, error) bool) {
		if err := s.enter(); err != nil {
			yield(checkpoint.BlobInfo{}, fmt.Errorf("list blobs: %w", err))
			return
		}
		defer s.leave()
		var infos []checkpoint.BlobInfo
		err := s.retry(ctx, func() error {
			rows, err := s.pool.Query(ctx, `SELECT digest, size, stored FROM blobs`)
			if err != nil {
				return err
			}
			infos, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (checkpoint.BlobInfo, error) {
				var in checkpoint.BlobInfo
				var stored time.Time
				err := r.Scan(&in.Digest, &in.Size, &stored)
				in.Stored = stored
				return in, err
			})
			return err
		})
		if undefinedTable(err) {
			return
		}
		if err != nil {
			yield(checkpoint.BlobInfo{}, s.fail("list blobs", err))
			return
		}
		for _, in := range infos {
			if !yield(in, nil) {
				return
			}
		}
	}
}

// DeleteBlobs implements checkpoint.BlobStore.
func (s *Store) DeleteBlobs(ctx context.Context, digests []string) error {
	if s.readOnly {
		return fmt.Errorf("delete blobs: %w", checkpoint.ErrReadOnly)
	}
	if err := s.enter(); err != nil {
		return fmt.Errorf("delete blobs: %w", err)
	}
	defer s.leave()
	err := s.retrySafe(ctx, func() error {
		_, err := s.pool.Exec(ctx, `DELETE FROM blobs WHERE digest = ANY($1)`, digests)
		return err
	})
	if err != nil && !undefinedTable(err) {
		return s.fail("delete blobs", err)
	}
	return nil
}
