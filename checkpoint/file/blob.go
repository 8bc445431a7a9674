package file

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"os"
	"path/filepath"

	"github.com/lite-agent/lite-agent/checkpoint"
)

var _ checkpoint.BlobStore = (*Store)(nil)

// blobsDir holds the store's blobs: blobs/<first two hex digits>/<digest>.
const blobsDir = "blobs"

// syncfsOver is the batch size above which PutBlobs makes the batch durable
// with one sync of the file system instead of a fsync per blob (a cold
// manifest of a large tree puts thousands at once).
const syncfsOver = 16

func (s *Store) blobPath(digest string) string {
	return filepath.Join(s.root, blobsDir, digest[:2], digest)
}

// PutBlobs implements checkpoint.BlobStore. Each new blob is written to a
// temporary file beside its place and renamed there, so a reader never sees
// a part of one; the batch is durable before PutBlobs returns.
func (s *Store) PutBlobs(ctx context.Context, blobs []checkpoint.Blob) error {
	if err := s.enter(); err != nil {
		return fmt.Errorf("put blobs: %w", err)
	}
	defer s.leave()
	if s.readOnly {
		return fmt.Errorf("put blobs: %w", checkpoint.ErrReadOnly)
	}
	if err := checkpoint.CheckBlobs(blobs); err != nil {
		return err
	}
	var written []string
	dirs := map[string]bool{}
	for _, b := range blobs {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("put blobs: %w", err)
		}
		p := s.blobPath(b.Digest)
		if _, err := os.Lstat(p); err == nil {
			continue
		}
		dir := filepath.Dir(p)
		if !dirs[dir] {
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return fmt.Errorf("put blobs: %w", unwrapPath(err))
			}
			dirs[dir] = true
		}
		if err := writeBlob(p, b.Data, len(blobs) <= syncfsOver); err != nil {
			return fmt.Errorf("put blob %s: %w", b.Digest, unwrapPath(err))
		}
		written = append(written, p)
	}
	if len(written) == 0 {
		return nil
	}
	if err := s.syncBlobs(written, dirs); err != nil {
		return fmt.Errorf("put blobs: %w", err)
	}
	return nil
}

// writeBlob writes data to a temporary file in p's directory (fsync-ed when
// sync) and renames it to p.
func writeBlob(p string, data []byte, sync bool) error {
	f, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o600)
	}
	if err == nil {
		err = os.Rename(f.Name(), p)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// syncBlobs makes the written blobs and their directory entries durable.
func (s *Store) syncBlobs(written []string, dirs map[string]bool) error {
	if len(written) > syncfsOver {
		if done, err := syncFS(filepath.Join(s.root, blobsDir)); done || err != nil {
			return err
		}
		for _, p := range written {
			if err := fsyncPath(p); err != nil {
				return err
			}
		}
	}
	dirs[filepath.Join(s.root, blobsDir)] = true
	for d := range dirs {
		if err := syncDir(d); err != nil {
			return err
		}
	}
	return syncDir(s.root)
}

func fsyncPath(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Blob implements checkpoint.BlobStore.
func (s *Store) Blob(ctx context.Context, digest string) ([]byte, error) {
	if err := s.enter(); err != nil {
		return nil, fmt.Errorf("blob %s: %w", digest, err)
	}
	defer s.leave()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("blob %s: %w", digest, err)
	}
	if !checkpoint.ValidDigest(digest) {
		return nil, fmt.Errorf("blob %q: %w", digest, checkpoint.ErrNotFound)
	}
	data, err := os.ReadFile(s.blobPath(digest))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("blob %s: %w", digest, checkpoint.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("blob %s: %w", digest, unwrapPath(err))
	}
	if checkpoint.BlobDigest(data) != digest {
		return nil, fmt.Errorf("blob %s: %w: its file %s does not hold the content it names", digest, checkpoint.ErrCorrupt, s.blobPath(digest))
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
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("has blobs: %w", err)
		}
		if !checkpoint.ValidDigest(d) {
			out[d] = false
			continue
		}
		_, err := os.Lstat(s.blobPath(d))
		out[d] = err == nil
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
		shards, err := os.ReadDir(filepath.Join(s.root, blobsDir))
		if errors.Is(err, fs.ErrNotExist) {
			return
		}
		if err != nil {
			yield(checkpoint.BlobInfo{}, fmt.Errorf("list blobs: %w", unwrapPath(err)))
			return
		}
		for _, sh := range shards {
			if !sh.IsDir() || len(sh.Name()) != 2 {
				continue
			}
			des, err := os.ReadDir(filepath.Join(s.root, blobsDir, sh.Name()))
			if err != nil {
				yield(checkpoint.BlobInfo{}, fmt.Errorf("list blobs: %w", unwrapPath(err)))
				return
			}
			for _, de := range des {
				if err := ctx.Err(); err != nil {
					yield(checkpoint.BlobInfo{}, fmt.Errorf("list blobs: %w", err))
					return
				}
				if !checkpoint.ValidDigest(de.Name()) {
					continue // a temporary file of a put in progress (or left by a crash)
				}
				fi, err := de.Info()
				if errors.Is(err, fs.ErrNotExist) {
					continue // deleted meanwhile
				}
				if err != nil {
					yield(checkpoint.BlobInfo{}, fmt.Errorf("list blobs: %w", unwrapPath(err)))
					return
				}
				if !yield(checkpoint.BlobInfo{Digest: de.Name(), Size: fi.Size(), Stored: fi.ModTime()}, nil) {
					return
				}
			}
		}
	}
}

// DeleteBlobs implements checkpoint.BlobStore.
func (s *Store) DeleteBlobs(ctx context.Context, digests []string) error {
	if err := s.enter(); err != nil {
		return fmt.Errorf("delete blobs: %w", err)
	}
	defer s.leave()
	if s.readOnly {
		return fmt.Errorf("delete blobs: %w", checkpoint.ErrReadOnly)
	}
	dirs := map[string]bool{}
	for _, d := range digests {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("delete blobs: %w", err)
		}
		if !checkpoint.ValidDigest(d) {
			continue
		}
		p := s.blobPath(d)
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("delete blob %s: %w", d, unwrapPath(err))
		}
		dirs[filepath.Dir(p)] = true
	}
	for d := range dirs {
		if err := syncDir(d); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("delete blobs: %w", err)
		}
	}
	return nil
}
