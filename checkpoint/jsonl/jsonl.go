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
//
// The events are preceded by one header line that says what the stream
// holds, so that a stream cut short (a partial copy, a full disk) is told
// apart from a shorter session:
//
//	{"v":1,"export":{"session":"01m8q…","head":21,"events":21}}
//
// events is the number of event lines that follow; head is the session's
// head in the store it was exported from. They differ only in a salvaged
// stream (see Salvage), whose header also says so and why:
//
//	{"v":1,"export":{"session":"01m8q…","head":21,"events":21,"salvaged":true,"damage":"session 01m8q… is damaged at seq 10: …","lost":[{"from":10,"to":10,"reason":"…"}]}}
//
// In a salvaged stream a seq that did not verify is an event_lost event
// (session.EventLost) when events follow it; events is then the last
// salvaged seq, and lost lists every run of seqs that did not verify.
//
// Import refuses a stream whose event lines are fewer or more than its
// header says. Streams written before the header existed have none and
// import as before.
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
	"os"
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

// Export writes the log of session id in c to w: the header line, then one
// event per line, up to the head the session had when Export began (events
// appended meanwhile are left out). It reads the log as it writes (a large
// log is never held in memory) and returns the first error of either; an
// unknown session is checkpoint.ErrNotFound and writes nothing. A damaged
// log ends the stream early with the store's *checkpoint.CorruptError; the
// header then promises more events than follow, so the stream does not
// import. Salvage writes the events that verify instead.
func Export(ctx context.Context, c checkpoint.Checkpointer, id string, w io.Writer) error {
	sum, err := c.Head(ctx, id)
	if err != nil {
		return fmt.Errorf("export %s: %w", id, err)
	}
	return write(ctx, c, id, w, header{Session: id, Head: sum.Head, Events: sum.Head})
}

// write writes h and then the first h.Events events of the log of id.
func write(ctx context.Context, c checkpoint.Checkpointer, id string, w io.Writer, h header) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	line, err := appendHeader(nil, h)
	if err != nil {
		return fmt.Errorf("export %s: %w", id, err)
	}
	if _, err := bw.Write(line); err != nil {
		return fmt.Errorf("export %s: write: %w", id, err)
	}
	var n int64
	if h.Events > 0 {
		for e, err := range c.Read(ctx, id, 1) {
			if err != nil {
				bw.Flush()
				return fmt.Errorf("export %s: %w", id, err)
			}
			line = appendLine(line[:0], e)
			if _, err := bw.Write(line); err != nil {
				return fmt.Errorf("export %s: write: %w", id, err)
			}
			if n++; n == h.Events {
				break
			}
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("export %s: write: %w", id, err)
	}
	if n < h.Events {
		return fmt.Errorf("export %s: the log ended after %d of its %d events while it was read (truncated meanwhile?); export it again", id, n, h.Events)
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
// The whole stream is checked before anything is written: a malformed line,
// or event lines fewer or more than the header says (a stream cut short),
// is an error wrapping ErrFormat that names the line number, and nothing is
// appended. If c already has a session with that id, the error wraps
// ErrExists and nothing is appended; delete the old session first or
// import into another store.
//
// The session is marked as imported: its session_started event gains an
// "imported" field (session.Import: where from, on which host, when, the
// head it had), so that it is told apart from a session written here. The
// other events are appended byte for byte.
func Import(ctx context.Context, c checkpoint.Checkpointer, r io.Reader) (id string, err error) {
	im, err := ImportStream(ctx, c, r, nil)
	return im.Session, err
}

// ImportOptions configure ImportStream and ImportArchive. A nil
// *ImportOptions means the defaults.
type ImportOptions struct {
	// From names where the stream is read from (a file's path), for the
	// import mark; "" records "stdin".
	From string
}

// Imported describes a stream Import appended.
type Imported struct {
	// Session is the id of the session created.
	Session string
	// Events is the number of events appended.
	Events int64
	// Salvaged is set for a stream Salvage wrote from a damaged log: the
	// events after Events were lost. Damage is what was wrong with it.
	Salvaged bool
	Damage   string
}

// ImportStream is Import, saying what it imported.
func ImportStream(ctx context.Context, c checkpoint.Checkpointer, r io.Reader, opts *ImportOptions) (Imported, error) {
	events, id, h, err := decode(r)
	if err != nil {
		return Imported{}, fmt.Errorf("import: %w", err)
	}
	im := Imported{Session: id, Events: int64(len(events))}
	if h != nil {
		im.Salvaged, im.Damage = h.Salvaged, h.Damage
	}
	if events[0], err = markImported(events[0], h, int64(len(events)), opts); err != nil {
		return Imported{}, fmt.Errorf("import %s: %w: line 1: %v", id, ErrFormat, err)
	}
	if _, err := c.Append(ctx, id, 0, events); err != nil {
		var ce *checkpoint.ConflictError
		if errors.As(err, &ce) {
			return im, fmt.Errorf("import %s: %w: this store already holds a session %s (head %d); nothing was imported: delete that session first, or import into another store", id, ErrExists, id, ce.Actual)
		}
		return im, fmt.Errorf("import %s: %w", id, err)
	}
	return im, nil
}

// ErrExists is wrapped by Import's error when the store already holds a
// session with the id of the stream's session.
var ErrExists = errors.New("session already exists")

// decode reads and checks a whole stream; h is its header, nil if it has
// none.
func decode(r io.Reader) (events []session.Event, id string, h *header, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	headerLine := 0
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, "", nil, fmt.Errorf("read line %d: %w", n, err)
		}
		if len(events) == 0 && h == nil && len(bytes.TrimSpace(line)) > 0 {
			var herr error
			if h, herr = parseHeader(line); herr != nil {
				return nil, "", nil, fmt.Errorf("%w: line %d: %v", ErrFormat, n, herr)
			}
			if h != nil {
				headerLine = n
				line = nil
			}
		}
		if len(bytes.TrimSpace(line)) > 0 {
			e, perr := parseLine(line, int64(len(events))+1)
			if perr != nil {
				return nil, "", nil, fmt.Errorf("%w: line %d: %v", ErrFormat, n, perr)
			}
			if len(events) == 0 {
				if id, perr = sessionID(e); perr != nil {
					return nil, "", nil, fmt.Errorf("%w: line %d: %v", ErrFormat, n, perr)
				}
				if h != nil && h.Session != id {
					return nil, "", nil, fmt.Errorf("%w: line %d: the session_started event names session %q, but the header (line %d) says %q", ErrFormat, n, id, headerLine, h.Session)
				}
			}
			if h != nil && int64(len(events)) == h.Events {
				return nil, "", nil, fmt.Errorf("%w: line %d: more events than the %d the header (line %d) announces", ErrFormat, n, h.Events, headerLine)
			}
			events = append(events, e)
		}
		if errors.Is(err, io.EOF) {
			break
		}
	}
	if h != nil && int64(len(events)) < h.Events {
		return nil, "", nil, fmt.Errorf("%w: the stream ends after %d of the %d events its header (line %d) announces: it was cut short (a partial copy?); nothing was imported; export the session again", ErrFormat, len(events), h.Events, headerLine)
	}
	if len(events) == 0 {
		return nil, "", nil, fmt.Errorf("%w: the stream holds no events; export a session with jsonl.Export first", ErrFormat)
	}
	return events, id, h, nil
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

// markImported returns the session_started event e with its import mark
// (see Import); a mark e already carries becomes the new one's Previous.
// The payload's other fields keep their values; their order may change.
func markImported(e session.Event, h *header, events int64, opts *ImportOptions) (session.Event, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(e.Data, &fields); err != nil {
		return e, err
	}
	host, _ := os.Hostname()
	m := session.Import{From: "stdin", Host: host, At: time.Now().UTC().Truncate(time.Microsecond), Head: events} // stores keep microseconds
	if opts != nil && opts.From != "" {
		m.From = opts.From
	}
	if h != nil {
		m.Head, m.Salvaged = max(h.Head, events), h.Salvaged
	}
	if old, ok := fields["imported"]; ok && string(old) != "null" {
		var prev session.Import
		if err := json.Unmarshal(old, &prev); err != nil {
			return e, fmt.Errorf("the session_started event's import mark does not decode (%v)", err)
		}
		m.Previous = &prev
	}
	b, err := json.Marshal(m)
	if err != nil {
		return e, err
	}
	fields["imported"] = b
	if e.Data, err = json.Marshal(fields); err != nil {
		return e, err
	}
	return e, nil
}
