package session

import (
	"time"
	"unicode"
)

// Status is where a session's latest turn stands.
type Status string

// Statuses. A session whose process died mid-turn stays StatusRunning in its
// log; Hazards tells whether a tool was cut off.
const (
	StatusNew         Status = "new"         // no prompt yet
	StatusRunning     Status = "running"     // a turn started and has not ended
	StatusCompleted   Status = "completed"   // the last turn completed
	StatusInterrupted Status = "interrupted" // the last turn was cancelled or failed
)

// TitleLen is how many runes of the first prompt a summary keeps as title.
const TitleLen = 80

// Summary is what stores keep per session so that listing never reads whole
// logs. It is a fold over the log ([Summary.Apply]), so a store can keep it
// up to date on every append and recompute it from the log when in doubt.
type Summary struct {
	ID        string    `json:"id"`
	Kind      string    `json:"kind,omitempty"`
	Namespace string    `json:"namespace"`
	Workdir   string    `json:"workdir,omitempty"`
	Model     string    `json:"model,omitempty"`
	Parent    *ForkRef  `json:"parent,omitempty"`
	Title     string    `json:"title,omitempty"`
	Head      int64     `json:"head"`
	Messages  int       `json:"messages"`
	Status    Status    `json:"status"`
	Created   time.Time `json:"created"`
	Updated   time.Time `json:"updated"`
	// Imported says where the log came from when it was imported (see
	// Import), nil for a session written in this store.
	Imported *Import `json:"imported,omitempty"`
	// Open lists the recovery hazards (see Hazard): a tool started and
	// neither finished nor acknowledged, by its call id, and a background
	// job started and neither finished nor acknowledged, as "job:ID:TOKEN"
	// (a job may also still be running in a live process). Len(Open) is
	// their count. It is the projection of State's hazards (Hazard.Key).
	Open []string `json:"open,omitempty"`
	// Fold is the FoldVersion of the code that folded the summary from the
	// log's first event; 0 for a log folded from its middle. A store that
	// reads a summary of an older Fold recomputes it from the log (see
	// checkpoint.Refold); one of a newer Fold is an ErrNewer error
	// (CheckFold).
	Fold int `json:"fold,omitempty"`
}

// FoldVersion is the version of the fold Summary.Apply and State.Apply
// implement. It changes whenever what they compute from a log changes, so
// that summaries stored by older code are recomputed rather than trusted.
//
// Version 1: the fold of this release and of every summary stored before
// summaries carried a version (stores read those as version 1: hazards of
// tools and jobs got one definition, Hazard, without changing what a
// summary holds). Bump it with any change to what the fold computes.
const FoldVersion = 1

// Summarize folds a whole log into a summary for session id.
func Summarize(id string, events []Event) Summary {
	s := Summary{ID: id}
	for _, e := range events {
		s.Apply(e)
	}
	return s
}

// Apply folds one event into the summary. Events must be applied in seq order.
func (s *Summary) Apply(e Event) {
	var f facts
	switch e.Type {
	case TypeSessionStarted:
		var p SessionStarted
		f.ok = e.Decode(&p) == nil
		f.start = p
	case TypeUserPrompt:
		if s.Title == "" {
			var p UserPrompt
			f.ok = decodePrompt(e, &p)
			f.text = p.Text
		}
	case TypeToolStarted:
		var p ToolStarted
		f.ok = decodeStarted(e, &p)
		f.callID, f.tool, f.paths = p.CallID, p.Tool, p.Paths
	case TypeToolFinished:
		var p ToolFinished
		f.ok = decodeFinished(e, &p, false)
		f.callID = p.CallID
	case TypeRecoveryAcknowledged:
		var p RecoveryAcknowledged
		f.ok = e.Decode(&p) == nil
		f.callIDs, f.tokens = p.CallIDs, p.Tokens
	case TypeJobStarted:
		// Decoded into a variable of its own: a pointer into f given to
		// Decode would move f, the whole of it, to the heap on every call.
		var p JobStarted
		f.ok = e.Decode(&p) == nil
		f.jobStart = p
	case TypeJobFinished:
		var p JobFinished
		f.ok = e.Decode(&p) == nil
		f.job = p.Job
	case TypeWorkdirChanged:
		var p WorkdirChanged
		f.ok = e.Decode(&p) == nil && p.To != ""
		f.workdir = p.To
	case TypeSessionTitled:
		var p SessionTitled
		f.ok = e.Decode(&p) == nil
		f.text = p.Title
	}
	s.apply(e, &f)
}

// facts are what the summary reads from an event's payload, decoded by
// Summary.Apply or, so that replay decodes each payload once, by State.Apply.
type facts struct {
	ok       bool           // the payload decoded
	start    SessionStarted // session_started
	text     string         // user_prompt: the text (needed while there is no title); session_titled: the title
	callID   string         // tool_started, tool_finished
	tool     string         // tool_started
	paths    []string       // tool_started
	jobStart JobStarted     // job_started
	step     hazardStep     // what the event does to the hazards, when stepped
	stepped  bool           // State worked step out already
	callIDs  []string       // recovery_acknowledged
	tokens   []string       // recovery_acknowledged
	job      string         // job_finished
	workdir  string         // workdir_changed: the new workdir
}

// apply folds e, whose payload gave f, into the summary.
func (s *Summary) apply(e Event, f *facts) {
	if e.Seq > s.Head {
		s.Head = e.Seq
	}
	if s.Created.IsZero() || e.Seq == 1 {
		s.Created = e.Time
	}
	if e.Time.After(s.Updated) {
		s.Updated = e.Time
	}
	switch e.Type {
	case TypeSessionStarted:
		if e.Seq == 1 {
			s.Fold = FoldVersion // folded from the start
		}
		if f.ok {
			p := &f.start
			if p.ID != "" {
				s.ID = p.ID
			}
			s.Kind, s.Namespace, s.Workdir, s.Model, s.Parent = p.Kind, p.Namespace, p.Workdir, p.Model, p.Parent
			s.Imported = summaryImport(p.Imported)
		}
		if s.Status == "" {
			s.Status = StatusNew
		}
	case TypeUserPrompt:
		s.Messages++
		s.Status = StatusRunning
		if s.Title == "" && f.ok {
			s.Title = Title(f.text)
		}
	case TypeAssistantMessage:
		s.Messages++
	case TypeWorkdirChanged:
		if f.ok {
			s.Workdir = f.workdir
		}
	case TypeRestoreStarted:
		s.Status = StatusRestoring
	case TypeSessionTitled:
		if t := Title(f.text); f.ok && t != "" {
			s.Title = t
		}
	case TypeTurnCompleted:
		s.Status = StatusCompleted
	case TypeTurnInterrupted:
		s.Status = StatusInterrupted
	}
	st, ok := f.step, f.stepped
	if !ok {
		st, ok = stepOf(e, f, s.Parent, false)
	}
	if ok {
		s.Open = foldHazards(s.Open, &st, hazardOfKey, Hazard.Key)
	}
	if len(s.Open) == 0 {
		s.Open = nil
	}
}

// Hazards returns the number of interrupted tool outcomes awaiting review.
func (s Summary) Hazards() int { return len(s.Open) }

// Title shortens a prompt to one line of at most TitleLen runes, without
// control characters (so no terminal escape sequence survives in it).
func Title(prompt string) string {
	out := make([]rune, 0, TitleLen)
	space := false
	for _, r := range prompt {
		if r == '\n' || r == '\r' || r == '\t' || r == ' ' {
			space = len(out) > 0
			continue
		}
		if unicode.IsControl(r) {
			continue // an escape sequence from a model or an import must not reach a terminal
		}
		if space {
			out = append(out, ' ')
			space = false
		}
		out = append(out, r)
		if len(out) >= TitleLen {
			out = append(out[:TitleLen-1], '…')
			break
		}
	}
	return string(out)
}
