package checkpoint

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/lite-agent/lite-agent/checkpoint/internal/entry"
	"github.com/lite-agent/lite-agent/session"
)

// The doctor checks a store against its logs: every log reads (framing,
// checksums, seqs 1, 2, 3 … up to the recorded head), every event's payload
// is JSON, the stored summary equals a fold of the log, a fork's parent is
// there (on every store), a private task list's session is there, a mailbox's
// session is there, and, through a store's Repairer, what it derives (summary rows,
// search index) matches the logs. With repair, a Repairer rebuilds derived
// data from the logs and moves a damaged tail aside; the doctor itself never
// deletes an event.

// Problem kinds.
const (
	ProblemCorrupt       = "corrupt_log"       // a log does not read back whole
	ProblemUndecodable   = "undecodable_event" // an event's payload is not JSON
	ProblemSummaryStale  = "summary_stale"     // the stored summary differs from a fold of the log
	ProblemSummaryOld    = "summary_old_fold"  // the stored summary was folded by an older fold version
	ProblemSummaryLost   = "summary_missing"   // events whose session has no summary (not listed)
	ProblemIndexStale    = "index_stale"       // the search index differs from the logs
	ProblemParentMissing = "fork_parent_missing"
)

// Problem is one thing the doctor found.
type Problem struct {
	Session string `json:"session,omitempty"`
	Seq     int64  `json:"seq,omitempty"`
	Kind    string `json:"problem"`
	Detail  string `json:"detail"`
	// Fix says what to do about it.
	Fix string `json:"fix"`
	// Repaired is set when a repair fixed it.
	Repaired bool `json:"repaired,omitempty"`
}

// Report is what Doctor found.
type Report struct {
	Sessions int       `json:"sessions"`
	Events   int64     `json:"events"`
	Problems []Problem `json:"problems"`
}

// Repairer is the optional ability of a store to check what it derives
// from its logs (summaries, search index) and to rebuild it. Stores without
// it get the doctor's generic checks only.
type Repairer interface {
	// CheckDerived returns one Problem per difference between what the
	// store derives and a fold of its logs, and logs it cannot read whole.
	// With repair it rebuilds derived data from the logs and moves each
	// damaged tail to a side file next to the store (named in the
	// problem's Fix), keeping the events before it; problems it fixed are
	// marked Repaired. It is idempotent and safe while other processes use
	// the store (writers wait for it).
	CheckDerived(ctx context.Context, repair bool) ([]Problem, error)
}

// LogVisitor is the optional ability of a Repairer whose CheckDerived
// reads every log anyway to show the doctor what it read, so that the
// doctor's checks of what logs name (blobs) read each log once rather than
// twice. Doctor uses CheckDerived when a store lacks it.
type LogVisitor interface {
	// CheckDerivedVisit is CheckDerived that also calls visit once per
	// session it read, with the session's id and its events that verify
	// (from seq 1; the events before any damage), in one goroutine. The
	// slice is only valid during the call.
	CheckDerivedVisit(ctx context.Context, repair bool, visit func(id string, events []session.Event)) ([]Problem, error)
}

// DoctorOptions narrows Doctor.
type DoctorOptions struct {
	// Session checks one session only; "" checks every log.
	Session string
	// Repair rebuilds derived data through the store's Repairer.
	Repair bool
}

// Doctor checks c (see the section above) and returns its report. It writes
// only with opts.Repair, and only through c's Repairer (and its Mailbox, to
// remove the mailboxes of sessions that are gone).
func Doctor(ctx context.Context, c Checkpointer, opts DoctorOptions) (*Report, error) {
	r := &Report{Problems: []Problem{}}
	rp, whole := c.(Repairer)
	whole = whole && opts.Session == ""
	// Sessions the store's check read, and whether their logs name blobs
	// to undo with; nil when the store does not show what it read.
	var namesBlobs map[string]bool
	if whole {
		var found []Problem
		var err error
		if v, ok := c.(LogVisitor); ok {
			namesBlobs = map[string]bool{}
			found, err = v.CheckDerivedVisit(ctx, opts.Repair, func(id string, events []session.Event) {
				namesBlobs[id] = slices.ContainsFunc(events, func(e session.Event) bool { return len(UndoBlobRefs(e)) > 0 })
			})
		} else {
			found, err = rp.CheckDerived(ctx, opts.Repair)
		}
		if err != nil {
			return nil, err
		}
		r.Problems = append(r.Problems, found...)
	}
	var list []session.Summary
	if opts.Session != "" {
		sum, err := c.Head(ctx, opts.Session)
		if err != nil {
			return nil, err
		}
		list = []session.Summary{sum}
	} else {
		var err error
		if list, err = c.List(ctx, "", ListOptions{AllKinds: true}); err != nil {
			return nil, err
		}
	}
	heads := make(map[string]int64, len(list))
	for _, s := range list {
		heads[s.ID] = s.Head
	}
	if opts.Session != "" {
		// One session's parent and owner are looked up one by one.
		heads = nil
	}
	for _, s := range list {
		r.Sessions++
		r.Problems = append(r.Problems, parentProblems(ctx, c, s, heads)...)
		if s.Kind == session.KindTaskList {
			found, err := taskListProblems(ctx, c, s, heads)
			if err != nil {
				return nil, err
			}
			r.Problems = append(r.Problems, found...)
		}
		if whole {
			// The store's own check read every log once already.
			r.Events += s.Head
			continue
		}
		found, n, err := CheckLog(ctx, c, s)
		if err != nil {
			return nil, err
		}
		r.Events += n
		r.Problems = append(r.Problems, found...)
	}
	blobbed := list
	if namesBlobs != nil {
		// Only the logs that name blobs, or that the store's check did
		// not see (written since), are read again.
		blobbed = slices.DeleteFunc(slices.Clone(list), func(s session.Summary) bool {
			named, seen := namesBlobs[s.ID]
			return seen && !named
		})
	}
	found, err := checkBlobs(ctx, c, blobbed) // doctor_blobs.go
	if err != nil {
		return nil, err
	}
	r.Problems = append(r.Problems, found...)
	if opts.Session == "" {
		found, err := mailProblems(ctx, c, heads, opts.Repair) // doctor_mail.go
		if err != nil {
			return nil, err
		}
		r.Problems = append(r.Problems, found...)
	}
	return r, nil
}

// Problem kinds of what refers to other sessions.
const (
	// ProblemTaskListOrphaned is a private task list whose session is gone.
	ProblemTaskListOrphaned = "task_list_orphaned"
)

// present reports whether session id is in the store: from heads when
// given (a listing of every session), else by asking the store.
func present(ctx context.Context, c Checkpointer, heads map[string]int64, id string) bool {
	if heads != nil {
		_, ok := heads[id]
		return ok
	}
	_, err := c.Head(ctx, id)
	return err == nil
}

// parentProblems checks that the session a fork (an undo fork of a restore
// among them) was taken from is still there. Its head may be below the
// fork's seq: a restore rewinds the session its undo fork was taken from.
func parentProblems(ctx context.Context, c Checkpointer, s session.Summary, heads map[string]int64) []Problem {
	p := s.Parent
	if p == nil || present(ctx, c, heads, p.Session) {
		return nil
	}
	return []Problem{{Session: s.ID, Kind: ProblemParentMissing,
		Detail: fmt.Sprintf("it was forked from %s at seq %d, which this store no longer holds", p.Session, p.Seq),
		Fix:    "nothing to do: a fork holds its own copy of the parent's events"}}
}

// taskListProblems checks that a private task list's session is there: a
// list outlives its session only when a delete was cut short.
func taskListProblems(ctx context.Context, c Checkpointer, s session.Summary, heads map[string]int64) ([]Problem, error) {
	for e, err := range c.Read(ctx, s.ID, 1) {
		if err != nil {
			return nil, nil // a damaged list is the log check's to report
		}
		if e.Type != session.TypeTaskListCreated {
			continue
		}
		var p session.TaskListCreated
		if e.Decode(&p) != nil || p.Session == "" || present(ctx, c, heads, p.Session) {
			return nil, nil
		}
		return []Problem{{Session: s.ID, Kind: ProblemTaskListOrphaned,
			Detail: fmt.Sprintf("the private task list of session %s, which this store no longer holds (a delete was cut short)", p.Session),
			Fix:    fmt.Sprintf("delete it: lite-agent --delete-session %s (nothing else reads it)", s.ID)}}, nil
	}
	return nil, nil
}

// CheckLog reads the log of the session stored summarizes and checks it
// against that summary: it reads back whole, its payloads are JSON, its
// fold equals the summary. It returns the problems and the number of
// events read. A writer may go on meanwhile: events past the summary's
// head are a later append, and when the fold still differs the summary is
// read again; only a log that stays still and differs is stale. Doctor
// runs it on stores without a Repairer; a Repairer may run it too.
func CheckLog(ctx context.Context, c Checkpointer, stored session.Summary) ([]Problem, int64, error) {
	for try := 0; ; try++ {
		out, n, stale, err := checkLogOnce(ctx, c, stored)
		if err != nil || !stale || try == 3 {
			return out, n, err
		}
		now, err := c.Head(ctx, stored.ID)
		if err != nil || bytes.Equal(entry.Encode(&now), entry.Encode(&stored)) {
			return out, n, nil
		}
		stored = now // it moved: check again against what it is now
	}
}

// checkLogOnce is one pass of CheckLog; stale says whether the fold
// differed from stored.
func checkLogOnce(ctx context.Context, c Checkpointer, stored session.Summary) (_ []Problem, _ int64, stale bool, _ error) {
	if err := session.CheckFold(&stored); err != nil {
		return nil, 0, false, fmt.Errorf("doctor: the summary of session %s was %w", stored.ID, err)
	}
	var out []Problem
	fold := session.Summary{ID: stored.ID}
	var n int64
	for e, err := range c.Read(ctx, stored.ID, 1) {
		var ce *CorruptError
		switch {
		case errors.As(err, &ce):
			return append(out, Problem{Session: stored.ID, Seq: ce.Seq, Kind: ProblemCorrupt, Detail: ce.Error(),
				Fix: fmt.Sprintf("run --doctor --repair (stores that can move a damaged tail aside keep events 1 to %d), or --export %s --salvage and import the result", ce.Seq-1, stored.ID)}), n, false, nil
		case errors.Is(err, ErrNotFound):
			return out, n, false, nil // deleted since the listing
		case err != nil:
			return nil, n, false, fmt.Errorf("doctor: read %s: %w", stored.ID, err)
		}
		if e.Seq > stored.Head {
			break // appended since the summary was read
		}
		n++
		if len(e.Data) > 0 && !json.Valid(e.Data) {
			out = append(out, Problem{Session: stored.ID, Seq: e.Seq, Kind: ProblemUndecodable,
				Detail: fmt.Sprintf("the payload of %s event %d is not JSON", e.Type, e.Seq),
				Fix:    "replay skips it; nothing to do unless the session misbehaves"})
		}
		fold.Apply(e)
	}
	if Stale(&stored) {
		// Not a summary gone wrong: one an older fold computed, which
		// reads recompute.
		return append(out, OldFoldProblem(stored.ID, stored.Fold, false)), n, false, nil
	}
	if !bytes.Equal(entry.Encode(&stored), entry.Encode(&fold)) {
		out = append(out, Problem{Session: stored.ID, Kind: ProblemSummaryStale,
			Detail: fmt.Sprintf("the stored summary (head %d, %d messages, %q) differs from a fold of the log (head %d, %d messages, %q)", stored.Head, stored.Messages, stored.Title, fold.Head, fold.Messages, fold.Title),
			Fix:    "run --doctor --repair to rebuild it from the log"})
		return out, n, true, nil
	}
	return out, n, false, nil
}
