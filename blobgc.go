package liteagent

import (
	"context"
	"errors"
	"time"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
)

// blobGrace is how long an unreferenced blob is kept: the content a running
// agent read for the next shell command is put before any log names it.
const blobGrace = time.Hour

// CollectOptions adjust CollectBlobs; nil means the defaults.
type CollectOptions struct {
	// DryRun only counts.
	DryRun bool
	// Grace keeps unreferenced blobs stored less than this long ago; 0
	// means an hour.
	Grace time.Duration
}

// CollectBlobs removes from the store the blobs (the content kept to undo
// shell commands) that no session's log names any more, after a prune or a
// delete: the prior content of recorded changes, the manifests, and the
// files of each session's latest manifest (the next command's prior
// content) stay, and so does anything stored within the grace period. A
// store without blobs returns a zero result.
func (a *Agent) CollectBlobs(ctx context.Context, opts *CollectOptions) (*checkpoint.CollectResult, error) {
	var o CollectOptions
	if opts != nil {
		o = *opts
	}
	if o.Grace <= 0 {
		o.Grace = blobGrace
	}
	if err := a.requirePersistent(); err != nil {
		return nil, err
	}
	return a.collectBlobs(ctx, &checkpoint.CollectOptions{Grace: o.Grace, DryRun: o.DryRun})
}

// collectBlobs is CollectBlobs with the checkpoint package's options (Also
// is filled in here).
func (a *Agent) collectBlobs(ctx context.Context, o *checkpoint.CollectOptions) (*checkpoint.CollectResult, error) {
	bs := a.blobStore()
	if bs == nil {
		return &checkpoint.CollectResult{}, nil
	}
	list, err := a.store.List(ctx, "", checkpoint.ListOptions{AllKinds: true})
	if err != nil {
		return nil, err
	}
	also := map[string]bool{}
	for _, s := range list {
		digest, err := a.latestManifest(ctx, s.ID)
		if err != nil {
			return nil, err
		}
		if digest == "" {
			continue
		}
		if m, err := loadManifest(ctx, bs, digest); err == nil {
			for _, e := range m.Entries {
				if e.Digest != "" {
					also[e.Digest] = true
				}
			}
		}
	}
	o.Also = also
	return checkpoint.CollectBlobs(ctx, a.store, bs, o)
}

// sessionBlobs returns the blobs session id's log names, nil when the
// store keeps none or the log cannot be read (a later --prune collects
// them then).
func (a *Agent) sessionBlobs(ctx context.Context, id string) map[string]bool {
	if a.blobStore() == nil {
		return nil
	}
	refs := map[string]bool{}
	if checkpoint.LogBlobRefs(ctx, a.store, id, checkpoint.BlobRefs, refs) != nil || len(refs) == 0 {
		return nil
	}
	return refs
}

// latestManifest returns the digest of the last manifest session id's log
// names, "" if none.
func (a *Agent) latestManifest(ctx context.Context, id string) (string, error) {
	var last string
	for e, err := range a.store.Read(ctx, id, 1) {
		if errors.Is(err, checkpoint.ErrNotFound) {
			return "", nil
		}
		if err != nil {
			return "", err
		}
		if e.Type == session.TypeWorkspaceScanned {
			if refs := checkpoint.BlobRefs(e); len(refs) > 0 {
				last = refs[0]
			}
		}
	}
	return last, nil
}

// sessionBlobBytes is the size of the blobs in the store that session id's
// log names (for Info); 0 when the store keeps none.
func (a *Agent) sessionBlobBytes(ctx context.Context, id string) int64 {
	bs := a.blobStore()
	if bs == nil || !anyBlob(ctx, bs) {
		return 0 // nothing is kept: the log need not be read for its names
	}
	refs := map[string]bool{}
	if checkpoint.LogBlobRefs(ctx, a.store, id, checkpoint.BlobRefs, refs) != nil || len(refs) == 0 {
		return 0
	}
	var n int64
	for in, err := range bs.Blobs(ctx) {
		if err != nil {
			return n
		}
		if refs[in.Digest] {
			n += in.Size
		}
	}
	return n
}

// anyBlob reports whether bs keeps at least one blob, or cannot tell (its
// listing failed).
func anyBlob(ctx context.Context, bs checkpoint.BlobStore) bool {
	for range bs.Blobs(ctx) {
		return true
	}
	return false
}
