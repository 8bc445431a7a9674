package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/lite-agent/lite-agent/session"
)

// BlobRefs returns the blob digests an event names: the manifest of a
// workspace_scanned (and the whole one it is a delta against), and the
// content before and after each change of a workspace_changed. Other
// events name none.
func BlobRefs(e session.Event) []string {
	switch e.Type {
	case session.TypeWorkspaceScanned:
		var ws session.WorkspaceScanned
		if e.Decode(&ws) == nil && ws.Manifest != "" {
			if ws.Base != "" {
				return []string{ws.Manifest, ws.Base}
			}
			return []string{ws.Manifest}
		}
	case session.TypeWorkspaceChanged:
		var wc session.WorkspaceChanged
		if e.Decode(&wc) != nil {
			return nil
		}
		var out []string
		for _, c := range wc.Changes {
			for _, st := range []*session.PathState{c.Before, c.After} {
				if st != nil && st.Digest != "" {
					out = append(out, st.Digest)
				}
			}
		}
		return out
	}
	return nil
}

// UndoBlobRefs returns the digests of the content a restore of the log
// would write back (the state before each recorded change): the blobs
// whose loss makes a change impossible to undo.
func UndoBlobRefs(e session.Event) []string {
	if e.Type != session.TypeWorkspaceChanged {
		return nil
	}
	var wc session.WorkspaceChanged
	if e.Decode(&wc) != nil {
		return nil
	}
	var out []string
	for _, c := range wc.Changes {
		if c.Before != nil && c.Before.Digest != "" {
			out = append(out, c.Before.Digest)
		}
	}
	return out
}

// LogBlobRefs collects BlobRefs over the whole log of session id.
func LogBlobRefs(ctx context.Context, c Checkpointer, id string, refs func(session.Event) []string, into map[string]bool) error {
	for e, err := range c.Read(ctx, id, 1) {
		if errors.Is(err, ErrNotFound) {
			return nil // deleted meanwhile
		}
		if err != nil {
			return err
		}
		for _, d := range refs(e) {
			into[d] = true
		}
	}
	return nil
}

// CollectResult says what CollectBlobs removed (or, in a dry run, would).
type CollectResult struct {
	Blobs int   `json:"blobs"`
	Bytes int64 `json:"bytes"`
	// Kept counts the blobs still referenced (or too recent to judge).
	Kept      int   `json:"kept"`
	KeptBytes int64 `json:"kept_bytes"`
}

// CollectOptions adjust CollectBlobs.
type CollectOptions struct {
	// Grace keeps unreferenced blobs stored less than this long ago: a
	// running agent puts the content a command may change before the log
	// names it. 0 keeps none.
	Grace time.Duration
	// Also names more referenced digests (the SDK adds the files of each
	// session's latest manifest, its cache for the next command).
	Also map[string]bool
	// DryRun removes nothing.
	DryRun bool
	// Only, when set, limits the collection to these digests (the blobs a
	// deleted session's log named): others are neither removed nor
	// counted, and Grace does not apply to these, which a log named, and
	// so were stored before it.
	Only map[string]bool
}

// CollectBlobs removes the blobs of bs that no log of c names (see
// BlobRefs) and that were stored before the grace period. Sessions written
// while it runs may name a blob it judged unreferenced; the grace period is
// what protects them.
func CollectBlobs(ctx context.Context, c Checkpointer, bs BlobStore, opts *CollectOptions) (*CollectResult, error) {
	var o CollectOptions
	if opts != nil {
		o = *opts
	}
	list, err := c.List(ctx, "", ListOptions{AllKinds: true})
	if err != nil {
		return nil, fmt.Errorf("collect blobs: %w", err)
	}
	refs := map[string]bool{}
	for d := range o.Also {
		refs[d] = true
	}
	for _, s := range list {
		if err := LogBlobRefs(ctx, c, s.ID, BlobRefs, refs); err != nil {
			return nil, fmt.Errorf("collect blobs: read %s: %w", s.ID, err)
		}
	}
	cutoff := time.Now().Add(-o.Grace)
	res := &CollectResult{}
	var drop []string
	for in, err := range bs.Blobs(ctx) {
		if err != nil {
			return nil, fmt.Errorf("collect blobs: %w", err)
		}
		if o.Only != nil && !o.Only[in.Digest] {
			continue
		}
		if refs[in.Digest] || o.Only == nil && !in.Stored.Before(cutoff) {
			res.Kept++
			res.KeptBytes += in.Size
			continue
		}
		drop = append(drop, in.Digest)
		res.Blobs++
		res.Bytes += in.Size
	}
	if o.DryRun || len(drop) == 0 {
		return res, nil
	}
	slices.Sort(drop)
	for chunk := range slices.Chunk(drop, 500) {
		if err := bs.DeleteBlobs(ctx, chunk); err != nil {
			return nil, fmt.Errorf("collect blobs: %w", err)
		}
	}
	return res, nil
}
