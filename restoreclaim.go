package liteagent

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
	"github.com/lite-agent/lite-agent/tool"
)

// NotCheckpointError is returned by Restore and Fork for a seq that is not
// one of the session's checkpoints: rewinding there would cut a turn in
// half. Valid lists the seqs that are.
type NotCheckpointError struct {
	Session string
	Seq     int64
	Valid   []int64
}

func (e *NotCheckpointError) Error() string {
	seqs := make([]string, len(e.Valid))
	for i, s := range e.Valid {
		seqs[i] = strconv.FormatInt(s, 10)
	}
	list := strings.Join(seqs, ", ")
	if list == "" {
		list = "none: the session has no prompt yet"
	}
	return fmt.Sprintf("seq %d of session %s is not a checkpoint (the head just before a prompt), so it would cut a turn in half; its checkpoints are: %s", e.Seq, e.Session, list)
}

// restorePoints returns the seqs a session can be rewound to: its
// checkpoints and, in the undo fork a restore left, the head before that
// restore (where the fork's copy of the old log ends).
func restorePoints(id string, events []session.Event) []int64 {
	st := session.Replay(events)
	var pts []int64
	for _, cp := range st.Checkpoints() {
		pts = append(pts, cp.Seq)
	}
	if parent := st.Summary.Parent; parent != nil {
		for _, e := range events[min(int(parent.Seq), len(events)):] {
			var r session.Restored
			if e.Type == session.TypeRestored && e.Decode(&r) == nil && r.Fork == id {
				pts = append(pts, parent.Seq)
				break
			}
		}
	}
	slices.Sort(pts)
	return slices.Compact(pts)
}

// checkRestorePoint refuses a seq that is not a restore point of the log.
func checkRestorePoint(id string, events []session.Event, seq int64) error {
	pts := restorePoints(id, events)
	if slices.Contains(pts, seq) {
		return nil
	}
	return &NotCheckpointError{Session: id, Seq: seq, Valid: pts}
}

// restoreClaim returns the restore_started event that ends the log, if any.
func restoreClaim(events []session.Event) (session.RestoreStarted, bool, error) {
	var c session.RestoreStarted
	if len(events) == 0 || events[len(events)-1].Type != session.TypeRestoreStarted {
		return c, false, nil
	}
	if err := events[len(events)-1].Decode(&c); err != nil {
		return c, false, err
	}
	return c, true, nil
}

// claimRestore appends restore_started at head: from then on the session is
// the restore's until its truncation removes the claim. A writer that got in
// first makes it fail with a conflict, and nothing was written.
func (a *Agent) claimRestore(ctx context.Context, id string, head, seq int64, undo string, paths []string) error {
	ev := mustEvent(session.TypeRestoreStarted, session.RestoreStarted{ToSeq: seq, Head: head, Undo: undo, Workdir: a.root.Dir(), Paths: paths})
	if _, err := a.store.Append(ctx, id, head, []session.Event{ev}); err != nil {
		if checkpoint.IsConflict(err) {
			return fmt.Errorf("restore %s: the session was written by another agent or process while the restore read it; no file was written (run the restore again once it is idle): %w", id, err)
		}
		return fmt.Errorf("restore %s: claim the session: %w; no file was written", id, err)
	}
	return nil
}

// clearRestoreStrays removes the temporary files a restore cut off while
// writing (a crash, a kill) left beside the files its claim c names, when
// the workdir in use is the one that restore wrote in: only files of the
// exact shape a write gives its temporary file (tool.StrayTempOf).
// Failures are left for the doctor to report.
func (a *Agent) clearRestoreStrays(c session.RestoreStarted) {
	if len(c.Paths) > 0 && c.Workdir == a.root.Dir() {
		a.root.RemoveStrayTemps(c.Paths)
	}
}

// checkNotClaimed is the tool path's guard, before a tool that may write
// runs, for stores without leases: if the stored head moved past the
// session's, another process appended (a restore's claim, or another
// writer) and the tool must not touch the workdir. With a lease, a restore
// cannot start while this turn holds it, and the append of the tool's start
// just made proves the lease still held: on PostgreSQL it ran on the very
// server session holding the lock, and fails with checkpoint.ErrLeaseLost
// when that lock is gone and could not be taken back.
func (s *Session) checkNotClaimed(ctx context.Context, t tool.Tool) error {
	if _, ok := s.a.store.(checkpoint.Leaser); ok {
		return nil
	}
	if k := t.Spec().Kind; k == tool.KindRead || k == "" {
		return nil
	}
	sum, err := s.a.store.Head(ctx, s.ID())
	if err != nil {
		return nil // the append that follows reports it
	}
	if head := s.Head(); sum.Head != head {
		return &AppendError{Session: s.ID(), Err: &checkpoint.ConflictError{Session: s.ID(), Expected: head, Actual: sum.Head}}
	}
	return nil
}
