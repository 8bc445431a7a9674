package anthropic

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/session"
)

// apiVersion is the anthropic-version header: the one the SDK version this
// package is checked against sends (TestHeadersAreTheSDKs).
const apiVersion = "2026-10-21"

// maxLine is the longest line of an event stream read, as the SDK's
// decoder allows.
const maxLine = bufio.MaxScanTokenSize << 9

// maxErrorBody is how much of an error response is read.
const maxErrorBody = 1 << 20

// event is the JSON of a stream event: the union of the fields of the
// events read (message_start, content_block_start, content_block_delta,
// message_delta, message_stop); the others are skipped.
type event struct {
	Type    string `json:"type"`
	Index   int64  `json:"index"`
	Message struct {
		Model string `json:"model"`
		Usage usage  `json:"usage"`
	} `json:"message"`
	ContentBlock struct {
		Type      string `json:"type"`
		Text      string `json:"text"`
		ID        string `json:"id"`
		Name      string `json:"name"`
		Thinking  string `json:"thinking"`
		Signature string `json:"signature"`
		Data      string `json:"data"`
	} `json:"content_block"`
	Delta struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		Thinking    string `json:"thinking"`
		Signature   string `json:"signature"`
		PartialJSON string `json:"partial_json"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage usage `json:"usage"`
}

// usage is the token counts of message_start and message_delta.
// InputTokens is nil when absent (message_delta usually leaves it out).
type usage struct {
	InputTokens              *int64 `json:"input_tokens"`
	OutputTokens             int64  `json:"output_tokens"`
	CacheCreationInputTokens int64  `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64  `json:"cache_read_input_tokens"`
}

// apiError is an error the API answered with: an HTTP status of 400 or
// more with its JSON body, or an error event inside a 200 stream.
type apiError struct {
	status    int         // the HTTP status; 200 for an error event
	header    http.Header // the response's, for an HTTP error only
	typ       string      // error.type
	message   string      // error.message
	requestID string
}

// Error is the status, type and message; explain turns it into the error
// a caller sees.
func (e *apiError) Error() string {
	return fmt.Sprintf("%d %s %s", e.status, e.typ, e.message)
}

// errorBody is the JSON of an error response or event.
type errorBody struct {
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// newAPIError reads an error's JSON; a body that is not JSON leaves the
// type and message empty.
func newAPIError(status int, header http.Header, requestID string, body []byte) *apiError {
	e := &apiError{status: status, header: header, requestID: requestID}
	var eb errorBody
	if json.Unmarshal(body, &eb) == nil {
		e.typ, e.message = eb.Error.Type, eb.Error.Message
	}
	return e
}

// post sends body to the Messages API and returns the response of a 2xx
// or 3xx status; a status of 400 or more is returned as an *apiError.
func (p *Provider) post(ctx context.Context, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json")
	h.Set("Anthropic-Version", apiVersion)
	h.Set("User-Agent", "lite-agent")
	if p.apiKey != "" {
		h.Set("Authorization", "Bearer "+p.apiKey)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode < 400 {
		return resp, nil
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	if err != nil {
		return nil, err
	}
	return nil, newAPIError(resp.StatusCode, resp.Header, resp.Header.Get("request-id"), b)
}

// attempt sends one request and reads its stream to the end.
func (p *Provider) attempt(ctx context.Context, body []byte, model string, emit func(provider.Delta)) (provider.Response, error) {
	resp, err := p.read(ctx, body, emit)
	if err != nil {
		if ctx.Err() != nil {
			return provider.Response{}, ctx.Err()
		}
		return provider.Response{}, p.explain(err, model)
	}
	if ctx.Err() != nil {
		return provider.Response{}, ctx.Err()
	}
	return resp, nil
}

// read posts body and decodes its event stream into a response. The
// stream is read line by line: "event:" names an event, "data:" lines
// carry its JSON, an empty line ends it, and ":" lines are comments. ping
// and nameless events are skipped; an error event ends the stream with an
// *apiError. Each event's JSON is decoded with encoding/json into one small
// struct reused for the stream, not into the SDK's event union, whose
// decoder walks it by reflection (see the package doc).
func (p *Provider) read(ctx context.Context, body []byte, emit func(provider.Delta)) (provider.Response, error) {
	hr, err := p.post(ctx, body)
	if err != nil {
		return provider.Response{}, err
	}
	defer hr.Body.Close()

	d := decoder{emit: emit, byIndex: map[int64]int{}}
	sc := bufio.NewScanner(hr.Body)
	sc.Buffer(nil, maxLine)
	var (
		name string
		data []byte
	)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			if name == "" && len(data) == 0 {
				continue
			}
			if err := d.dispatch(name, data, hr); err != nil {
				return provider.Response{}, err
			}
			name, data = "", data[:0]
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		switch string(field) {
		case "event":
			name = string(value)
		case "data":
			data = append(data, value...)
			data = append(data, '\n')
		}
	}
	if err := sc.Err(); err != nil {
		return provider.Response{}, err
	}
	if !d.stopped {
		// The body ended cleanly but the message did not: a proxy or the
		// server dropped the rest.
		return provider.Response{}, &provider.TransientError{Err: errors.New("anthropic: the response stream ended before the message was complete (the connection was cut); try again")}
	}
	return d.response(), nil
}

// decoder assembles a response from the events of a stream.
type decoder struct {
	emit    func(provider.Delta)
	resp    provider.Response
	blocks  []*session.Block
	bufs    []*strings.Builder // by block: the text, or the tool input JSON
	byIndex map[int64]int      // the server's block index → ours; skipped blocks are absent
	stopped bool
	ev      event
}

// dispatch handles one event of the stream.
func (d *decoder) dispatch(name string, data []byte, hr *http.Response) error {
	data = bytes.TrimSuffix(data, []byte("\n"))
	switch name {
	case "ping", "":
		return nil
	case "error":
		return newAPIError(hr.StatusCode, nil, hr.Header.Get("request-id"), data)
	}
	if len(data) == 0 {
		return nil
	}
	d.ev = event{}
	if err := json.Unmarshal(data, &d.ev); err != nil {
		return fmt.Errorf("decode %s event: %w", name, err)
	}
	d.handle(&d.ev)
	return nil
}

// handle folds one decoded event into the response.
func (d *decoder) handle(ev *event) {
	switch ev.Type {
	case "message_start":
		d.resp.Model = ev.Message.Model
		u := ev.Message.Usage
		d.resp.Usage = session.Usage{
			InputTokens:      value(u.InputTokens) + u.CacheCreationInputTokens + u.CacheReadInputTokens,
			OutputTokens:     u.OutputTokens,
			CacheWriteTokens: u.CacheCreationInputTokens,
			CacheReadTokens:  u.CacheReadInputTokens,
		}
	case "content_block_start":
		cb := &ev.ContentBlock
		switch cb.Type {
		case "text":
			d.add(ev.Index, &session.Block{Type: session.BlockText}, cb.Text)
			if cb.Text != "" {
				d.emit(provider.Delta{Index: len(d.blocks) - 1, Kind: provider.DeltaText, Text: cb.Text})
			}
		case "tool_use":
			d.add(ev.Index, &session.Block{Type: session.BlockToolUse, ID: cb.ID, Name: cb.Name}, "")
			d.emit(provider.Delta{Index: len(d.blocks) - 1, Kind: provider.DeltaToolInput, Name: cb.Name})
		case "thinking":
			d.add(ev.Index, &session.Block{Type: session.BlockThinking, Signature: cb.Signature}, cb.Thinking)
		case "redacted_thinking":
			d.add(ev.Index, &session.Block{Type: session.BlockRedactedThinking, Signature: cb.Signature}, cb.Data)
		default:
			// Server-side tool blocks are not part of a lite-agent
			// transcript.
		}
	case "content_block_delta":
		i, ok := d.byIndex[ev.Index]
		if !ok {
			return
		}
		dl := &ev.Delta
		switch {
		case dl.Type == "text_delta" && d.blocks[i].Type == session.BlockText:
			d.bufs[i].WriteString(dl.Text)
			d.emit(provider.Delta{Index: i, Kind: provider.DeltaText, Text: dl.Text})
		case dl.Type == "thinking_delta" && d.blocks[i].Type == session.BlockThinking:
			d.bufs[i].WriteString(dl.Thinking)
			d.emit(provider.Delta{Index: i, Kind: provider.DeltaThinking, Text: dl.Thinking})
		case dl.Type == "signature_delta" && d.blocks[i].Type == session.BlockThinking:
			d.blocks[i].Signature += dl.Signature
		case dl.Type == "input_json_delta" && d.blocks[i].Type == session.BlockToolUse:
			d.bufs[i].WriteString(dl.PartialJSON)
			if dl.PartialJSON != "" {
				d.emit(provider.Delta{Index: i, Kind: provider.DeltaToolInput, Text: dl.PartialJSON})
			}
		}
	case "message_delta":
		d.resp.StopReason = ev.Delta.StopReason
		u := ev.Usage
		d.resp.Usage.OutputTokens = u.OutputTokens
		if value(u.InputTokens) > 0 {
			d.resp.Usage.InputTokens = *u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
			d.resp.Usage.CacheWriteTokens, d.resp.Usage.CacheReadTokens = u.CacheCreationInputTokens, u.CacheReadInputTokens
		}
	case "message_stop":
		d.stopped = true
	}
}

// add starts block b at the server's index i, its text (or input) so far
// text.
func (d *decoder) add(i int64, b *session.Block, text string) {
	d.byIndex[i] = len(d.blocks)
	d.blocks = append(d.blocks, b)
	sb := &strings.Builder{}
	sb.WriteString(text)
	d.bufs = append(d.bufs, sb)
}

// response is the assembled response, its blocks' text and inputs set.
func (d *decoder) response() provider.Response {
	resp := d.resp
	resp.Blocks = make([]session.Block, len(d.blocks))
	for i, b := range d.blocks {
		if b.Type == session.BlockToolUse {
			b.Input = toolInput(d.bufs[i].String())
		} else {
			b.Text = d.bufs[i].String()
		}
		resp.Blocks[i] = *b
	}
	return resp
}

// value is *n, or 0 for nil.
func value(n *int64) int64 {
	if n == nil {
		return 0
	}
	return *n
}
