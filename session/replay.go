package session

import "time"

// Message is one message of the transcript a model is sent.
type Message struct {
	Role   string  `json:"role"` // RoleUser or RoleAssistant
	Blocks []Block `json:"blocks"`
}

// Roles of transcript messages.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Checkpoint is a point a session can be rewound to: the head just before a
// prompt, with that prompt.
type Checkpoint struct {
	Seq    int64     `json:"seq"`    // the head before the prompt; Restore(seq) keeps events ≤ seq
	Prompt string    `json:"prompt"` // the prompt's text
	Time   time.Time `json:"time"`
	// PromptSeq is the seq of the user_prompt event itself.
	PromptSeq int64 `json:"prompt_seq"`
}

// Hazard is a tool that was started and never finished: its outcome is
// unknown and must be reviewed before the session goes on.
type Hazard struct {
	Token   string          `json:"token"` // review token to acknowledge it with
	CallID  string          `json:"call_id"`
	Tool    string          `json:"tool"`
	Seq     int64           `json:"seq"` // the tool_started event
	Started time.Time       `json:"started"`
	Paths   []string        `json:"paths,omitempty"`
	Input   []byte          `json:"-"`
	_       struct{}        `json:"-"`
	Extra   map[string]bool `json:"-"`
}

// State is a session replayed: the fold of its events. Apply events in seq
// order; the accessors derive the transcript, checkpoints and hazards.
// The zero State is an empty session. State does no I/O.
type State struct {
	Summary Summary
	events  []Event
}

// Replay folds a whole log.
func Replay(events []Event) *State {
	s := &State{}
	for _, e := range events {
		s.Apply(e)
	}
	return s
}

// Apply folds one event into the state.
func (s *State) Apply(e Event) {
	s.Summary.Apply(e)
	s.events = append(s.events, e)
}
