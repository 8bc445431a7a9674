package liteagent

import (
	"context"
	"slices"

	"github.com/lite-agent/lite-agent/session"
	"github.com/lite-agent/lite-agent/workspace"
)

// shellHazardPaths fills in, for each interrupted shell command whose
// manifest before it was recorded (workspace_scanned), the files and
// directories that now differ from that manifest: what the command may
// have done before the process died, for the user to review. It reads the
// workdir and the store, and writes nothing. A hazard it cannot compare
// (no manifest, the blob gone, another workdir) is left as it is.
func (a *Agent) shellHazardPaths(ctx context.Context, id, workdir string, hz []session.Hazard) []session.Hazard {
	bs := a.blobStore()
	if bs == nil || len(hz) == 0 || a.root == nil || workdir != a.root.Dir() {
		return hz
	}
	open := map[string]int{}
	for i, h := range hz {
		if h.CallID != "" {
			open[h.CallID] = i
		}
	}
	manifests := map[int]string{}
	for e, err := range a.store.Read(ctx, id, 1) {
		if err != nil {
			return hz
		}
		if e.Type != session.TypeWorkspaceScanned {
			continue
		}
		var ws session.WorkspaceScanned
		if e.Decode(&ws) != nil {
			continue
		}
		if i, ok := open[ws.CallID]; ok {
			manifests[i] = ws.Manifest
		}
	}
	if len(manifests) == 0 {
		return hz
	}
	hz = slices.Clone(hz)
	var now *workspace.Manifest
	for i, digest := range manifests {
		before, err := loadManifest(ctx, bs, digest)
		if err != nil {
			continue
		}
		if now == nil {
			if now, err = workspace.Scan(ctx, a.root.FS(), before, nil); err != nil {
				return hz
			}
		}
		h := hz[i]
		h.Paths = append(slices.Clone(h.Paths), workspace.Paths(workspace.Diff(before, now))...)
		hz[i] = h
	}
	return hz
}
