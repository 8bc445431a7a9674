package liteagent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/mcp"
	"github.com/lite-agent/lite-agent/session"
)

// ListCheckpoints returns the session's checkpoints, one per prompt, oldest
// first. Restore(id, cp.Seq) rewinds to just before that prompt.
func (a *Agent) ListCheckpoints(ctx context.Context, id string) ([]session.Checkpoint, error) {
	if err := a.requirePersistent(); err != nil {
		return nil, err
	}
	st, _, err := a.load(ctx, id, false)
	if err != nil {
		return nil, err
	}
	return st.Checkpoints(), nil
}

// Fork creates a new session holding the events of session id up to seq
// (0: all of them), with its parent recorded. The original is untouched.
// It returns the new session's id.
func (a *Agent) Fork(ctx context.Context, id string, seq int64) (string, error) {
	if err := a.requirePersistent(); err != nil {
		return "", err
	}
	events, err := checkpoint.ReadAll(ctx, a.store, id)
	if err != nil {
		return "", fmt.Errorf("fork %s: %w", id, err)
	}
	head := int64(len(events))
	if seq == 0 {
		seq = head
	}
	if seq < 1 || seq > head {
		return "", fmt.Errorf("fork %s: seq %d is outside the log (1 to %d); list checkpoints to pick one", id, seq, head)
	}
	if seq != head {
		if err := checkRestorePoint(id, events, seq); err != nil {
			return "", err
		}
	}
	fork := NewSessionID()
	if err := a.copyLog(ctx, fork, id, events[:seq], nil); err != nil {
		return "", fmt.Errorf("fork %s: %w", id, err)
	}
	return fork, nil
}

// copyLog writes events (a log's prefix) as the new session fork, with its
// session_started rewritten to name fork and its parent, then extra.
func (a *Agent) copyLog(ctx context.Context, fork, parent string, events, extra []session.Event) error {
	var start session.SessionStarted
	if len(events) == 0 || events[0].Type != session.TypeSessionStarted {
		return fmt.Errorf("session %s does not begin with %s", parent, session.TypeSessionStarted)
	}
	if err := events[0].Decode(&start); err != nil {
		return err
	}
	start.ID = fork
	start.Parent = &session.ForkRef{Session: parent, Seq: int64(len(events))}
	first, err := session.New(session.TypeSessionStarted, start)
	if err != nil {
		return err
	}
	first.Time = events[0].Time
	out := append([]session.Event{first}, events[1:]...)
	out = append(out, extra...)
	_, err = a.store.Append(ctx, fork, 0, out)
	return err
}

// RestoreOptions adjusts Restore.
type RestoreOptions struct {
	// Force overwrites files that changed since this session last left
	// them (by another person or program) instead of refusing.
	Force bool
	// DryRun computes and returns the plan, drift included, and writes
	// nothing.
	DryRun bool
}

// FileChange is one file a restore puts back.
type FileChange struct {
	Path   string `json:"path"`
	Action string `json:"action"` // "restore" (write the old content) or "remove" (it did not exist)
}

// RestoreResult says what a restore did.
type RestoreResult struct {
	Session string       `json:"session"`
	ToSeq   int64        `json:"to_seq"`
	Files   []FileChange `json:"files"`
	// Drift lists files changed since this session last left them; with
	// Force they were overwritten, else nothing was written.
	Drift []string `json:"drift,omitempty"`
	// NotUndone lists tool calls after the checkpoint whose effects a
	// restore cannot undo (shell commands), as "tool call_id: input".
	NotUndone []string `json:"not_undone,omitempty"`
	// UndoSession keeps the log as it was before the restore, and the files
	// as the restore found them: Restore(UndoSession, UndoSeq) undoes it.
	UndoSession string `json:"undo_session,omitempty"`
	UndoSeq     int64  `json:"undo_seq,omitempty"`
}

// DriftError is returned by Restore when files changed since the session
// last left them. Nothing was written.
type DriftError struct {
	Session string
	Files   []string
}

func (e *DriftError) Error() string {
	return fmt.Sprintf("restore of session %s stopped before writing anything: %d file(s) changed since this session last left them (%s); keep your changes and leave them, or restore with force to overwrite them",
		e.Session, len(e.Files), strings.Join(e.Files, ", "))
}

// Restore rewinds session id to checkpoint seq: every file the tools
// changed after it goes back to how it was then (files created since are
// removed, deleted ones come back, modes too), then the log is truncated to
// seq. Before writing anything it checks that each file is still as the
// session left it; a file changed since by someone else stops the restore
// with a *DriftError unless opts.Force. The log as it was is kept as a new
// session (RestoreResult.UndoSession), so a restore can be undone. Restore
// is idempotent and can be re-run after a crash half-way.
func (a *Agent) Restore(ctx context.Context, id string, seq int64, opts *RestoreOptions) (*RestoreResult, error) {
	if err := a.requirePersistent(); err != nil {
		return nil, err
	}
	var o RestoreOptions
	if opts != nil {
		o = *opts
	}
	ctx, leave, err := a.enter(ctx)
	if err != nil {
		return nil, err
	}
	defer leave()
	open, unlock, err := a.lockSessions(ctx, id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if !o.DryRun {
		// A turn of another process holds the session's lease while its
		// tools run: the restore refuses rather than race a tool that is
		// writing a file (restoreclaim.go has the fallback without leases).
		release, err := a.leaseTurn(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("restore %s: %w; nothing was written", id, err)
		}
		defer release()
	}

	events, err := checkpoint.ReadAll(ctx, a.store, id)
	if err != nil {
		return nil, fmt.Errorf("restore %s: %w", id, err)
	}
	if err := a.checkWorkdir(session.Summarize(id, events)); err != nil {
		return nil, err
	}
	// A restore_started at the end is this restore's own claim, left by a
	// run that was cut off: the log it rewinds is the one before the claim.
	claim, claimed, err := restoreClaim(events)
	if err != nil {
		return nil, fmt.Errorf("restore %s: %w", id, err)
	}
	if claimed {
		if claim.ToSeq != seq {
			return nil, fmt.Errorf("restore %s: a restore to checkpoint %d was cut off; re-run it (to %d) to finish it first", id, claim.ToSeq, claim.ToSeq)
		}
		events = events[:len(events)-1]
		a.clearRestoreStrays(claim)
	}
	head := int64(len(events))
	if seq != head { // at the head there is nothing to undo (a repeated restore)
		if err := checkRestorePoint(id, events, seq); err != nil {
			return nil, err
		}
	}
	plan, err := planRestore(events, seq)
	if err != nil {
		return nil, fmt.Errorf("restore %s: %w", id, err)
	}
	if err := a.checkBlobs(ctx, &plan); err != nil {
		return nil, fmt.Errorf("restore %s: %w; nothing was written", id, err)
	}
	res := &RestoreResult{Session: id, ToSeq: seq, NotUndone: plan.notUndone}
	paths := slices.Sorted(maps.Keys(plan.target))
	// Each file as it is now, read once: for the drift check and for the
	// undo fork.
	current := make(map[string]session.FileSnapshot, len(paths))
	found := newDirRoots(a.root)
	defer found.close()
	for _, p := range paths {
		action := "restore"
		if !plan.target[p].Existed {
			action = "remove"
		}
		res.Files = append(res.Files, FileChange{Path: p, Action: action})
		snap, err := found.snapshot(p)
		if err != nil {
			return nil, fmt.Errorf("restore %s: read %s: %w; nothing was written", id, p, err)
		}
		current[p] = snap
		if snap.Digest != plan.last[p] && snap.Digest != plan.target[p].Digest {
			res.Drift = append(res.Drift, p)
		}
	}
	found.close()
	res.Files = append(res.Files, dirChanges(plan.dirs)...)
	if o.DryRun || (seq == head && !claimed) {
		return res, nil
	}
	// The log as it was, and the files as they are now, are kept in a fork
	// named after this restore, so it can be undone. If that fork exists, a
	// run of this same restore stopped half-way (a crash): its drift check
	// passed and it may have written some files, so the re-run finishes the
	// job without checking again.
	undo := id + "-r" + strconv.FormatInt(head, 10)
	_, err = a.store.Head(ctx, undo)
	rerun := err == nil
	if err != nil && !errors.Is(err, checkpoint.ErrNotFound) {
		return nil, fmt.Errorf("restore %s: %w", id, err)
	}
	if len(res.Drift) > 0 && !o.Force && !rerun {
		if claimed {
			// Cut off before the undo fork: no file was written yet.
			if _, err := a.store.Truncate(ctx, id, head, head+1); err != nil {
				return res, fmt.Errorf("restore %s: drop the claim of the cut-off restore: %w", id, err)
			}
		}
		return res, &DriftError{Session: id, Files: res.Drift}
	}
	// Claim the session before any file is touched: a writer that still
	// holds the old head now loses with a conflict, and one that got in
	// first makes this append fail, with nothing written.
	if !claimed {
		if err := a.claimRestore(ctx, id, head, seq, undo, paths); err != nil {
			return res, err
		}
	}
	if !rerun {
		// The files as the restore finds them (the state at the head), then
		// what the restore leaves: restoring the fork to head undoes it.
		extra, err := a.undoEvents(ctx, &plan, paths, current)
		if err != nil {
			return nil, fmt.Errorf("restore %s: keep the files for undo: %w (no file was written; re-run the restore to finish it)", id, err)
		}
		restored := session.Restored{Session: id, ToSeq: seq, Fork: undo, Files: map[string]string{}, NotUndone: plan.notUndone}
		for _, p := range paths {
			restored.Files[p] = plan.target[p].Digest
		}
		if ev, ok := a.undoDirs(plan.dirs); ok {
			extra = append(extra, ev)
		}
		extra = append(extra, mustEvent(session.TypeRestored, restored))
		if err := a.copyLog(ctx, undo, id, events, extra); err != nil && !checkpoint.IsConflict(err) {
			return nil, fmt.Errorf("restore %s: keep the log for undo: %w (no file was written; re-run the restore to finish it)", id, err)
		}
	}
	res.UndoSession, res.UndoSeq = undo, head

	// Write the files back (the old content is safe in the undo fork), then
	// make them durable with one sync before the log forgets the tail.
	// The blobs are read in batches (one query each), the directories
	// located afresh (one handle each, see dirRoots).
	var todo []string
	for _, p := range paths {
		if current[p].Digest == plan.target[p].Digest && current[p].Existed == plan.target[p].Existed &&
			(!current[p].Existed || current[p].Mode == plan.target[p].Mode) {
			continue // already as it was at the checkpoint
		}
		todo = append(todo, p)
	}
	dirs := newDirRoots(a.root)
	defer dirs.close()
	var written []string
	for _, batch := range plan.blobBatches(todo) {
		if err := ctx.Err(); err != nil {
			return res, fmt.Errorf("restore %s: %w after %d of %d file(s) (re-run the restore to finish; it is safe to repeat)", id, err, len(written), len(todo))
		}
		content, err := a.readBatch(ctx, &plan, batch)
		if err != nil {
			return res, fmt.Errorf("restore %s: %w after writing %d file(s) (re-run the restore to finish; it is safe to repeat)", id, err, len(written))
		}
		for _, p := range batch {
			if err := ctx.Err(); err != nil {
				return res, fmt.Errorf("restore %s: %w after %d of %d file(s) (re-run the restore to finish; it is safe to repeat)", id, err, len(written), len(todo))
			}
			target := plan.target[p]
			if plan.fromBlob[p] {
				data, ok := content[target.Digest]
				if !ok {
					return res, fmt.Errorf("restore %s: %s: blob %s: %w after writing %d file(s) (re-run the restore to finish; it is safe to repeat)", id, p, target.Digest, checkpoint.ErrNotFound, len(written))
				}
				target.Content = data
			}
			loc, err := dirs.locate(p)
			if err == nil {
				err = putBackAt(loc, target, current[p])
			}
			if err != nil {
				return res, fmt.Errorf("restore %s: %s: %w after writing %d file(s) (re-run the restore to finish; it is safe to repeat)", id, p, err, len(written))
			}
			written = append(written, p)
		}
	}
	dirs.close()
	dirsChanged, err := a.restoreDirs(plan.dirs)
	if err != nil {
		return res, fmt.Errorf("restore %s: %w after writing %d file(s) (re-run the restore to finish; it is safe to repeat)", id, err, len(written))
	}
	written = append(written, dirsChanged...)
	if err := a.syncFiles(written); err != nil {
		return res, fmt.Errorf("restore %s: sync the restored files: %w (re-run the restore to finish; it is safe to repeat)", id, err)
	}
	if _, err := a.store.Truncate(ctx, id, seq, head+1); err != nil {
		return res, fmt.Errorf("restore %s: truncate the log: %w; %d file(s) were already put back (re-run the restore to finish; it is safe to repeat)", id, err, len(written))
	}
	for _, s := range open {
		if err := s.reload(ctx); err != nil {
			return res, err
		}
	}
	return res, nil
}

// restorePlan is what a restore to a checkpoint must do.
type restorePlan struct {
	target map[string]session.FileSnapshot // path → the file as it was at the checkpoint
	last   map[string]string               // path → digest the session last left there
	// fromBlob marks targets whose content is a blob in the store (files a
	// shell command changed), not in the snapshot.
	fromBlob map[string]bool
	blobSize map[string]int64 // the size of each of those blobs, for batching
	// dirs maps each directory created or removed after the checkpoint to
	// how it was then (see restore_shell.go).
	dirs      map[string]dirTarget
	notUndone []string
}

// mcpElsewhere is the note on a tracked MCP call: what it changed in the
// workdir is undone, what it did through its server elsewhere is not.
const mcpElsewhere = " (its changes in the workdir are undone; what it did elsewhere is not)"

func planRestore(events []session.Event, seq int64) (restorePlan, error) {
	p := restorePlan{target: map[string]session.FileSnapshot{}, last: map[string]string{}, fromBlob: map[string]bool{}, blobSize: map[string]int64{}, dirs: map[string]dirTarget{}}
	var open []string            // calls started after seq that never finished
	tracked := map[string]bool{} // shell calls whose changes are recorded
	var untracked []session.ToolFinished
	for _, e := range events {
		switch e.Type {
		case session.TypeWorkspaceChanged:
			if err := p.addShellChanges(e, seq, tracked); err != nil {
				return p, err
			}
		case session.TypeFileSnapshot:
			var s session.FileSnapshot
			if err := e.Decode(&s); err != nil {
				return p, err
			}
			if e.Seq > seq {
				if _, seen := p.target[s.Path]; !seen {
					p.target[s.Path] = s
				}
			}
			p.last[s.Path] = s.Digest
		case session.TypeToolStarted:
			var st session.ToolStarted
			if err := e.Decode(&st); err != nil {
				return p, err
			}
			if e.Seq > seq {
				open = append(open, st.Tool+" "+st.CallID)
			}
		case session.TypeToolFinished:
			var f session.ToolFinished
			if err := e.Decode(&f); err != nil {
				return p, err
			}
			open = slices.DeleteFunc(open, func(c string) bool { return c == f.Tool+" "+f.CallID })
			for path, d := range f.Files {
				p.last[path] = d
			}
			if f.Untracked && e.Seq > seq {
				untracked = append(untracked, f)
			}
		case session.TypeRestored:
			var r session.Restored
			if err := e.Decode(&r); err != nil {
				return p, err
			}
			for path, d := range r.Files {
				p.last[path] = d
			}
		}
	}
	// A job's changes are recorded when it ends, after its call's receipt.
	for _, f := range untracked {
		if !tracked[f.CallID] {
			p.notUndone = append(p.notUndone, f.Tool+" "+f.CallID)
		} else if _, _, mcpCall := mcp.SplitToolName(f.Tool); mcpCall {
			// Its workspace manifests cover the workdir only; an MCP
			// server can act anywhere (a remote API, another directory).
			p.notUndone = append(p.notUndone, f.Tool+" "+f.CallID+mcpElsewhere)
		}
	}
	for _, c := range open {
		p.notUndone = append(p.notUndone, c+" (interrupted: its outcome is unknown)")
	}
	return p, nil
}

// fsyncEach syncs each file (and the directory of a removed one).
func (a *Agent) fsyncEach(paths []string) error {
	for _, p := range paths {
		loc, err := a.root.Locate(p)
		if err != nil {
			return err
		}
		name := loc.Name
		f, err := loc.FS.Open(name)
		if errors.Is(err, fs.ErrNotExist) {
			f, err = loc.FS.Open(filepath.Dir(name))
		}
		if err != nil {
			return err
		}
		err = f.Sync()
		f.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

func isAbs(p string) bool { return filepath.IsAbs(p) }
