package jsonl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/lite-agent/lite-agent/checkpoint"
)

// header is the first line of a stream (see the package documentation).
type header struct {
	Session  string `json:"session"`
	Head     int64  `json:"head"`
	Events   int64  `json:"events"`
	Salvaged bool   `json:"salvaged,omitempty"`
	Damage   string `json:"damage,omitempty"`
}

// headerLine is the header line's envelope.
type headerLine struct {
	V      int     `json:"v"`
	Export *header `json:"export"`
}

// appendHeader appends h's line to b.
func appendHeader(b []byte, h header) ([]byte, error) {
	line, err := json.Marshal(headerLine{V: 1, Export: &h})
	if err != nil {
		return b, err
	}
	return append(append(b, line...), '\n'), nil
}

// parseHeader decodes line as a header; nil (and no error) when line is not
// one (an event line of a stream without a header).
func parseHeader(line []byte) (*header, error) {
	var probe struct {
		Export json.RawMessage `json:"export"`
	}
	if json.Unmarshal(line, &probe) != nil || probe.Export == nil {
		return nil, nil // not a header; parseLine says what is wrong, if anything
	}
	var hl headerLine
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&hl); err != nil || hl.Export == nil {
		return nil, fmt.Errorf("a malformed export header (%v)", err)
	}
	h := hl.Export
	switch {
	case hl.V != 1:
		return nil, fmt.Errorf("export header version %d; this build reads version 1: upgrade lite-agent", hl.V)
	case h.Session == "":
		return nil, errors.New(`the export header names no "session"`)
	case h.Events < 0 || h.Head < 0 || (!h.Salvaged && h.Events != h.Head) || h.Events > h.Head:
		return nil, fmt.Errorf("the export header's counts do not add up (%d events of a log with head %d)", h.Events, h.Head)
	}
	return h, nil
}

// Salvaged describes what Salvage wrote.
type Salvaged struct {
	// Events is the number of events written: seqs 1 to Events, each
	// verified by the store.
	Events int64
	// Head is the head the store recorded for the session.
	Head int64
	// Damage is the store's report of the first event that did not
	// verify; nil when the whole log verified (and the stream is an
	// ordinary export).
	Damage *checkpoint.CorruptError
}

// Salvage writes to w the part of the log of session id that verifies:
// every event before the first one the store reports damaged (a
// *checkpoint.CorruptError), with a header that marks the stream as
// salvaged and says what was wrong, so that Import creates a session of
// those events. The log is read twice (once to find how far it verifies,
// once to write it) and nothing is held in memory. A log that verifies
// whole is exported as Export would. Errors other than damage (an unknown
// session, a failing store) are returned as they are, and so is damage at
// seq 1: there is nothing to salvage.
func Salvage(ctx context.Context, c checkpoint.Checkpointer, id string, w io.Writer) (Salvaged, error) {
	sum, err := c.Head(ctx, id)
	if err != nil {
		return Salvaged{}, fmt.Errorf("salvage %s: %w", id, err)
	}
	var out Salvaged
	out.Head = sum.Head
	for _, err := range c.Read(ctx, id, 1) {
		if err != nil {
			ce, ok := checkpoint.IsCorrupt(err)
			if !ok {
				return Salvaged{}, fmt.Errorf("salvage %s: %w", id, err)
			}
			out.Damage = ce
			break
		}
		out.Events++
	}
	if out.Events == 0 {
		return out, fmt.Errorf("salvage %s: nothing verifies: %w", id, out.Damage)
	}
	h := header{Session: id, Head: max(out.Head, out.Events), Events: out.Events}
	if out.Damage != nil {
		h.Salvaged, h.Damage = true, out.Damage.Error()
	} else {
		h.Head = out.Events
	}
	if err := write(ctx, c, id, w, h); err != nil {
		return out, fmt.Errorf("salvage: %w", err)
	}
	return out, nil
}
