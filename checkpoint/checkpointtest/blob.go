package checkpointtest

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/checkpoint"
)

// blobStore returns c's checkpoint.BlobStore; the blob checks are skipped
// for a backend without one.
func blobStore(t *testing.T, b Backend, c checkpoint.Checkpointer) checkpoint.BlobStore {
	t.Helper()
	bs, ok := c.(checkpoint.BlobStore)
	if !ok {
		t.Skipf("%s does not implement checkpoint.BlobStore", b.Name)
	}
	return bs
}

// listBlobs collects Blobs by digest.
func listBlobs(tb testing.TB, bs checkpoint.BlobStore) map[string]checkpoint.BlobInfo {
	tb.Helper()
	out := map[string]checkpoint.BlobInfo{}
	for in, err := range bs.Blobs(tb.Context()) {
		if err != nil {
			tb.Fatalf("list blobs: %v", err)
		}
		if _, dup := out[in.Digest]; dup {
			tb.Fatalf("list blobs: %s listed twice", in.Digest)
		}
		out[in.Digest] = in
	}
	return out
}

// testBlobs checks the optional checkpoint.BlobStore: round trips,
// idempotence, bad digests, listing, deletion, blobs outliving the
// sessions that named them, reopening, concurrent puts and Close.
func testBlobs(t *testing.T, b Backend) {
	t.Run("RoundTrip", func(t *testing.T) {
		bs := blobStore(t, b, fresh(t, b))
		ctx := t.Context()
		empty, small := checkpoint.NewBlob(nil), checkpoint.NewBlob([]byte("hello\x00world\n"))
		large := checkpoint.NewBlob(bytes.Repeat([]byte("0123456789abcdef"), 10<<20/16)) // the default per-file cap
		before := time.Now().Add(-time.Minute)
		if err := bs.PutBlobs(ctx, []checkpoint.Blob{empty, small, large}); err != nil {
			t.Fatalf("put: %v", err)
		}
		for _, want := range []checkpoint.Blob{empty, small, large} {
			got, err := bs.Blob(ctx, want.Digest)
			if err != nil {
				t.Fatalf("get %s: %v", want.Digest, err)
			}
			if !bytes.Equal(got, want.Data) {
				t.Errorf("get %s: %d bytes back, want %d equal ones", want.Digest, len(got), len(want.Data))
			}
		}
		got, _ := bs.Blob(ctx, small.Digest)
		got[0] = 'X' // the caller's copy
		again, _ := bs.Blob(ctx, small.Digest)
		if !bytes.Equal(again, small.Data) {
			t.Error("changing a returned blob changed the stored one")
		}
		infos := listBlobs(t, bs)
		if len(infos) != 3 {
			t.Fatalf("listed %d blobs, want 3: %v", len(infos), infos)
		}
		for _, want := range []checkpoint.Blob{empty, small, large} {
			in := infos[want.Digest]
			if in.Size != int64(len(want.Data)) || in.Stored.Before(before) || in.Stored.After(time.Now().Add(time.Minute)) {
				t.Errorf("blob %s listed as %+v, want size %d and a time of now", want.Digest, in, len(want.Data))
			}
		}
	})
	t.Run("PutIsIdempotent", func(t *testing.T) {
		bs := blobStore(t, b, fresh(t, b))
		ctx := t.Context()
		x := checkpoint.NewBlob([]byte("same content"))
		for i := range 3 {
			if err := bs.PutBlobs(ctx, []checkpoint.Blob{x, x}); err != nil {
				t.Fatalf("put %d: %v", i, err)
			}
		}
		if infos := listBlobs(t, bs); len(infos) != 1 {
			t.Errorf("one content put 6 times is listed %d times, want once", len(infos))
		}
	})
	t.Run("BadDigest", func(t *testing.T) {
		bs := blobStore(t, b, fresh(t, b))
		ctx := t.Context()
		good := checkpoint.NewBlob([]byte("good"))
		for _, bad := range []checkpoint.Blob{
			{Digest: checkpoint.BlobDigest([]byte("other")), Data: []byte("good")},
			{Digest: "../../etc/passwd", Data: []byte("x")},
			{Digest: "", Data: nil},
		} {
			err := bs.PutBlobs(ctx, []checkpoint.Blob{good, bad})
			wantErr(t, fmt.Sprintf("put with digest %q", bad.Digest), err, checkpoint.ErrInvalid)
		}
		if infos := listBlobs(t, bs); len(infos) != 0 {
			t.Errorf("a refused batch stored %d blobs, want none", len(infos))
		}
	})
	t.Run("Missing", func(t *testing.T) {
		bs := blobStore(t, b, fresh(t, b))
		ctx := t.Context()
		x := checkpoint.NewBlob([]byte("present"))
		if err := bs.PutBlobs(ctx, []checkpoint.Blob{x}); err != nil {
			t.Fatal(err)
		}
		absent := checkpoint.BlobDigest([]byte("absent"))
		_, err := bs.Blob(ctx, absent)
		wantErr(t, "get a blob never put", err, checkpoint.ErrNotFound)
		_, err = bs.Blob(ctx, "not-a-digest")
		wantErr(t, "get a malformed digest", err, checkpoint.ErrNotFound)
		has, err := bs.HasBlobs(ctx, []string{x.Digest, absent})
		if err != nil {
			t.Fatal(err)
		}
		if !has[x.Digest] || has[absent] {
			t.Errorf("HasBlobs = %v, want only %s", has, x.Digest)
		}
	})
	t.Run("Delete", func(t *testing.T) {
		bs := blobStore(t, b, fresh(t, b))
		ctx := t.Context()
		x, y := checkpoint.NewBlob([]byte("x")), checkpoint.NewBlob([]byte("y"))
		if err := bs.PutBlobs(ctx, []checkpoint.Blob{x, y}); err != nil {
			t.Fatal(err)
		}
		if err := bs.DeleteBlobs(ctx, []string{x.Digest, checkpoint.BlobDigest([]byte("never"))}); err != nil {
			t.Fatalf("delete: %v", err)
		}
		_, err := bs.Blob(ctx, x.Digest)
		wantErr(t, "get a deleted blob", err, checkpoint.ErrNotFound)
		if got := slices.Sorted(maps.Keys(listBlobs(t, bs))); !slices.Equal(got, []string{y.Digest}) {
			t.Errorf("after delete: %v, want only %s", got, y.Digest)
		}
		if err := bs.PutBlobs(ctx, []checkpoint.Blob{x}); err != nil {
			t.Fatalf("put again after delete: %v", err)
		}
		if data, err := bs.Blob(ctx, x.Digest); err != nil || string(data) != "x" {
			t.Errorf("get after put again: %q, %v", data, err)
		}
	})
	t.Run("OutliveSessions", func(t *testing.T) {
		c := fresh(t, b)
		bs := blobStore(t, b, c)
		ctx := t.Context()
		create(t, c, "s1", "ns", 2)
		x := checkpoint.NewBlob([]byte("named by s1"))
		if err := bs.PutBlobs(ctx, []checkpoint.Blob{x}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Truncate(ctx, "s1", 1, 3); err != nil {
			t.Fatal(err)
		}
		if err := c.Delete(ctx, "s1"); err != nil {
			t.Fatal(err)
		}
		if _, err := bs.Blob(ctx, x.Digest); err != nil {
			t.Errorf("a blob after its session was truncated and deleted: %v, want it kept (blobs are the store's)", err)
		}
	})
	t.Run("Reopen", func(t *testing.T) {
		if !b.Persistent {
			t.Skipf("%s is not persistent", b.Name)
		}
		loc := b.NewLocation(t)
		c, err := b.Open(loc)
		if err != nil {
			t.Fatal(err)
		}
		x := checkpoint.NewBlob([]byte("durable"))
		if err := blobStore(t, b, c).PutBlobs(t.Context(), []checkpoint.Blob{x}); err != nil {
			t.Fatal(err)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		other := open(t, b, loc)
		if data, err := blobStore(t, b, other).Blob(t.Context(), x.Digest); err != nil || string(data) != "durable" {
			t.Errorf("blob after reopening: %q, %v", data, err)
		}
	})
	t.Run("ConcurrentPuts", func(t *testing.T) {
		bs := blobStore(t, b, fresh(t, b))
		ctx := t.Context()
		const writers, each = 6, 20
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		for w := range writers {
			wg.Go(func() {
				for i := range each {
					// Half the contents are shared by every writer.
					shared := checkpoint.NewBlob(fmt.Appendf(nil, "shared %d", i))
					own := checkpoint.NewBlob(fmt.Appendf(nil, "writer %d blob %d", w, i))
					if err := bs.PutBlobs(ctx, []checkpoint.Blob{shared, own}); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("concurrent put: %v", err)
		}
		if got := len(listBlobs(t, bs)); got != each+writers*each {
			t.Errorf("%d blobs listed, want %d", got, each+writers*each)
		}
	})
	t.Run("Closed", func(t *testing.T) {
		c, err := b.Open(b.NewLocation(t))
		if err != nil {
			t.Fatal(err)
		}
		bs := blobStore(t, b, c)
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		ctx := t.Context()
		x := checkpoint.NewBlob([]byte("late"))
		wantErr(t, "put after close", bs.PutBlobs(ctx, []checkpoint.Blob{x}), checkpoint.ErrClosed)
		_, err = bs.Blob(ctx, x.Digest)
		wantErr(t, "get after close", err, checkpoint.ErrClosed)
		_, err = bs.HasBlobs(ctx, []string{x.Digest})
		wantErr(t, "has after close", err, checkpoint.ErrClosed)
		wantErr(t, "delete after close", bs.DeleteBlobs(ctx, []string{x.Digest}), checkpoint.ErrClosed)
		var listErr error
		for _, err := range bs.Blobs(ctx) {
			listErr = err
			break
		}
		wantErr(t, "list after close", listErr, checkpoint.ErrClosed)
	})
	t.Run("BatchRead", func(t *testing.T) { testBlobBatch(t, b) }) // blobbatch.go
}
