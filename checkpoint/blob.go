package checkpoint

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"iter"
	"time"
)

// BlobStore is an optional ability of a Checkpointer: content-addressed
// blobs, each stored once under the SHA-256 of its content however many
// sessions refer to it. The SDK keeps there the content a shell command may
// change (read while the workspace manifest is taken before it runs), so
// that restoring a checkpoint can put back what the command changed or
// deleted; a session's log names the blobs it needs by digest.
//
// Blobs belong to the store, not to one session: Delete and Truncate of a
// session leave them, and a blob no log names any more is removed by
// whoever collects them (the SDK's prune), never by the store itself.
//
// A store without it still runs shell commands; their changes are then
// listed as "not undone" by a restore, as before.
//
// Every method is safe for concurrent use by several goroutines and, for
// persistent stores, several processes; after Close each returns ErrClosed.
type BlobStore interface {
	// PutBlobs stores each blob under its digest. It is idempotent: a blob
	// already stored is left as it is (and keeps its time). A digest that
	// is not BlobDigest of the data is ErrInvalid and nothing of the batch
	// is stored. When it returns nil the blobs survive a crash like an
	// Append. A read-only store returns ErrReadOnly.
	PutBlobs(ctx context.Context, blobs []Blob) error
	// Blob returns the content stored under digest, the caller's to keep.
	// A digest not stored is ErrNotFound.
	Blob(ctx context.Context, digest string) ([]byte, error)
	// HasBlobs returns which of digests are stored.
	HasBlobs(ctx context.Context, digests []string) (map[string]bool, error)
	// Blobs lists every stored blob (digest, size, when first stored), in
	// no particular order, without reading their content.
	Blobs(ctx context.Context) iter.Seq2[BlobInfo, error]
	// DeleteBlobs removes the named blobs; digests not stored are skipped.
	// A read-only store returns ErrReadOnly.
	DeleteBlobs(ctx context.Context, digests []string) error
}

// Blob is one content with its digest.
type Blob struct {
	Digest string
	Data   []byte
}

// NewBlob returns data as a Blob with its digest.
func NewBlob(data []byte) Blob { return Blob{Digest: BlobDigest(data), Data: data} }

// BlobInfo describes a stored blob.
type BlobInfo struct {
	Digest string
	Size   int64
	Stored time.Time
}

// BlobDigest is the SHA-256 of data in lower-case hex: a blob's name.
func BlobDigest(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// CheckBlobs verifies every blob's digest, for backends' PutBlobs: the
// error wraps ErrInvalid and names the first wrong one.
func CheckBlobs(blobs []Blob) error {
	for _, b := range blobs {
		if !ValidDigest(b.Digest) || BlobDigest(b.Data) != b.Digest {
			return fmt.Errorf("put blobs: %w: digest %q is not the SHA-256 of its %d bytes", ErrInvalid, b.Digest, len(b.Data))
		}
	}
	return nil
}

// ValidDigest reports whether d has the form of a blob digest (64
// lower-case hex digits), so that backends may use it as a file name.
func ValidDigest(d string) bool {
	if len(d) != 2*sha256.Size {
		return false
	}
	for i := 0; i < len(d); i++ {
		if c := d[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
