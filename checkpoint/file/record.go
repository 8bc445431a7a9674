package file

import (
	"encoding/binary"
	"errors"
	"time"

	"github.com/lite-agent/lite-agent/session"
)

// token pins a summary to the exact log bytes it was folded from: the size
// of the log's valid part, and the offset and checksum of its last frame.
// A token is checked against a log by reading one frame header, never the
// whole log.
type token struct {
	size    int64 // end of the last valid frame; 0 for a log with no frames
	lastOff int64 // offset of the last frame
	lastCRC uint32
}

// logState is what a writer knows about a log: the summary of its valid
// frames and the token of those frames.
type logState struct {
	sum session.Summary
	tok token
}

// head is the seq of the last event.
func (st logState) head() int64 { return st.sum.Head }

// Index record kinds.
const (
	recHeader  = 'H' // first record: the boot id of the machine that wrote the file
	recIntent  = 'I' // a writer is about to change the session's log
	recSummary = 'S' // the session's summary and token after a change
	recDelete  = 'D' // the session was deleted
)

// indexRecord is one decoded record of a namespace index.
type indexRecord struct {
	kind byte
	id   string // session id; the boot id for recHeader
	st   logState
}

type recordWriter struct{ b []byte }

func (w *recordWriter) str(s string) {
	w.b = binary.AppendUvarint(w.b, uint64(len(s)))
	w.b = append(w.b, s...)
}
func (w *recordWriter) uvarint(v uint64) { w.b = binary.AppendUvarint(w.b, v) }
func (w *recordWriter) varint(v int64)   { w.b = binary.AppendVarint(w.b, v) }
func (w *recordWriter) time(t time.Time) {
	w.varint(t.Unix())
	w.uvarint(uint64(t.Nanosecond()))
}

// appendRecord appends rec's payload (kind byte first) to b.
func appendRecord(b []byte, rec indexRecord) []byte {
	w := recordWriter{b: append(b, rec.kind)}
	w.str(rec.id)
	if rec.kind != recSummary {
		return w.b
	}
	t, s := rec.st.tok, rec.st.sum
	w.uvarint(uint64(t.size))
	w.uvarint(uint64(t.lastOff))
	w.b = binary.LittleEndian.AppendUint32(w.b, t.lastCRC)
	w.str(s.Kind)
	w.str(s.Namespace)
	w.str(s.Workdir)
	w.str(s.Model)
	w.str(s.Title)
	w.str(string(s.Status))
	w.varint(s.Head)
	w.uvarint(uint64(s.Messages))
	w.time(s.Created)
	w.time(s.Updated)
	if s.Parent != nil {
		w.uvarint(1)
		w.str(s.Parent.Session)
		w.varint(s.Parent.Seq)
	} else {
		w.uvarint(0)
	}
	w.uvarint(uint64(len(s.Open)))
	for _, o := range s.Open {
		w.str(o)
	}
	w.uvarint(uint64(s.Fold))      // absent in records written before fold versions: fold version 1
	if m := s.Imported; m != nil { // only imported sessions: other records end above
		w.uvarint(1)
		w.str(m.From)
		w.str(m.Host)
		w.time(m.At)
		w.varint(m.Head)
		if m.Salvaged {
			w.uvarint(1)
		} else {
			w.uvarint(0)
		}
	}
	return w.b
}

var errBadRecord = errors.New("bad index record")

type recordReader struct {
	p   []byte
	err error
}

func (r *recordReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.p)
	if n <= 0 {
		r.err = errBadRecord
		return 0
	}
	r.p = r.p[n:]
	return v
}

func (r *recordReader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.p)
	if n <= 0 {
		r.err = errBadRecord
		return 0
	}
	r.p = r.p[n:]
	return v
}

func (r *recordReader) str() string {
	n := r.uvarint()
	if r.err != nil || n > uint64(len(r.p)) {
		r.err = errBadRecord
		return ""
	}
	s := string(r.p[:n])
	r.p = r.p[n:]
	return s
}

func (r *recordReader) time() time.Time {
	sec := r.varint()
	nsec := r.uvarint()
	if nsec >= 1e9 {
		r.err = errBadRecord
	}
	if r.err != nil {
		return time.Time{}
	}
	return time.Unix(sec, int64(nsec)).UTC()
}

// decodeRecord decodes one record payload.
func decodeRecord(p []byte) (indexRecord, error) {
	if len(p) == 0 {
		return indexRecord{}, errBadRecord
	}
	rec := indexRecord{kind: p[0]}
	r := recordReader{p: p[1:]}
	rec.id = r.str()
	switch rec.kind {
	case recHeader, recIntent, recDelete:
	case recSummary:
		t := &rec.st.tok
		t.size = int64(r.uvarint())
		t.lastOff = int64(r.uvarint())
		if len(r.p) < 4 {
			return rec, errBadRecord
		}
		t.lastCRC = binary.LittleEndian.Uint32(r.p)
		r.p = r.p[4:]
		s := &rec.st.sum
		s.ID = rec.id
		s.Kind = r.str()
		s.Namespace = r.str()
		s.Workdir = r.str()
		s.Model = r.str()
		s.Title = r.str()
		s.Status = session.Status(r.str())
		s.Head = r.varint()
		s.Messages = int(r.uvarint())
		s.Created = r.time()
		s.Updated = r.time()
		if r.uvarint() == 1 {
			s.Parent = &session.ForkRef{Session: r.str(), Seq: r.varint()}
		}
		n := r.uvarint()
		if n > uint64(len(r.p)) {
			return rec, errBadRecord
		}
		for range n {
			s.Open = append(s.Open, r.str())
		}
		if len(r.p) > 0 {
			s.Fold = int(r.uvarint())
			if len(r.p) > 0 && r.uvarint() == 1 {
				s.Imported = &session.Import{From: r.str(), Host: r.str(), At: r.time(), Head: r.varint(), Salvaged: r.uvarint() == 1}
			}
		} else {
			s.Fold = 1 // written by fold version 1, before records carried it
		}
	default:
		return rec, errBadRecord
	}
	if r.err != nil || len(r.p) != 0 {
		return rec, errBadRecord
	}
	return rec, nil
}
