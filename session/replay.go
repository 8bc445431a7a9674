package session

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
	"time"
)

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
	Seq    int64     `json:"seq"`    // the head before the prompt: a rewind keeps events ≤ Seq
	Prompt string    `json:"prompt"` // the prompt's text
	Time   time.Time `json:"time"`
	// PromptSeq is the seq of the user_prompt event itself.
	PromptSeq int64 `json:"prompt_seq"`
}

// Texts the model reads for tool calls that have no real result.
const (
	// UnknownOutcome closes a call cut off by a crash, once the user has
	// acknowledged it.
	UnknownOutcome = "The outcome of this tool call is unknown: the agent process stopped while it ran. It was not re-run. The user reviewed it; check the current state (for example read the files involved) before relying on it."
	// NotRun closes a call the model asked for that never started because the
	// turn was interrupted.
	NotRun = "This tool call was not run: the turn was interrupted before it started."
	// CompactedPreamble opens the first message of a compacted transcript,
	// before the summary.
	CompactedPreamble = "This conversation was compacted to fit the model's context window: the messages before this point were replaced by the summary below, written by the model. The full history is still in the session log.\n\n"
)

// State is a session replayed: the fold of its events, applied in seq order.
// Its accessors give the transcript a model needs, the checkpoints and the
// recovery hazards. The zero State is an empty session. State does no I/O
// and keeps no event data it does not need.
type State struct {
	// Summary is the same fold stores keep (head, counts, status, …).
	Summary Summary
	// Usage is the sum of token usage over the log.
	Usage Usage

	messages    []Message
	msgSeq      []int64 // the seq of the event that began each message
	cur         int64   // the seq of the event being applied
	checkpoints []Checkpoint
	hazards     []Hazard // of tools and jobs, in seq order
	jobsStarted int
	// unanswered are tool_use ids of the latest assistant message that have
	// no tool_result yet, in order.
	unanswered []string
	started    map[string]bool // call ids of unanswered that have a tool_started
	// snapped holds the paths snapshotted since the latest checkpoint (a
	// user prompt or a restore).
	snapped map[string]bool
	// slab holds the blocks of assistant messages.
	slab blockSlab
	// context is the latest project context recorded, nil for none.
	context *ProjectContext
	// contextSeq is the seq of that project context.
	contextSeq int64
	// compaction is the latest compaction, compactionSeq its event's seq.
	compaction    *Compaction
	compactionSeq int64
	// lastUsage is the usage of the latest assistant message after the
	// latest compaction.
	lastUsage Usage
	// model is the latest model_changed (model.go).
	model ModelChanged
}

// Replay folds a whole log.
func Replay(events []Event) *State {
	s := &State{}
	for _, e := range events {
		s.Apply(e)
	}
	return s
}

// Apply folds one event into the state. Events whose payload does not decode
// are counted in the summary and otherwise skipped; unknown types are skipped.
// Each payload is decoded once, for both the summary and the state, and only
// the fields replay uses are kept (a snapshot's content is checked, not
// decoded). The tool inputs of the transcript's blocks share e.Data, which
// must not be modified afterwards (see [Event]).
func (s *State) Apply(e Event) {
	s.cur = e.Seq
	switch e.Type {
	case TypeUserPrompt:
		var p UserPrompt
		ok := decodePrompt(e, &p)
		s.Summary.apply(e, &facts{ok: ok, text: p.Text})
		if !ok {
			return
		}
		s.closeUnanswered(NotRun)
		if !p.Background {
			clear(s.snapped)
			// The project context written with a prompt belongs to it:
			// the checkpoint is the head before both.
			cp := e.Seq - 1
			if s.contextSeq == cp && cp > 0 {
				cp--
			}
			s.checkpoints = append(s.checkpoints, Checkpoint{Seq: cp, Prompt: p.Text, Time: e.Time, PromptSeq: e.Seq})
		}
		s.add(RoleUser, Block{Type: BlockText, Text: p.Text})
	case TypeAssistantMessage:
		s.Summary.apply(e, &facts{})
		var p AssistantMessage
		if !decodeMessage(e, &p, &s.slab) {
			return
		}
		s.closeUnanswered(NotRun)
		s.Usage = s.Usage.Add(p.Usage)
		s.lastUsage = p.Usage
		s.push(Message{Role: RoleAssistant, Blocks: p.Blocks})
		for _, b := range p.Blocks {
			if b.Type == BlockToolUse {
				s.unanswered = append(s.unanswered, b.ID)
			}
		}
	case TypeToolStarted:
		var p ToolStarted
		ok := decodeStarted(e, &p)
		s.applyHazard(e, &facts{ok: ok, callID: p.CallID, tool: p.Tool, paths: p.Paths})
		if !ok {
			return
		}
		if s.started == nil {
			s.started = map[string]bool{}
		}
		s.started[p.CallID] = true
	case TypeJobStarted:
		var p JobStarted
		ok := e.Decode(&p) == nil
		f := facts{ok: ok, jobStart: p}
		s.applyHazard(e, &f)
		if f.ok {
			s.jobsStarted++
		}
	case TypeJobFinished:
		var p JobFinished
		ok := e.Decode(&p) == nil
		s.applyHazard(e, &facts{ok: ok, job: p.Job})
	case TypeFileSnapshot:
		s.Summary.apply(e, &facts{})
		var p FileSnapshot
		if !decodeSnapshot(e, &p) {
			return
		}
		if s.snapped == nil {
			s.snapped = map[string]bool{}
		}
		s.snapped[p.Path] = true
	case TypeRestored:
		s.Summary.apply(e, &facts{})
		clear(s.snapped)
	case TypeToolFinished:
		var p ToolFinished
		ok := decodeFinished(e, &p, true)
		s.applyHazard(e, &facts{ok: ok, callID: p.CallID})
		if !ok {
			return
		}
		s.answer(p.CallID, p.Output, p.IsError)
		s.attachImages(e, p.CallID)
	case TypeRecoveryAcknowledged:
		var p RecoveryAcknowledged
		ok := e.Decode(&p) == nil
		s.applyHazard(e, &facts{ok: ok, callIDs: p.CallIDs, tokens: p.Tokens})
		if !ok {
			return
		}
		for _, id := range p.CallIDs {
			s.answer(id, UnknownOutcome, true)
		}
	case TypeTurnInterrupted:
		s.Summary.apply(e, &facts{})
		// Calls that never started will not run; calls that started and did
		// not finish stay open as hazards until acknowledged.
		var keep []string
		for _, id := range s.unanswered {
			if s.started[id] {
				keep = append(keep, id)
				continue
			}
			s.addResult(id, NotRun, true)
		}
		s.unanswered = keep
	case TypeProjectContext:
		s.contextSeq = e.Seq
		s.Summary.Apply(e)
		var p ProjectContext
		if e.Decode(&p) == nil {
			s.context = &p
		}
	case TypeModelChanged:
		s.applyModel(e)
	case TypeCompaction:
		s.Summary.Apply(e)
		var p Compaction
		if e.Decode(&p) != nil {
			return
		}
		s.Usage = s.Usage.Add(p.Usage)
		s.compact(p.ThroughSeq, p.Summary)
		s.compaction, s.compactionSeq, s.lastUsage = &p, e.Seq, Usage{}
	default:
		// session_started, turn_completed and types this version does not
		// know: only the summary reads them.
		s.Summary.Apply(e)
	}
}

// add appends blocks as a message of role, merging into the previous message
// when it has the same role (the APIs want roles to alternate).
func (s *State) add(role string, b Block) {
	if n := len(s.messages); n > 0 && s.messages[n-1].Role == role {
		s.messages[n-1].Blocks = append(s.messages[n-1].Blocks, b)
		return
	}
	s.push(Message{Role: role, Blocks: []Block{b}})
}

// push appends a message begun by the event being applied.
func (s *State) push(m Message) {
	s.messages = append(s.messages, m)
	s.msgSeq = append(s.msgSeq, s.cur)
}

// compact replaces the messages begun at or before through by the summary,
// which opens the first user message.
func (s *State) compact(through int64, summary string) {
	i, _ := slices.BinarySearch(s.msgSeq, through+1)
	tail, tailSeq := s.messages[i:], s.msgSeq[i:]
	first := Message{Role: RoleUser, Blocks: []Block{{Type: BlockText, Text: CompactedPreamble + summary}}}
	if len(tail) > 0 && tail[0].Role == RoleUser {
		first.Blocks = append(first.Blocks, tail[0].Blocks...)
		tail, tailSeq = tail[1:], tailSeq[1:]
	}
	s.messages = append([]Message{first}, tail...)
	s.msgSeq = append([]int64{through}, tailSeq...) // the summary stands for the events through it
	if len(tail) == 0 || tail[len(tail)-1].Role != RoleAssistant {
		// The agent compacts only when every call is answered; calls
		// still open went into the summary, and results that come for
		// them later are not the transcript's any more.
		s.unanswered = nil
		clear(s.started)
	}
}

// MessagesAfter returns the messages of the transcript begun after seq (the
// tail a compaction through seq would keep). The slice is the state's.
func (s *State) MessagesAfter(seq int64) []Message {
	i, _ := slices.BinarySearch(s.msgSeq, seq+1)
	return s.messages[i:]
}

func (s *State) addResult(callID, text string, isErr bool) {
	s.add(RoleUser, Block{Type: BlockToolResult, ToolUseID: callID, Text: text, IsError: isErr})
}

// answer records a result for an unanswered call; results for calls the
// transcript does not expect (already answered) are ignored.
func (s *State) answer(callID, text string, isErr bool) {
	i := slices.Index(s.unanswered, callID)
	if i < 0 {
		return
	}
	s.unanswered = slices.Delete(s.unanswered, i, i+1)
	delete(s.started, callID)
	s.addResult(callID, text, isErr)
}

// closeUnanswered gives every call still unanswered a result before the
// conversation moves on, so the transcript stays valid for the APIs.
func (s *State) closeUnanswered(text string) {
	for _, id := range s.unanswered {
		if s.started[id] {
			s.addResult(id, UnknownOutcome, true)
		} else {
			s.addResult(id, text, true)
		}
	}
	s.unanswered = nil
	clear(s.started)
}

// applyHazard folds e, whose payload gave f, into the summary and the
// hazards: one step, seen whole here and as keys by the summary.
func (s *State) applyHazard(e Event, f *facts) {
	f.step, f.stepped = stepOf(e, f, s.Summary.Parent, true)
	s.Summary.apply(e, f)
	if f.stepped {
		s.hazards = foldHazards(s.hazards, &f.step, sameHazard, sameHazard)
	}
}

func sameHazard(h Hazard) Hazard { return h }

// Transcript returns the messages to send to a model. Tool calls that are
// still unanswered at the end of the log (their tools are running, or a
// crash cut them off) are left without results. The slice is the state's:
// callers must not modify it, and must copy it to keep it past the next Apply.
func (s *State) Transcript() []Message { return s.messages }

// ProjectContext returns the latest project context recorded, nil when the
// log has none.
func (s *State) ProjectContext() *ProjectContext { return s.context }

// Compaction returns the latest compaction and its event's seq; nil and 0
// when the log has none. The transcript starts from it.
func (s *State) Compaction() (*Compaction, int64) { return s.compaction, s.compactionSeq }

// LastUsage returns the usage of the latest model call after the latest
// compaction (the zero Usage when there is none): its InputTokens plus
// OutputTokens is what the context held after that call.
func (s *State) LastUsage() Usage { return s.lastUsage }

// Checkpoints returns one checkpoint per user prompt, oldest first
// (background completion prompts are not checkpoints).
func (s *State) Checkpoints() []Checkpoint { return s.checkpoints }

// Hazards returns the recovery hazards, in seq order: tools started and
// never finished nor acknowledged, and background jobs started (in this
// session, not copied into a fork) and never recorded as ended nor
// acknowledged. A job in the list may be running in a live process; only
// that process can tell. The slice is the state's.
func (s *State) Hazards() []Hazard { return s.hazards }

// JobsStarted returns how many background jobs the log records as started,
// those a fork copied from its parent included.
func (s *State) JobsStarted() int { return s.jobsStarted }

// Pending returns the tool calls of the latest assistant message that never
// started, when the turn has not ended: a crash cut the turn off before (or
// while) they were approved. They should be asked for again, not replayed.
func (s *State) Pending() []string {
	if s.Summary.Status != StatusRunning {
		return nil
	}
	var out []string
	for _, id := range s.unanswered {
		if !s.started[id] {
			out = append(out, id)
		}
	}
	return out
}

// Snapshotted reports whether path was snapshotted since the latest
// checkpoint, in which case a tool changing it needs no new snapshot.
func (s *State) Snapshotted(path string) bool { return s.snapped[path] }

// ReviewToken is the token a user acknowledges an interrupted tool call
// with. It is derived from the call, so it is stable across reads.
func ReviewToken(callID string, seq int64) string {
	var buf [64]byte
	b := append(buf[:0], callID...)
	b = append(b, '@')
	b = strconv.AppendInt(b, seq, 10)
	sum := sha256.Sum256(b)
	var tok [3 + 2*6]byte
	copy(tok[:], "rv-")
	hex.Encode(tok[3:], sum[:6])
	return string(tok[:])
}
