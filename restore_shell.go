package liteagent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"

	"github.com/lite-agent/lite-agent/session"
)

// dirTarget is a directory as it was at the checkpoint a restore goes to.
type dirTarget struct {
	existed bool
	mode    fs.FileMode // its permissions, when it existed
}

// addShellChanges folds one workspace_changed record into the plan: like
// a file snapshot, the first state after the checkpoint is the target and
// the last one recorded is what the session left. Calls whose changes are
// recorded are marked tracked, so they are not listed as not undone as a
// whole; what the record itself could not keep is.
func (p *restorePlan) addShellChanges(e session.Event, seq int64, tracked map[string]bool) error {
	var w session.WorkspaceChanged
	if err := e.Decode(&w); err != nil {
		return err
	}
	after := e.Seq > seq
	who := cmp.Or(w.Tool, "bash") + " " + w.CallID
	if w.Job != "" {
		who = "job " + w.Job
	}
	if after {
		if w.CallID != "" && !w.Background {
			tracked[w.CallID] = true
		}
		for _, c := range w.JobCalls {
			tracked[c] = true // the job's start, whose changes this records
		}
		for _, n := range w.NotUndone {
			p.notUndone = append(p.notUndone, fmt.Sprintf("%s: %s (%s)", who, n.Path, n.Reason))
		}
	}
	for _, c := range w.Changes {
		if isDirChange(c) {
			if _, seen := p.dirs[c.Path]; after && !seen {
				t := dirTarget{existed: c.Before != nil}
				if c.Before != nil {
					t.mode = fs.FileMode(c.Before.Mode).Perm()
				}
				p.dirs[c.Path] = t
			}
			continue
		}
		if _, seen := p.target[c.Path]; after && !seen {
			snap := session.FileSnapshot{CallID: w.CallID, Path: c.Path}
			if c.Before != nil {
				snap.Existed, snap.Mode, snap.Digest = true, uint32(fs.FileMode(c.Before.Mode).Perm()), c.Before.Digest
				p.fromBlob[c.Path] = true
				p.blobSize[c.Path] = c.Before.Size
			}
			p.target[c.Path] = snap
		}
		p.last[c.Path] = ""
		if c.After != nil {
			p.last[c.Path] = c.After.Digest
		}
	}
	return nil
}

// isDirChange reports whether a change is to a directory (it was one, or
// it was created as one).
func isDirChange(c session.PathChange) bool {
	if c.Before != nil {
		return fs.FileMode(c.Before.Mode).IsDir()
	}
	return c.After != nil && fs.FileMode(c.After.Mode).IsDir()
}

// checkBlobs makes sure the content of every target kept as a blob is in
// the store; a target whose blob is gone (collected, or a store without
// blobs) leaves the plan and is listed as not undone, so the restore still
// does everything else and says what it could not.
func (a *Agent) checkBlobs(ctx context.Context, p *restorePlan) error {
	if len(p.fromBlob) == 0 {
		return nil
	}
	paths := slices.Sorted(maps.Keys(p.fromBlob))
	have := map[string]bool{}
	if bs := a.blobStore(); bs != nil {
		digests := make([]string, len(paths))
		for i, path := range paths {
			digests[i] = p.target[path].Digest
		}
		var err error
		if have, err = bs.HasBlobs(ctx, digests); err != nil {
			return err
		}
	}
	for _, path := range paths {
		if have[p.target[path].Digest] {
			continue
		}
		delete(p.target, path)
		delete(p.fromBlob, path)
		p.notUndone = append(p.notUndone, fmt.Sprintf("%s: its content at the checkpoint is no longer in the store", path))
	}
	return nil
}

// dirChanges lists what restoreDirs will do, for the result.
func dirChanges(dirs map[string]dirTarget) []FileChange {
	var out []FileChange
	for _, d := range slices.Sorted(maps.Keys(dirs)) {
		action := "rmdir" // when empty: a directory holding others' files stays
		if dirs[d].existed {
			action = "mkdir"
		}
		out = append(out, FileChange{Path: d, Action: action})
	}
	return out
}

// restoreDirs removes, when empty, the directories created after the
// checkpoint (deepest first) and makes again those removed since. It is
// idempotent. It returns the directories it changed.
func (a *Agent) restoreDirs(dirs map[string]dirTarget) ([]string, error) {
	names := slices.Sorted(maps.Keys(dirs))
	var changed []string
	for _, d := range names { // parents first
		t := dirs[d]
		if !t.existed {
			continue
		}
		loc, err := a.root.Locate(d)
		if err != nil {
			return changed, err
		}
		if fi, err := loc.FS.Lstat(loc.Name); err == nil && fi.IsDir() {
			continue
		}
		if err := loc.FS.MkdirAll(loc.Name, 0o755); err != nil {
			return changed, err
		}
		if err := loc.FS.Chmod(loc.Name, t.mode); err != nil {
			return changed, err
		}
		changed = append(changed, d)
	}
	for _, d := range slices.Backward(names) { // children first
		if dirs[d].existed {
			continue
		}
		loc, err := a.root.Locate(d)
		if err != nil {
			return changed, err
		}
		fi, err := loc.FS.Lstat(loc.Name)
		if errors.Is(err, fs.ErrNotExist) || err == nil && !fi.IsDir() {
			continue
		}
		if err != nil {
			return changed, err
		}
		if err := loc.FS.Remove(loc.Name); err == nil {
			changed = append(changed, d)
		} // not empty: someone else's files are in it; it stays
	}
	return changed, nil
}

// undoDirs records, for the undo fork, the directories a restore will
// change as it finds them, so restoring the fork changes them back.
func (a *Agent) undoDirs(dirs map[string]dirTarget) (session.Event, bool) {
	rec := session.WorkspaceChanged{}
	for _, d := range slices.Sorted(maps.Keys(dirs)) {
		loc, err := a.root.Locate(d)
		if err != nil {
			continue
		}
		c := session.PathChange{Path: d}
		fi, err := loc.FS.Lstat(loc.Name)
		switch {
		case err == nil && fi.IsDir():
			c.Kind, c.Before = session.ChangeDeleted, &session.PathState{Mode: uint32(fi.Mode())}
		case errors.Is(err, fs.ErrNotExist):
			c.Kind, c.After = session.ChangeCreated, &session.PathState{Mode: uint32(fs.ModeDir | dirs[d].mode)}
		default:
			continue
		}
		rec.Changes = append(rec.Changes, c)
	}
	if len(rec.Changes) == 0 {
		return session.Event{}, false
	}
	return mustEvent(session.TypeWorkspaceChanged, rec), true
}
