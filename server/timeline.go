package server

import (
	"bytes"
	"context"
	"encoding/json"
	"html/template"
	"time"

	"github.com/lite-agent/lite-agent/session"
	"github.com/lite-agent/lite-agent/tool/diff"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
)

// markdown renders answers. Raw HTML in them is dropped and dangerous
// link schemes are not linked (goldmark's defaults without WithUnsafe).
var markdown = goldmark.New(goldmark.WithExtensions(extension.GFM))

// maxShown caps the tool output and inputs a timeline shows.
const maxShown = 16 << 10

// item is one entry of a session's timeline.
type item struct {
	Kind string // "prompt", "answer", "tool" or "note"
	Seq  int64
	Time time.Time
	Text string
	HTML template.HTML // an answer, rendered

	// Prompts: the checkpoint a rewind to just before it keeps (-1: none).
	Checkpoint int64
	Background bool

	// Tool calls.
	Tool, CallID, Input, Output string
	Diff                        string
	Approval                    string
	Started, Finished           bool
	IsError, Denied, Hazard     bool
	snapshots                   map[string][]byte // path → content before (nil: did not exist)
}

// timeline folds a session's log into what the viewer shows.
type timeline struct {
	Items   []*item
	Head    int64
	Hazards []session.Hazard
	Status  session.Status
	Title   string
}

// buildTimeline reads session id's log and folds it.
func (s *Server) buildTimeline(ctx context.Context, id string) (*timeline, error) {
	st := &session.State{}
	tl := &timeline{}
	calls := map[string]*item{}
	for e, err := range s.store.Read(ctx, id, 1) {
		if err != nil {
			return nil, err
		}
		st.Apply(e)
		tl.add(e, calls)
	}
	cps := map[int64]int64{}
	for _, cp := range st.Checkpoints() {
		cps[cp.PromptSeq] = cp.Seq
	}
	hz := map[string]bool{}
	for _, h := range st.Hazards() {
		hz[h.CallID] = true
	}
	for _, it := range tl.Items {
		switch it.Kind {
		case "prompt":
			it.Checkpoint = -1
			if seq, ok := cps[it.Seq]; ok {
				it.Checkpoint = seq
			}
		case "tool":
			it.Hazard = hz[it.CallID]
			it.Diff = toolDiff(it)
		}
	}
	tl.Head, tl.Hazards, tl.Status, tl.Title = st.Summary.Head, st.Hazards(), st.Summary.Status, st.Summary.Title
	return tl, nil
}

// add folds one event into the timeline.
func (tl *timeline) add(e session.Event, calls map[string]*item) {
	note := func(text string) {
		tl.Items = append(tl.Items, &item{Kind: "note", Seq: e.Seq, Time: e.Time, Text: text})
	}
	switch e.Type {
	case session.TypeUserPrompt:
		var p session.UserPrompt
		if e.Decode(&p) == nil {
			tl.Items = append(tl.Items, &item{Kind: "prompt", Seq: e.Seq, Time: e.Time, Text: p.Text, Background: p.Background})
		}
	case session.TypeAssistantMessage:
		var m session.AssistantMessage
		if e.Decode(&m) != nil {
			return
		}
		for _, b := range m.Blocks {
			switch b.Type {
			case session.BlockText:
				var buf bytes.Buffer
				if markdown.Convert([]byte(b.Text), &buf) != nil {
					buf.Reset()
					template.HTMLEscape(&buf, []byte(b.Text))
				}
				tl.Items = append(tl.Items, &item{Kind: "answer", Seq: e.Seq, Time: e.Time, Text: b.Text, HTML: template.HTML(buf.String())})
			case session.BlockToolUse:
				it := &item{Kind: "tool", Seq: e.Seq, Time: e.Time, Tool: b.Name, CallID: b.ID, Input: clip(pretty(b.Input))}
				it.snapshots = map[string][]byte{}
				calls[b.ID] = it
				tl.Items = append(tl.Items, it)
			}
		}
	case session.TypeToolStarted:
		var p session.ToolStarted
		if e.Decode(&p) == nil {
			if it := calls[p.CallID]; it != nil {
				it.Started, it.Approval = true, p.Approval
			}
		}
	case session.TypeFileSnapshot:
		var p session.FileSnapshot
		if e.Decode(&p) == nil {
			if it := calls[p.CallID]; it != nil {
				if p.Existed {
					it.snapshots[p.Path] = p.Content
				} else {
					it.snapshots[p.Path] = nil
				}
			}
		}
	case session.TypeToolFinished:
		var p session.ToolFinished
		if e.Decode(&p) == nil {
			if it := calls[p.CallID]; it != nil {
				it.Finished, it.Output, it.IsError, it.Denied = true, clip(p.Output), p.IsError, p.Denied
			}
		}
	case session.TypeTurnInterrupted:
		var p session.TurnInterrupted
		if e.Decode(&p) == nil {
			note("Turn interrupted: " + p.Reason)
		}
	case session.TypeRecoveryAcknowledged:
		note("Interrupted tool calls acknowledged after review; they were not re-run.")
	case session.TypeCompaction:
		note("Conversation compacted: the model gets a summary of what came before.")
	case session.TypeRestored:
		note("Files restored.")
	case session.TypeWorkdirChanged:
		note("Workdir changed.")
	}
}

// toolDiff is the change a file tool made, as a unified diff, from its
// input and the snapshot taken before it ran: write (path, content),
// edit (path, old_string, new_string). Other tools show none.
func toolDiff(it *item) string {
	var in struct {
		Path      string  `json:"path"`
		Content   *string `json:"content"`
		OldString *string `json:"old_string"`
		NewString *string `json:"new_string"`
	}
	if json.Unmarshal([]byte(it.Input), &in) != nil || in.Path == "" {
		return ""
	}
	switch {
	case in.Content != nil:
		return clip(diff.Unified(in.Path, string(it.snapshots[in.Path]), *in.Content))
	case in.OldString != nil && in.NewString != nil:
		return clip(diff.Unified(in.Path, *in.OldString, *in.NewString))
	}
	return ""
}

func pretty(raw json.RawMessage) string {
	var buf bytes.Buffer
	if json.Indent(&buf, raw, "", "  ") != nil {
		return string(raw)
	}
	return buf.String()
}

func clip(s string) string {
	if len(s) <= maxShown {
		return s
	}
	return s[:maxShown] + "\n… (cut: the full text is in the session log)"
}
