package tui

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/session"
)

// kind is what an entry of the transcript shows.
type kind int

const (
	kindUser      kind = iota // a prompt
	kindAssistant             // the model's text, Markdown
	kindTool                  // a tool call and its outcome
	kindNotice                // a line from the client (loaded, rewound, …)
	kindError                 // a failure the user should read
	kindThinking              // the model's extended thinking, shown dimmed
)

// toolState is where a tool call stands.
type toolState int

const (
	toolRequested toolState = iota // the model asked for it
	toolAsking                     // waiting for the user's approval
	toolRunning                    // started
	toolDone                       // finished
	toolFailed                     // finished with an error
	toolDenied                     // the user said no
	toolUnknown                    // cut off by a crash: outcome unknown
	toolNotRun                     // the turn ended before it started
)

// toolCall is a tool call as the transcript shows it.
type toolCall struct {
	id, name string
	input    json.RawMessage
	state    toolState
	output   string
	approval string // "auto", "once", "session"
	diff     string // the change its approval request showed (unified)
}

// entry is one block of the transcript. Entries are created and changed
// only on the UI goroutine; version counts changes, so a cached rendering
// is valid while width and version match.
type entry struct {
	kind    kind
	text    string // prompt, answer (Markdown) or notice
	tool    *toolCall
	version int

	live  bool // the answer being streamed
	async bool // its Markdown is rendered off the UI goroutine (it was streamed)

	// lines caches the rendering at linesWidth, linesVersion.
	lines        []string
	linesWidth   int
	linesVersion int
	provisional  bool // lines are plain text standing in for Markdown

	md mdState
}

func (e *entry) touch() { e.version++ }

// transcript is the fold of a session's events (and of the streaming
// deltas of the answer in progress) into entries. It does no I/O, so a
// loaded session's transcript can be built off the UI goroutine.
type transcript struct {
	entries  []*entry
	byCall   map[string]*entry
	open     []*entry // tool calls not finished yet
	live     *entry   // the answer being streamed, nil between messages
	thinking *entry   // the thinking being streamed, nil between messages

	session string
	model   string
	running bool // a turn started and has not ended
	bgTurn  bool // … and the agent started it itself (a background completion turn)
	head    int64
	usage   session.Usage
	last    session.Usage // the latest model call's, reset by a compaction (the status line's context share)
	prompts []string      // the session's prompts, oldest first (input history)
}

func newTranscript() *transcript {
	return &transcript{byCall: map[string]*entry{}}
}

func (t *transcript) add(e *entry) *entry {
	t.entries = append(t.entries, e)
	return e
}

// notice adds a line from the client.
func (t *transcript) notice(text string) { t.add(&entry{kind: kindNotice, text: text}) }

// fail adds an error the user should read.
func (t *transcript) fail(text string) { t.add(&entry{kind: kindError, text: text}) }

// delta applies a streaming piece of the model's answer.
func (t *transcript) delta(d provider.Delta) *entry {
	if d.Kind == provider.DeltaThinking {
		if t.thinking == nil {
			t.thinking = t.add(&entry{kind: kindThinking})
		}
		t.thinking.text += d.Text
		t.thinking.touch()
		return nil // plain text: no Markdown to render
	}
	if d.Kind != provider.DeltaText {
		return nil // tool inputs are shown once the message is complete
	}
	if t.live == nil {
		t.live = t.add(&entry{kind: kindAssistant, live: true, async: true})
	}
	t.live.text += d.Text
	t.live.touch()
	return t.live
}

// apply folds one persisted event. It returns the entry whose Markdown
// must be rendered again, if any.
func (t *transcript) apply(e session.Event) *entry {
	if e.Seq > t.head {
		t.head = e.Seq
	}
	switch e.Type {
	case session.TypeSessionStarted:
		var p session.SessionStarted
		if e.Decode(&p) == nil {
			t.session, t.model = p.ID, p.Model
			if p.Parent != nil {
				t.notice("forked from session " + p.Parent.Session + " at revision " + itoa(p.Parent.Seq))
			}
		}
	case session.TypeUserPrompt:
		var p session.UserPrompt
		if e.Decode(&p) != nil {
			return nil
		}
		t.closeRequested(toolNotRun)
		t.running, t.bgTurn = true, p.Background
		if p.Background {
			t.notice("background: " + p.Text)
			return nil
		}
		t.prompts = append(t.prompts, p.Text)
		t.add(&entry{kind: kindUser, text: p.Text})
	case session.TypeAssistantMessage:
		var p session.AssistantMessage
		if e.Decode(&p) != nil {
			return nil
		}
		t.usage, t.last = t.usage.Add(p.Usage), p.Usage
		if p.Model != "" {
			t.model = p.Model
		}
		return t.message(p.Blocks)
	case session.TypeToolStarted:
		var p session.ToolStarted
		if e.Decode(&p) != nil {
			return nil
		}
		c := t.call(p.CallID, p.Tool, p.Input)
		c.tool.state, c.tool.approval = toolRunning, p.Approval
		c.touch()
	case session.TypeToolFinished:
		var p session.ToolFinished
		if e.Decode(&p) != nil {
			return nil
		}
		c := t.call(p.CallID, p.Tool, nil)
		c.tool.output = p.Output
		switch {
		case p.Denied:
			c.tool.state = toolDenied
		case p.IsError:
			c.tool.state = toolFailed
		default:
			c.tool.state = toolDone
		}
		t.closed(c)
		c.touch()
	case session.TypeRecoveryAcknowledged:
		var p session.RecoveryAcknowledged
		if e.Decode(&p) != nil {
			return nil
		}
		for _, id := range p.CallIDs {
			if c, ok := t.byCall[id]; ok {
				c.tool.state = toolUnknown
				t.closed(c)
				c.touch()
			}
		}
		t.notice("acknowledged " + itoa(int64(len(p.CallIDs))) + " interrupted tool call(s): the model is told their outcome is unknown; they were not re-run")
	case session.TypeCompaction:
		var p session.Compaction
		if e.Decode(&p) == nil {
			t.usage, t.last = t.usage.Add(p.Usage), session.Usage{}
			t.notice(fmt.Sprintf("compacted: the model is now sent a summary of revisions 1 to %d and what follows (the log keeps everything)", p.ThroughSeq))
		}
	case session.TypeTurnInterrupted:
		var p session.TurnInterrupted
		_ = e.Decode(&p)
		t.endLive()
		t.closeRequested(toolNotRun)
		t.running = false
		t.notice("turn interrupted: " + oneLine(p.Reason))
	case session.TypeTurnCompleted:
		t.endLive()
		t.running = false
	case session.TypeJobStarted:
		var p session.JobStarted
		if e.Decode(&p) == nil {
			t.notice("background job " + p.Job + " started: " + short(p.Command, 200))
		}
	case session.TypeJobFinished:
		var p session.JobFinished
		if e.Decode(&p) == nil {
			how := "exited with " + itoa(int64(p.ExitCode))
			switch {
			case p.Stopped != "":
				how = "stopped: " + p.Stopped
			case p.Signal != "":
				how = "ended by " + p.Signal
			}
			t.notice("background job " + p.Job + " " + how)
		}
	case session.TypeRestored:
		var p session.Restored
		if e.Decode(&p) == nil {
			t.notice("this log was kept by a restore of " + p.Session + " to revision " + itoa(p.ToSeq))
		}
	}
	return nil
}

// message replaces the streamed answer with the complete message: its
// text blocks, then a block per tool call.
func (t *transcript) message(blocks []session.Block) *entry {
	var text, thought strings.Builder
	for _, b := range blocks {
		switch b.Type {
		case session.BlockText:
			text.WriteString(b.Text)
		case session.BlockThinking:
			thought.WriteString(b.Text)
		}
	}
	switch {
	case t.thinking != nil:
		t.thinking.text = thought.String()
		t.thinking.touch()
		t.thinking = nil
	case thought.Len() > 0:
		t.add(&entry{kind: kindThinking, text: thought.String()})
	}
	var md *entry
	switch {
	case t.live != nil:
		md = t.live
		md.live = false
		if s := text.String(); s != md.text {
			md.text = s
			md.touch()
		}
		if md.text == "" {
			t.remove(md)
			md = nil
		}
		t.live = nil
	case strings.TrimSpace(text.String()) != "":
		md = t.add(&entry{kind: kindAssistant, text: text.String()})
	}
	for _, b := range blocks {
		if b.Type == session.BlockToolUse {
			c := t.call(b.ID, b.Name, b.Input)
			if c.tool.input == nil {
				c.tool.input = b.Input
				c.touch()
			}
		}
	}
	return md
}

// call returns the entry of call id, adding it if it is new.
func (t *transcript) call(id, name string, input json.RawMessage) *entry {
	if c, ok := t.byCall[id]; ok {
		if c.tool.name == "" {
			c.tool.name = name
		}
		return c
	}
	c := t.add(&entry{kind: kindTool, tool: &toolCall{id: id, name: name, input: input}})
	t.byCall[id] = c
	t.open = append(t.open, c)
	return c
}

// closeRequested marks calls that never started as such once the
// conversation moved on.
func (t *transcript) closeRequested(s toolState) {
	keep := t.open[:0]
	for _, c := range t.open {
		if c.tool.state == toolRequested || c.tool.state == toolAsking {
			c.tool.state = s
			c.touch()
			continue
		}
		keep = append(keep, c)
	}
	clear(t.open[len(keep):])
	t.open = keep
}

// closed drops a finished call from the open ones.
func (t *transcript) closed(c *entry) {
	for i, x := range t.open {
		if x == c {
			t.open = append(t.open[:i], t.open[i+1:]...)
			return
		}
	}
}

// endLive drops a streamed answer whose message never completed (the
// stream was cancelled): its text stays, marked as cut off.
func (t *transcript) endLive() {
	t.thinking = nil // a cut-off thinking stays as it streamed
	if t.live == nil {
		return
	}
	t.live.live = false
	t.live.text += "\n\n*(cut off)*"
	t.live.touch()
	t.live = nil
}

// settle marks, after a loaded log was folded, tool calls that started and
// never finished: a crash cut them off.
func (t *transcript) settle() {
	for _, c := range t.open {
		if c.tool.state == toolRunning {
			c.tool.state = toolUnknown
			c.touch()
		}
	}
	if t.live != nil {
		t.endLive()
	}
}

func (t *transcript) remove(e *entry) {
	for i, x := range t.entries {
		if x == e {
			t.entries = append(t.entries[:i], t.entries[i+1:]...)
			return
		}
	}
}

// mdState is the Markdown rendering of an answer, done off the UI
// goroutine for the answer being streamed.
type mdState struct {
	lines    []string
	width    int
	version  int
	inflight bool      // a render is running
	ticking  bool      // a render is scheduled
	started  time.Time // when the last render started
}
