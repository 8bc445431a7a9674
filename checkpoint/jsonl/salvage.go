package jsonl

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
)

// header is the first line of a stream (see the package documentation).
type header struct {
	Session  string `json:"session"`
	Head     int64  `json:"head"`
	Events   int64  `json:"events"`
	Salvaged bool   `json:"salvaged,omitempty"`
	Damage   string `json:"damage,omitempty"`
	// Lost are the seqs a salvage could not read (see Salvage).
	Lost []Gap `json:"lost,omitempty"`
	// Reconstructed is set when seq 1 (session_started) was lost and the
	// stream's seq 1 was rebuilt from the store's summary of the session.
	Reconstructed bool `json:"reconstructed,omitempty"`
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

// Gap is a run of seqs a salvage could not read as written.
type Gap struct {
	From int64 `json:"from"`
	To   int64 `json:"to"`
	// Reason is the store's account of the first damage in the run.
	Reason string `json:"reason"`
}

// Salvaged describes what Salvage wrote.
type Salvaged struct {
	// Events is the number of event lines written: seqs 1 to Events,
	// each either an event the store verified or, for a seq in Lost, an
	// event_lost in its place.
	Events int64
	// Kept is the number of verified events among them.
	Kept int64
	// Head is the head the store recorded for the session.
	Head int64
	// Damage is the store's report of the first event that did not
	// verify; nil when the whole log verified (and the stream is an
	// ordinary export).
	Damage *checkpoint.CorruptError
	// Lost are the seqs that did not verify, in order: those up to Events
	// are written as event_lost, those after it (a damaged tail with
	// nothing readable after it) are left out.
	Lost []Gap
	// Reconstructed is set when seq 1 (session_started) did not verify
	// and was rebuilt from the store's summary of the session: its id,
	// kind, namespace, workdir, model, parent, import mark and creation
	// time (its provider is lost).
	Reconstructed bool
}

// Salvage writes to w every event of the log of session id that the store
// verifies, with a header that marks the stream as salvaged and says what
// was wrong, so that Import creates a session of those events. An event the
// store cannot read as written (a *checkpoint.CorruptError) is replaced by
// an event_lost event of the same seq (session.EventLost, with the store's
// reason), so the events after it keep their seqs and the stream has no
// gap; a damaged tail with nothing readable after it is left out. Reading
// past damage needs a store whose Read from a later seq reads past it (every
// backend of this module does; one that cannot loses the rest of the log,
// as before). The log is read twice (once to find what verifies, once to
// write it) and nothing is held in memory. A log that verifies whole is
// exported as Export would. Errors other than damage (an unknown session, a
// failing store) are returned as they are. A damaged seq 1 (the
// session_started event) is rebuilt from the store's summary of the session
// (Salvaged.Reconstructed, and the header says so); a summary that names
// neither the session's namespace nor its workdir cannot stand in for it,
// and that is an error: there is no session to import.
func Salvage(ctx context.Context, c checkpoint.Checkpointer, id string, w io.Writer) (Salvaged, error) {
	sum, err := c.Head(ctx, id)
	if err != nil {
		return Salvaged{}, fmt.Errorf("salvage %s: %w", id, err)
	}
	out := Salvaged{Head: sum.Head}
	out.Lost, out.Damage, err = walk(ctx, c, id, sum.Head, func(e session.Event) error {
		out.Events, out.Kept = e.Seq, out.Kept+1
		return nil
	})
	if err != nil {
		return Salvaged{}, fmt.Errorf("salvage %s: %w", id, err)
	}
	if out.Damage == nil {
		return out, Export(ctx, c, id, w)
	}
	var first *session.Event
	if len(out.Lost) > 0 && out.Lost[0].From == 1 {
		e, err := rebuildStart(id, sum)
		if err != nil {
			return out, fmt.Errorf("salvage %s: its first event (session_started) is damaged, %w, so there is no session to import; restore the store from a backup (the damage: %w)", id, err, out.Damage)
		}
		first, out.Reconstructed = &e, true
		if out.Events == 0 {
			out.Events = 1 // nothing after it verifies: the session alone
		}
	}
	h := header{Session: id, Head: max(out.Head, out.Events), Events: out.Events, Salvaged: true, Damage: out.Damage.Error(), Reconstructed: out.Reconstructed}
	h.Lost = out.Lost
	if err := writeSalvaged(ctx, c, id, w, h, out.Lost, first); err != nil {
		return out, fmt.Errorf("salvage: %w", err)
	}
	return out, nil
}

// walk reads the log of id from seq 1 to head, calling visit for every
// event the store verifies, in order; after a seq that does not verify it
// reads on from the next one. It returns the runs of seqs that did not
// verify and the first damage.
func walk(ctx context.Context, c checkpoint.Checkpointer, id string, head int64, visit func(session.Event) error) ([]Gap, *checkpoint.CorruptError, error) {
	var gaps []Gap
	var first *checkpoint.CorruptError
	for next := int64(1); next <= head; {
		var ce *checkpoint.CorruptError
		for e, err := range c.Read(ctx, id, next) {
			if err != nil {
				var ok bool
				if ce, ok = checkpoint.IsCorrupt(err); !ok {
					return nil, nil, err
				}
				break
			}
			if err := visit(e); err != nil {
				return nil, nil, err
			}
			next = e.Seq + 1
		}
		if ce == nil {
			break
		}
		if first == nil {
			first = ce
		}
		bad := ce.Seq
		if bad < next {
			// The store cannot read past this damage: the rest is lost.
			bad = head
		}
		if n := len(gaps); n > 0 && gaps[n-1].To+1 == next {
			gaps[n-1].To = bad
		} else {
			gaps = append(gaps, Gap{From: next, To: bad, Reason: ce.Reason})
		}
		next = bad + 1
	}
	return gaps, first, nil
}

// rebuildStart rebuilds the session_started event of session id from the
// store's summary of it, as seq 1 at the session's creation time.
func rebuildStart(id string, sum session.Summary) (session.Event, error) {
	if sum.Namespace == "" && sum.Workdir == "" {
		return session.Event{}, errors.New("and the store's summary of it names neither its namespace nor its workdir to rebuild it from")
	}
	e, err := session.New(session.TypeSessionStarted, session.SessionStarted{
		ID: id, Kind: sum.Kind, Namespace: sum.Namespace, Workdir: sum.Workdir, Model: sum.Model, Parent: sum.Parent, Imported: sum.Imported,
	})
	if err != nil {
		return e, err
	}
	e.Seq, e.Time = 1, sum.Created
	return e, nil
}

// errEnough stops a walk that has written what it should.
var errEnough = errors.New("enough")

// writeSalvaged writes h, then seqs 1 to h.Events: the events that verify
// and, for the seqs in lost, event_lost events (at the time of the event
// before them), except that first, if not nil, stands for a lost seq 1.
func writeSalvaged(ctx context.Context, c checkpoint.Checkpointer, id string, w io.Writer, h header, lost []Gap, first *session.Event) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	line, err := appendHeader(nil, h)
	if err != nil {
		return fmt.Errorf("salvage %s: %w", id, err)
	}
	if _, err := bw.Write(line); err != nil {
		return fmt.Errorf("salvage %s: write: %w", id, err)
	}
	var written int64 // the last seq written
	var last time.Time
	fill := func(to int64) error {
		for ; written < to; written++ {
			i := slices.IndexFunc(lost, func(g Gap) bool { return g.From <= written+1 && written+1 <= g.To })
			if i < 0 {
				return fmt.Errorf("salvage %s: seq %d, readable a moment ago, no longer is (the log changed?); salvage it again", id, written+1)
			}
			e, err := session.New(session.TypeEventLost, session.EventLost{Reason: lost[i].Reason})
			if err != nil {
				return err
			}
			e.Seq, e.Time = written+1, last
			if written == 0 && first != nil {
				e, last = *first, first.Time
			}
			if _, err := bw.Write(appendLine(line[:0], e)); err != nil {
				return fmt.Errorf("salvage %s: write: %w", id, err)
			}
		}
		return nil
	}
	_, _, err = walk(ctx, c, id, h.Events, func(e session.Event) error {
		if e.Seq > h.Events {
			return errEnough // appended since the first pass
		}
		if err := fill(e.Seq - 1); err != nil {
			return err
		}
		if _, err := bw.Write(appendLine(line[:0], e)); err != nil {
			return fmt.Errorf("salvage %s: write: %w", id, err)
		}
		written, last = e.Seq, e.Time
		return nil
	})
	if errors.Is(err, errEnough) {
		err = nil
	}
	if err == nil && written < h.Events && written == 0 && first != nil {
		err = fill(1) // the rebuilt session_started alone
	}
	if err == nil && written < h.Events {
		err = fmt.Errorf("salvage %s: the log ended after seq %d of the %d salvaged a moment ago (truncated meanwhile?); salvage it again", id, written, h.Events)
	}
	if ferr := bw.Flush(); err == nil && ferr != nil {
		err = fmt.Errorf("salvage %s: write: %w", id, ferr)
	}
	return err
}
