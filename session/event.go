package session

import (
	"encoding/json"
	"fmt"
	"time"
)

// Version is the envelope format version written by this build.
const Version = 1

// Type names the kind of an event. Unknown types are preserved as they are.
type Type string

// The event types of this version. The flow of one turn is:
// user_prompt → assistant_message → (tool_started → file_snapshot* →
// tool_finished)* → … → turn_completed.
const (
	TypeSessionStarted       Type = "session_started"
	TypeUserPrompt           Type = "user_prompt"
	TypeAssistantMessage     Type = "assistant_message"
	TypeToolStarted          Type = "tool_started"
	TypeFileSnapshot         Type = "file_snapshot"
	TypeToolFinished         Type = "tool_finished"
	TypeTurnCompleted        Type = "turn_completed"
	TypeTurnInterrupted      Type = "turn_interrupted"
	TypeRecoveryAcknowledged Type = "recovery_acknowledged"
	TypeRestored             Type = "restored"
	// TypeProjectContext records the project context (environment and
	// instruction files) the system prompt carried from the first prompt
	// on; it is written with that prompt and replayed, never re-read.
	TypeProjectContext Type = "project_context"
	// TypeCompaction replaces the transcript up to a seq by a summary.
	TypeCompaction Type = "compaction"
)

// Event is one entry of a session log. Seq is assigned by the store when the
// event is appended; Data holds the type's payload as JSON and is owned by
// the event (callers that keep it beyond the event's life must not modify it).
type Event struct {
	Seq  int64           `json:"seq"`
	Type Type            `json:"type"`
	Time time.Time       `json:"time"`
	Data json.RawMessage `json:"data,omitempty"`
}

// New builds an event of type t with payload p encoded as JSON. Seq is left
// zero for the store to assign. The time is now, in UTC, to the microsecond,
// so that it survives every backend unchanged.
func New(t Type, p any) (Event, error) {
	data, err := json.Marshal(p)
	if err != nil {
		return Event{}, fmt.Errorf("encode %s event: %w", t, err)
	}
	return Event{Type: t, Time: Now(), Data: data}, nil
}

// MustNew is New for payloads that cannot fail to encode (the types of this
// package). It panics on an encoding error, which is a programming error.
func MustNew(t Type, p any) Event {
	e, err := New(t, p)
	if err != nil {
		panic(err)
	}
	return e
}

// Now returns the current time as events record it: UTC, truncated to the
// microsecond (the precision every backend keeps).
func Now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// Decode decodes the event's payload into p.
func (e Event) Decode(p any) error {
	if len(e.Data) == 0 {
		return fmt.Errorf("decode %s event %d: no data", e.Type, e.Seq)
	}
	if err := json.Unmarshal(e.Data, p); err != nil {
		return fmt.Errorf("decode %s event %d: %w", e.Type, e.Seq, err)
	}
	return nil
}

// Known reports whether this version knows the event's type.
func (e Event) Known() bool {
	switch e.Type {
	case TypeSessionStarted, TypeUserPrompt, TypeAssistantMessage, TypeToolStarted,
		TypeFileSnapshot, TypeToolFinished, TypeTurnCompleted, TypeTurnInterrupted,
		TypeRecoveryAcknowledged, TypeRestored, TypeProjectContext, TypeCompaction,
		TypeTaskListCreated, TypeTasksUpdated, TypeJobStarted, TypeJobFinished,
		TypeWorkdirChanged, TypeRestoreStarted, TypePermissionDecided, TypeSessionTitled,
		TypeModelChanged, TypeEventLost:
		return true
	}
	return false
}

// SessionStarted is always the first event of a log. It fixes the session's
// namespace, which stores use to group sessions for listing.
type SessionStarted struct {
	ID        string `json:"id"`
	Kind      string `json:"kind,omitempty"` // "" for a conversation; "tasklist" for a task list log
	Namespace string `json:"namespace"`
	Workdir   string `json:"workdir,omitempty"`
	Provider  string `json:"provider,omitempty"`
	Model     string `json:"model,omitempty"`
	// Parent is set when the session was forked from another one.
	Parent *ForkRef `json:"parent,omitempty"`
	// Imported is set when the log was imported from an export stream.
	Imported *Import `json:"imported,omitempty"`
}

// ForkRef names the point of another session a fork was taken from.
type ForkRef struct {
	Session string `json:"session"`
	Seq     int64  `json:"seq"`
}

// UserPrompt is a prompt the user sent. Its event is a checkpoint: the log
// can be rewound to the head just before it.
type UserPrompt struct {
	Text string `json:"text"`
	// Background marks a prompt the agent wrote itself to start a background
	// completion turn (for example when a background job finished).
	Background bool `json:"background,omitempty"`
}

// AssistantMessage is one complete message from the model. Streaming deltas
// are never persisted; only whole blocks are.
type AssistantMessage struct {
	Blocks     []Block `json:"blocks"`
	StopReason string  `json:"stop_reason,omitempty"`
	Usage      Usage   `json:"usage,omitzero"`
	Model      string  `json:"model,omitempty"`
}

// Block is one content block of a message: text, a tool call (in assistant
// messages) or a tool result (in user messages of a transcript).
type Block struct {
	Type string `json:"type"` // BlockText, BlockToolUse or BlockToolResult
	// Text is the text of a text block, or the content of a tool result.
	Text string `json:"text,omitempty"`
	// Tool call fields.
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
	// Tool result fields.
	ToolUseID string `json:"tool_use_id,omitempty"`
	IsError   bool   `json:"is_error,omitempty"`
	// Images are the images a tool result carries beside its Text.
	Images []Image `json:"images,omitempty"`
	// Signature is the provider's signature of a thinking block (whose
	// Text is the thinking, or a redacted block's data); it is sent back
	// unchanged, as the API requires during tool use.
	Signature string `json:"signature,omitempty"`
}

// Block types.
const (
	BlockText       = "text"
	BlockToolUse    = "tool_use"
	BlockToolResult = "tool_result"
	// BlockThinking is the model's extended thinking (Anthropic), kept
	// with its signature so it can be sent back.
	BlockThinking = "thinking"
	// BlockRedactedThinking is thinking the provider encrypted: Text holds
	// its opaque data.
	BlockRedactedThinking = "redacted_thinking"
)

// Usage counts tokens of one model call or of a turn. InputTokens counts
// every input token; CacheWriteTokens and CacheReadTokens are the parts of
// it written to and read from the provider's prompt cache.
type Usage struct {
	InputTokens      int64 `json:"input_tokens,omitempty"`
	OutputTokens     int64 `json:"output_tokens,omitempty"`
	CacheWriteTokens int64 `json:"cache_write_tokens,omitempty"`
	CacheReadTokens  int64 `json:"cache_read_tokens,omitempty"`
}

// Add returns the sum of two usages.
func (u Usage) Add(o Usage) Usage {
	return Usage{
		InputTokens: u.InputTokens + o.InputTokens, OutputTokens: u.OutputTokens + o.OutputTokens,
		CacheWriteTokens: u.CacheWriteTokens + o.CacheWriteTokens, CacheReadTokens: u.CacheReadTokens + o.CacheReadTokens,
	}
}

// Uncached returns the input tokens neither written to nor read from the
// cache.
func (u Usage) Uncached() int64 { return u.InputTokens - u.CacheWriteTokens - u.CacheReadTokens }

// ToolStarted is the durable intent to run a tool, written before it runs.
// A ToolStarted with no matching ToolFinished is a recovery hazard.
type ToolStarted struct {
	CallID string          `json:"call_id"`
	Tool   string          `json:"tool"`
	Input  json.RawMessage `json:"input,omitempty"`
	// Paths are the files the tool is about to touch, where known.
	Paths []string `json:"paths,omitempty"`
	// Approval records how the call was approved ("auto", "once",
	// "session", or "rule" when a permission rule allowed it).
	Approval string `json:"approval,omitempty"`
	// Sandbox is the sandbox a shell command ran in ("workspace-write",
	// "read-only", "off"; "" for tools that run no command).
	Sandbox string `json:"sandbox,omitempty"`
}

// FileSnapshot records a file as it was before a tool first changed it after
// the latest checkpoint. Restore writes these back.
type FileSnapshot struct {
	CallID  string `json:"call_id"`
	Path    string `json:"path"` // relative to the workdir, slash-separated
	Existed bool   `json:"existed"`
	Mode    uint32 `json:"mode,omitempty"`
	Content []byte `json:"content,omitempty"`
	Digest  string `json:"digest,omitempty"` // sha256 of Content, hex
}

// ToolFinished is the receipt of a tool call: its output as the model sees
// it, and the digests of the files it left on disk.
type ToolFinished struct {
	CallID  string `json:"call_id"`
	Tool    string `json:"tool,omitempty"`
	Output  string `json:"output"`
	IsError bool   `json:"is_error,omitempty"`
	// Images are images the tool returned beside Output (MCP tools).
	Images []Image `json:"images,omitempty"`
	// Denied is set when the user (or policy) refused the call; it never ran.
	Denied bool `json:"denied,omitempty"`
	// Files maps each path the tool wrote to the sha256 (hex) of what it left
	// there, "" where it left no file.
	Files map[string]string `json:"files,omitempty"`
	// Untracked is set when the tool may have changed files it cannot name
	// (a shell command); restore lists such calls as not undoable.
	Untracked bool `json:"untracked,omitempty"`
}

// TurnCompleted ends a turn in which the model stopped by itself.
type TurnCompleted struct {
	StopReason string `json:"stop_reason,omitempty"`
	Usage      Usage  `json:"usage,omitzero"`
}

// TurnInterrupted ends a turn that was cancelled or failed.
type TurnInterrupted struct {
	Reason string `json:"reason"`
}

// RecoveryAcknowledged records that the user reviewed interrupted tool
// outcomes. Their calls are then closed in the transcript with an outcome
// the model is told is unknown; the tools are not re-run.
type RecoveryAcknowledged struct {
	Tokens  []string `json:"tokens"`
	CallIDs []string `json:"call_ids"`
}

// Restored records that a restore put files back to checkpoint ToSeq of
// session Session. It ends the fork that keeps the log as it was before the
// restore: after the old log come snapshots of the files as the restore
// found them, then this event, so restoring the fork to the old head undoes
// the restore.
type Restored struct {
	Session string `json:"session,omitempty"`
	ToSeq   int64  `json:"to_seq"`
	Fork    string `json:"fork,omitempty"`
	// Files maps each path the restore wrote to the sha256 (hex) of what it
	// left there, "" where it removed the file.
	Files map[string]string `json:"files,omitempty"`
	// NotUndone lists tool calls whose effects restore could not undo.
	NotUndone []string `json:"not_undone,omitempty"`
}

// ProjectContext is the project context a session's system prompt carries:
// the text added after the agent's own prompt, and the instruction files it
// was read from.
type ProjectContext struct {
	Text  string        `json:"text"`
	Files []ContextFile `json:"files,omitempty"`
}

// ContextFile is an instruction file read into a project context.
type ContextFile struct {
	Path  string `json:"path"`
	Scope string `json:"scope"` // ScopeUser or ScopeProject
	Bytes int64  `json:"bytes"` // the file's size on disk
	// Cut is set when only the first part of the file was kept.
	Cut bool `json:"cut,omitempty"`
}

// Scopes of instruction files.
const (
	ScopeUser    = "user"
	ScopeProject = "project"
)

// Compaction replaces the transcript of every event up to and including
// ThroughSeq by Summary, which the model wrote. Replay then gives the model
// the summary as the conversation's first user message, followed by the
// messages begun after ThroughSeq (the tail: the turn that was running, or
// the last one) and the events after this one. The events it summarises stay in the log, so a
// fork or restore to before it sees them whole.
type Compaction struct {
	ThroughSeq int64  `json:"through_seq"`
	Summary    string `json:"summary"`
	// Focus is what the user asked the summary to keep (/compact FOCUS).
	Focus string `json:"focus,omitempty"`
	// Auto is set when the agent compacted because the context was full.
	Auto bool `json:"auto,omitempty"`
	// Tokens is the estimated size of the transcript it replaced.
	Tokens int64 `json:"tokens,omitempty"`
	// Usage is what the summary request cost.
	Usage Usage `json:"usage,omitzero"`
}
