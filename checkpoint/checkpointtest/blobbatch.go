package checkpointtest

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/lite-agent/lite-agent/checkpoint"
)

// onlyBlobs hides every ability of a BlobStore but the interface itself,
// so that checkpoint.ReadBlobs takes its one-at-a-time fallback.
type onlyBlobs struct{ checkpoint.BlobStore }

// testBlobBatch checks the optional checkpoint.BlobBatchReader, and that
// checkpoint.ReadBlobs gives the same answer through it and through the
// fallback: stored digests come back with their content, missing, repeated
// and malformed ones do not fail the batch, a batch larger than SQLite's
// bound-parameter limit works, a store that never held a blob answers
// empty, and a closed store says so.
func testBlobBatch(t *testing.T, b Backend) {
	c := fresh(t, b)
	bs := blobStore(t, b, c)
	if _, ok := bs.(checkpoint.BlobBatchReader); !ok {
		t.Errorf("%s keeps blobs but does not implement checkpoint.BlobBatchReader", b.Name)
	}
	ctx := t.Context()
	if got, err := checkpoint.ReadBlobs(ctx, bs, []string{checkpoint.BlobDigest([]byte("none"))}); err != nil || len(got) != 0 {
		t.Errorf("read from a store without blobs: %d blobs, %v; want none and no error", len(got), err)
	}
	const n = 1200
	blobs := make([]checkpoint.Blob, n)
	for i := range blobs {
		blobs[i] = checkpoint.NewBlob(fmt.Appendf(nil, "blob %d\x00", i))
	}
	blobs[0] = checkpoint.NewBlob(nil)
	if err := bs.PutBlobs(ctx, blobs); err != nil {
		t.Fatal(err)
	}
	missing := checkpoint.BlobDigest([]byte("never stored"))
	ask := []string{missing, "not a digest", blobs[1].Digest}
	for _, x := range blobs {
		ask = append(ask, x.Digest)
	}
	for _, way := range []struct {
		name string
		bs   checkpoint.BlobStore
	}{{"Batch", bs}, {"Fallback", onlyBlobs{bs}}} {
		t.Run(way.name, func(t *testing.T) {
			got, err := checkpoint.ReadBlobs(ctx, way.bs, ask)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != n {
				t.Errorf("%d blobs back, want %d", len(got), n)
			}
			for _, x := range blobs {
				data, ok := got[x.Digest]
				if !ok || !bytes.Equal(data, x.Data) {
					t.Fatalf("blob %s: %q (present %v), want %q", x.Digest, data, ok, x.Data)
				}
			}
			if _, ok := got[missing]; ok {
				t.Error("a digest never stored came back")
			}
			got[blobs[1].Digest][0] = 'X' // the caller's copy
			if again, _ := bs.Blob(ctx, blobs[1].Digest); !bytes.Equal(again, blobs[1].Data) {
				t.Error("changing a returned blob changed the stored one")
			}
			if got, err := checkpoint.ReadBlobs(ctx, way.bs, nil); err != nil || len(got) != 0 {
				t.Errorf("empty batch: %d blobs, %v", len(got), err)
			}
		})
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	_, err := checkpoint.ReadBlobs(ctx, bs, []string{blobs[1].Digest})
	wantErr(t, "batch read after close", err, checkpoint.ErrClosed)
}
