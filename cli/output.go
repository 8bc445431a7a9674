package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/session"
)

// OutputVersion is the version of the --output json and stream-json
// schema. Every line carries it; it goes up when a field changes meaning or
// goes away, never for a field added. The README's "Output" section
// documents every line type.
const OutputVersion = 1

// deltaLine is a piece of the model's answer as it streams.
type deltaLine struct {
	Type    string `json:"type"` // "delta"
	Version int    `json:"version"`
	Session string `json:"session"`
	Index   int    `json:"index"` // the content block it belongs to
	Kind    string `json:"kind"`  // "text" or "tool_input"
	Text    string `json:"text"`  // text, or a fragment of a tool call's JSON input
	Name    string `json:"name,omitempty"`
}

// eventLine is an event just appended to the session log, in the log's own
// encoding (seq, type, time, data).
type eventLine struct {
	Type    string         `json:"type"` // "event"
	Version int            `json:"version"`
	Session string         `json:"session"`
	Event   *session.Event `json:"event"`
}

// resultLine ends a turn: the whole --output json output, and the last
// line of a stream-json turn.
type resultLine struct {
	Type       string         `json:"type"` // "result"
	Version    int            `json:"version"`
	Session    string         `json:"session,omitempty"`
	IsError    bool           `json:"is_error"`
	Text       string         `json:"text"`
	StopReason string         `json:"stop_reason,omitempty"`
	Usage      *session.Usage `json:"usage,omitempty"`
	ModelCalls int            `json:"model_calls"`
	Revision   int64          `json:"revision"`
	Error      string         `json:"error,omitempty"`
	Background bool           `json:"background,omitempty"` // a completion turn a background job started
}

// writeLine prints v as one line of JSON.
func writeLine(w io.Writer, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]any{"type": "error", "version": OutputVersion, "error": err.Error()})
	}
	fmt.Fprintf(w, "%s\n", b)
}

// streamLine prints one update as a stream-json line.
func streamLine(w io.Writer, u Update) {
	if u.Delta != nil {
		writeLine(w, deltaLine{Type: "delta", Version: OutputVersion, Session: u.Session,
			Index: u.Delta.Index, Kind: u.Delta.Kind, Text: u.Delta.Text, Name: u.Delta.Name})
		return
	}
	writeLine(w, eventLine{Type: "event", Version: OutputVersion, Session: u.Session, Event: u.Event})
}

// newResultLine is the result line of a turn that returned res and err.
func newResultLine(res *liteagent.Result, err error) resultLine {
	out := resultLine{Type: "result", Version: OutputVersion, IsError: err != nil}
	if res != nil {
		usage := res.Usage
		out.Session, out.Text, out.StopReason, out.Usage = res.Session, res.Text, res.StopReason, &usage
		out.ModelCalls, out.Revision = res.ModelCalls, res.Head
	}
	if err != nil {
		out.Error = oneLine(err.Error())
	}
	return out
}

// errEmptyAnswer is a turn whose last model message had no text and no
// tool call: nothing was answered, so a script must not take it for one.
var errEmptyAnswer = errors.New("warning: the model returned an empty answer (no text and no tool call); nothing was answered — try again, or check the model and --base-url")

// errNoAnswerer is an approval the line mode could not ask: its input
// ended. The run stops with it rather than carry on as if denied.
var errNoAnswerer = errors.New("standard input ended before a tool call could be approved; answer on stdin, or run one-shot with --allow edit, bash or all")

// checkAnswer turns an empty answer into errEmptyAnswer.
func checkAnswer(res *liteagent.Result, err error) error {
	if err == nil && res != nil && res.Text == "" {
		return errEmptyAnswer
	}
	return err
}
