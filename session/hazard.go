package session

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Hazard is a tool that was started and never finished, or a background
// job that was started and never recorded as ended: its outcome is unknown
// and must be reviewed before the session goes on. This is the one
// definition of a recovery hazard; State.Hazards lists them and
// Summary.Open is their projection (Hazard.Key).
type Hazard struct {
	Token   string    `json:"token"` // review token to acknowledge it with
	CallID  string    `json:"call_id"`
	Tool    string    `json:"tool"`
	Seq     int64     `json:"seq"` // the tool_started (job_started) event
	Started time.Time `json:"started"`
	Paths   []string  `json:"paths,omitempty"`
	// Job is set for a background job: its id. A job's process may still
	// run (its process group is PID); the call that started it has its
	// result, so acknowledging it closes only the job.
	Job string `json:"job,omitempty"`
	PID int    `json:"pid,omitempty"`
}

// Key is how Summary.Open names the hazard: its call id for a tool, and
// "job:ID:TOKEN" for a background job.
func (h Hazard) Key() string {
	if h.Job != "" {
		return "job:" + h.Job + ":" + h.Token
	}
	return h.CallID
}

// hazardOfKey is the part of a hazard its key keeps, enough to tell which
// events close it.
func hazardOfKey(k string) Hazard {
	if rest, ok := strings.CutPrefix(k, "job:"); ok {
		job, token, _ := strings.Cut(rest, ":")
		return Hazard{Job: job, Token: token}
	}
	return Hazard{CallID: k}
}

// hazardStep is what one event does to the open hazards.
type hazardStep struct {
	typ       Type
	opens     bool // tool_started, job_started: open opens
	open      Hazard
	finished  string   // tool_finished: the call id
	jobEnded  string   // job_finished: the job id
	ackCalls  []string // recovery_acknowledged: the call ids
	ackTokens []string // recovery_acknowledged: the review tokens
}

// stepOf says what event e, whose payload gave f, does to the hazards of a
// session whose fork point is parent (nil for none). Jobs a fork copied
// from its parent's log are the parent's: their ends are recorded there.
// Without full, a tool's hazard has only what its Key needs (the summary's
// case: no review token to hash).
func stepOf(e Event, f *facts, parent *ForkRef, full bool) (hazardStep, bool) {
	if !f.ok {
		return hazardStep{}, false
	}
	switch e.Type {
	case TypeToolStarted:
		st := hazardStep{typ: e.Type, opens: true, open: Hazard{CallID: f.callID}}
		if full {
			st.open = Hazard{Token: ReviewToken(f.callID, e.Seq), CallID: f.callID, Tool: f.tool, Seq: e.Seq, Started: e.Time, Paths: f.paths}
		}
		return st, true
	case TypeToolFinished:
		return hazardStep{typ: e.Type, finished: f.callID}, true
	case TypeJobStarted:
		if parent != nil && e.Seq <= parent.Seq {
			return hazardStep{}, false
		}
		j := &f.jobStart
		st := hazardStep{typ: e.Type, opens: true, open: Hazard{Token: ReviewToken(j.CallID+"/"+j.Job, e.Seq), CallID: j.CallID, Job: j.Job}}
		if full {
			st.open.PID, st.open.Seq, st.open.Started = j.PID, e.Seq, e.Time
			st.open.Tool = fmt.Sprintf("bash background job %s (process group %d): %s", j.Job, j.PID, oneLine(j.Command, 60))
		}
		return st, true
	case TypeJobFinished:
		return hazardStep{typ: e.Type, jobEnded: f.job}, true
	case TypeRecoveryAcknowledged:
		return hazardStep{typ: e.Type, ackCalls: f.callIDs, ackTokens: f.tokens}, true
	}
	return hazardStep{}, false
}

// closes reports whether the step closes hazard h: a tool by its receipt
// or the acknowledgement of its call, a job by its end or its token.
func (st *hazardStep) closes(h Hazard) bool {
	switch {
	case st.typ == TypeRecoveryAcknowledged && h.Job != "":
		return slices.Contains(st.ackTokens, h.Token)
	case st.typ == TypeRecoveryAcknowledged:
		return slices.Contains(st.ackCalls, h.CallID)
	case st.typ == TypeJobFinished:
		return h.Job != "" && st.jobEnded == h.Job
	case st.typ == TypeToolFinished:
		return h.Job == "" && st.finished == h.CallID
	}
	return false
}

// foldHazards applies a step to a list of open hazards or of their
// projections (as: how to see an element as a Hazard; mk: how to make
// one). State keeps Hazards, Summary keeps keys; both go through here.
func foldHazards[T any](list []T, st *hazardStep, as func(T) Hazard, mk func(Hazard) T) []T {
	if st.opens {
		return append(list, mk(st.open))
	}
	kept := list[:0]
	for _, x := range list {
		if !st.closes(as(x)) {
			kept = append(kept, x)
		}
	}
	clear(list[len(kept):])
	return kept
}

// oneLine returns s on one line, cut to n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
