package checkpoint

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/lite-agent/lite-agent/session"
)

// ProblemBlobMissing: a log names, as the content a restore would put back,
// a blob the store no longer holds.
const ProblemBlobMissing = "blob_missing"

// checkBlobs is the doctor's check "blobs referenced and present": for each
// session of list, every blob its log needs to undo a recorded change is in
// the store. A store without blobs has nothing to check.
func checkBlobs(ctx context.Context, c Checkpointer, list []session.Summary) ([]Problem, error) {
	bs, ok := c.(BlobStore)
	if !ok {
		return nil, nil
	}
	var out []Problem
	for _, s := range list {
		refs := map[string]bool{}
		if err := LogBlobRefs(ctx, c, s.ID, UndoBlobRefs, refs); err != nil {
			continue // the log check reports a log that does not read
		}
		if len(refs) == 0 {
			continue
		}
		digests := slices.Sorted(maps.Keys(refs))
		have, err := bs.HasBlobs(ctx, digests)
		if err != nil {
			return nil, fmt.Errorf("doctor: blobs of %s: %w", s.ID, err)
		}
		var missing []string
		for _, d := range digests {
			if !have[d] {
				missing = append(missing, d)
			}
		}
		if len(missing) > 0 {
			out = append(out, Problem{Session: s.ID, Kind: ProblemBlobMissing,
				Detail: fmt.Sprintf("%d of the %d blobs its log needs to undo shell commands are gone (first %s)", len(missing), len(digests), missing[0]),
				Fix:    "a restore lists those files as not undone; nothing else to do (the log itself is whole)"})
		}
	}
	return out, nil
}
