// Package jsonl moves session logs between checkpoint stores as JSON Lines:
// Export writes one session's log, one event per line, and Import appends
// such a stream to a store as a new session. Together they copy a session
// from any backend to any other (SQLite to PostgreSQL, a server to a file),
// and the stream is a readable, greppable archive of a session.
//
// # Format
//
// Every line is one event in the envelope of package session, with the
// fields in this order and nothing else on the line:
//
//	{"v":1,"seq":1,"type":"session_started","time":"2026-11-30T22:10:00.123456Z","data":{...}}
//
// v is the envelope version (session.Version); seq counts 1, 2, 3 … with no
// gaps; time is RFC 3339 in UTC with up to nanosecond precision; data is
// the event's payload exactly as stored, byte for byte. An event without
// data has no data field. Data that is not JSON on one line (invalid JSON,
// or JSON spread over several lines) is written base64-encoded as "data64"
// instead, so it too comes back byte for byte. Lines end with "\n"; Import
// also accepts "\r\n" and skips blank lines.
//
// The first event is session_started; its payload's "id" names the session,
// and Import creates the session under that id.
package jsonl

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
)

// ErrFormat is wrapped by Import's errors for input that is not a valid
// stream: a malformed line, a gap in seqs, a first event that is not
// session_started. The message names the line.
var ErrFormat = errors.New("malformed session stream")

// envelope is one line as Import reads it.
type envelope struct {
	V      *int            `json:"v"`
	Seq    *int64          `json:"seq"`
	Type   session.Type    `json:"type"`
	Time   *time.Time      `json:"time"`
	Data   json.RawMessage `json:"data"`
	Data64 *string         `json:"data64"`
}

// Export writes the log of session id in c to w, one event per line. It
// reads the log as it writes (a large log is never held in memory) and
// returns the first error of either; an unknown session is
// checkpoint.ErrNotFound and writes nothing.
func Export(ctx context.Context, c checkpoint.Checkpointer, id string, w io.Writer) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	var line []byte
	for e, err := range c.Read(ctx, id, 1) {
		if err != nil {
			return fmt.Errorf("export %s: %w", id, err)
		}
		line = appendLine(line[:0], e)
		if _, err := bw.Write(line); err != nil {
			return fmt.Errorf("export %s: write: %w", id, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("export %s: write: %w", id, err)
	}
	return nil
}

// appendLine appends e's line to b.
func appendLine(b []byte, e session.Event) []byte {
	b = append(b, `{"v":`...)
	b = strconv.AppendInt(b, session.Version, 10)
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, e.Seq, 10)
	b = append(b, `,"type":`...)
	b = appendString(b, string(e.Type))
	b = append(b, `,"time":"`...)
	b = e.Time.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, '"')
	switch {
	case len(e.Data) == 0:
	case inline(e.Data):
		b = append(b, `,"data":`...)
		b = append(b, e.Data...)
	default:
		b = append(b, `,"data64":"`...)
		b = base64.StdEncoding.AppendEncode(b, e.Data)
		b = append(b, '"')
	}
	return append(b, "}\n"...)
}

// inline reports whether data can be written as the data field's value and
// read back byte for byte: one JSON value on one line, with no white space
// around it (a decoder drops that).
func inline(data []byte) bool {
	return json.Valid(data) && !bytes.ContainsAny(data, "\r\n") &&
		len(bytes.TrimSpace(data)) == len(data)
}

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always encodes
	return append(b, q...)
}

// Import reads a stream written by Export from r and appends it to c as a
// new session, in one Append, under the id its session_started event names.
// It returns that id.
//
// The whole stream is checked before anything is written: a malformed line
// is an error wrapping ErrFormat that names the line number, and nothing is
// appended. If c already has a session with that id, the error is the
// store's *checkpoint.ConflictError and nothing is appended; delete the old
// session first or import into another store.
func Import(ctx context.Context, c checkpoint.Checkpointer, r io.Reader) (id string, err error) {
	events, id, err := decode(r)
	if err != nil {
		return "", fmt.Errorf("import: %w", err)
	}
	if _, err := c.Append(ctx, id, 0, events); err != nil {
		var ce *checkpoint.ConflictError
		if errors.As(err, &ce) {
			return id, err
		}
		return id, fmt.Errorf("import %s: %w", id, err)
	}
	return id, nil
}

// decode reads and checks a whole stream.
func decode(r io.Reader) ([]session.Event, string, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var (
		events []session.Event
		id     string
	)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, "", fmt.Errorf("read line %d: %w", n, err)
		}
		if len(bytes.TrimSpace(line)) > 0 {
			e, perr := parseLine(line, int64(len(events))+1)
			if perr != nil {
				return nil, "", fmt.Errorf("%w: line %d: %v", ErrFormat, n, perr)
			}
			if len(events) == 0 {
				if id, perr = sessionID(e); perr != nil {
					return nil, "", fmt.Errorf("%w: line %d: %v", ErrFormat, n, perr)
				}
			}
			events = append(events, e)
		}
		if errors.Is(err, io.EOF) {
			break
		}
	}
	if len(events) == 0 {
		return nil, "", fmt.Errorf("%w: the stream holds no events; export a session with jsonl.Export first", ErrFormat)
	}
	return events, id, nil
}

// parseLine decodes one line that should hold the event with seq want.
func parseLine(line []byte, want int64) (session.Event, error) {
	var env envelope
	dec := json.NewDecoder(bytes.NewReader(line))
	if err := dec.Decode(&env); err != nil {
		return session.Event{}, fmt.Errorf("not a JSON event envelope (%v)", err)
	}
	if dec.More() {
		return session.Event{}, errors.New("more than one JSON value on the line; each line holds exactly one event")
	}
	switch {
	case env.V == nil:
		return session.Event{}, errors.New(`no "v" (envelope version) field`)
	case *env.V < 1 || *env.V > session.Version:
		return session.Event{}, fmt.Errorf("envelope version %d; this build reads version %d and older: upgrade lite-agent", *env.V, session.Version)
	case env.Seq == nil:
		return session.Event{}, errors.New(`no "seq" field`)
	case *env.Seq != want:
		return session.Event{}, fmt.Errorf("seq %d where %d was expected (lines must hold seqs 1, 2, 3 … in order, with none missing)", *env.Seq, want)
	case env.Type == "":
		return session.Event{}, errors.New(`no "type" field`)
	case env.Time == nil:
		return session.Event{}, errors.New(`no "time" field`)
	case env.Data != nil && env.Data64 != nil:
		return session.Event{}, errors.New(`both "data" and "data64"; an event has one or the other`)
	}
	e := session.Event{Seq: *env.Seq, Type: env.Type, Time: env.Time.UTC()}
	switch {
	case env.Data64 != nil:
		data, err := base64.StdEncoding.DecodeString(*env.Data64)
		if err != nil {
			return session.Event{}, fmt.Errorf(`"data64" is not base64 (%v)`, err)
		}
		e.Data = data
	case len(env.Data) > 0:
		e.Data = bytes.Clone(env.Data)
	}
	return e, nil
}

// sessionID returns the id a session_started event names.
func sessionID(e session.Event) (string, error) {
	if e.Type != session.TypeSessionStarted {
		return "", fmt.Errorf("the first event is %q; a session stream starts with %s", e.Type, session.TypeSessionStarted)
	}
	var p session.SessionStarted
	if err := e.Decode(&p); err != nil {
		return "", err
	}
	if p.ID == "" {
		return "", errors.New(`the session_started event has no "id"; it names the session to create`)
	}
	return p.ID, nil
}
