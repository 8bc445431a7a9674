// Package entry packs a session.Summary into a compact, self-delimiting
// binary entry, the form in which the SQLite and PostgreSQL stores keep
// summaries: decoding one is about thirty times faster than decoding the
// summary's JSON, which is what lets List return thousands of sessions in
// milliseconds and an Append fold its events into the summary cheaply.
package entry

import (
	"encoding/binary"
	"errors"
	"time"

	"github.com/lite-agent/lite-agent/session"
)

// Layout: a version byte (Version), the length of the rest (uvarint),
// then signed varints and length-prefixed strings (uvarint length, bytes)
// in this order:
//
//	head, messages, created, updated (unix microseconds),
//	id, kind, namespace, workdir, model, title, status,
//	parent flag (0 none, 1 present) [parent session, parent seq],
//	number of open calls, then each open call id,
//	the summary's fold version (session.FoldVersion when it was folded),
//	and only for an imported session: 1, then its import mark (from,
//	host, at in unix microseconds, head, salvaged as 0 or 1).
//
// Version 1 entries have no fold version: they were written by fold
// version 1 and decode with Fold 1. An entry of a newer version than
// Version, or of a newer fold version than session.FoldVersion, decodes to
// a *session.NewerError (session.ErrNewer), never to ErrMalformed: the
// version byte stays first in every future format, and a build that
// changes the layout must bump it. Entries delimit themselves, so a
// store can concatenate a whole listing into one value and decode it in
// one pass (DecodeAll).
const Version = 2

// ErrMalformed reports an entry that does not decode.
var ErrMalformed = errors.New("malformed summary entry")

// Encode packs s.
func Encode(s *session.Summary) []byte {
	body := make([]byte, 0, 64+len(s.ID)+len(s.Kind)+len(s.Namespace)+len(s.Workdir)+len(s.Model)+len(s.Title)+len(s.Status))
	body = binary.AppendVarint(body, s.Head)
	body = binary.AppendVarint(body, int64(s.Messages))
	body = binary.AppendVarint(body, s.Created.UnixMicro())
	body = binary.AppendVarint(body, s.Updated.UnixMicro())
	for _, str := range [...]string{s.ID, s.Kind, s.Namespace, s.Workdir, s.Model, s.Title, string(s.Status)} {
		body = appendString(body, str)
	}
	if s.Parent == nil {
		body = append(body, 0)
	} else {
		body = append(body, 1)
		body = appendString(body, s.Parent.Session)
		body = binary.AppendVarint(body, s.Parent.Seq)
	}
	body = binary.AppendUvarint(body, uint64(len(s.Open)))
	for _, id := range s.Open {
		body = appendString(body, id)
	}
	body = binary.AppendVarint(body, int64(s.Fold))
	if m := s.Imported; m != nil {
		body = append(body, 1)
		body = appendString(body, m.From)
		body = appendString(body, m.Host)
		body = binary.AppendVarint(body, m.At.UnixMicro())
		body = binary.AppendVarint(body, m.Head)
		body = append(body, boolByte(m.Salvaged))
	}
	b := make([]byte, 0, len(body)+1+binary.MaxVarintLen64)
	b = append(b, Version)
	b = binary.AppendUvarint(b, uint64(len(body)))
	return append(b, body...)
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// entryReader decodes an entry front to back; the first error sticks. It
// reads from a string so that the strings it returns share its memory: one
// allocation per entry instead of one per field.
type entryReader struct {
	b   string
	err error
}

func (r *entryReader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := varint(r.b)
	if n <= 0 {
		r.err = ErrMalformed
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *entryReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := uvarint(r.b)
	if n <= 0 {
		r.err = ErrMalformed
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *entryReader) string() string {
	n := r.uvarint()
	if r.err != nil || n == 0 {
		return ""
	}
	if n > uint64(len(r.b)) {
		r.err = ErrMalformed
		return ""
	}
	s := r.b[:n]
	r.b = r.b[n:]
	return s
}

func (r *entryReader) byte() byte {
	if r.err != nil {
		return 0
	}
	if len(r.b) == 0 {
		r.err = ErrMalformed
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

// Micro is the time of a unix microsecond count, in UTC.
func Micro(us int64) time.Time { return time.UnixMicro(us).UTC() }

// uvarint is binary.Uvarint for a string, except that it refuses varints
// longer than needed, so that an entry has one encoding only.
func uvarint(s string) (uint64, int) {
	var x uint64
	var shift uint
	for i := 0; i < len(s) && i < binary.MaxVarintLen64; i++ {
		c := s[i]
		if c < 0x80 {
			if i == binary.MaxVarintLen64-1 && c > 1 {
				return 0, -(i + 1) // overflow
			}
			if c == 0 && i > 0 {
				return 0, -(i + 1) // not the shortest form: entries are canonical
			}
			return x | uint64(c)<<shift, i + 1
		}
		x |= uint64(c&0x7f) << shift
		shift += 7
	}
	return 0, 0
}

// varint is binary.Varint for a string.
func varint(s string) (int64, int) {
	ux, n := uvarint(s)
	x := int64(ux >> 1)
	if ux&1 != 0 {
		x = ^x
	}
	return x, n
}

// Decode unpacks one entry made by Encode. The strings of the summary
// share b's memory.
func Decode(b string) (session.Summary, error) {
	var s session.Summary
	rest, err := Next(b, &s)
	if err == nil && rest != "" {
		err = ErrMalformed
	}
	return s, err
}

// DecodeAll unpacks the concatenation of n ≥ 0 entries. It decodes in
// place, into the slice it returns: copying summaries around costs more
// than decoding them while the garbage collector runs. The slice is made
// at its size (count), not grown: a listing of 10,000 summaries is 2.4 MB,
// and growing it from a guess copied and faulted in 1 MB more.
func DecodeAll(b string) ([]session.Summary, error) {
	if b == "" {
		return nil, nil
	}
	out := make([]session.Summary, 0, count(b))
	for b != "" {
		out = append(out, session.Summary{})
		rest, err := Next(b, &out[len(out)-1])
		if err != nil {
			return nil, err
		}
		b = rest
	}
	return out, nil
}

// count returns how many entries the concatenation b holds, skipping each
// by its length; it stops at the first it cannot skip (one of a newer
// version, or damage), which Next then reports.
func count(b string) int {
	n := 0
	for len(b) > 0 && b[0] >= 1 && b[0] <= Version {
		size, w := uvarint(b[1:])
		if w <= 0 || size > uint64(len(b)-1-w) {
			break
		}
		b = b[1+w+int(size):]
		n++
	}
	if len(b) > 0 {
		n++ // the one Next decodes or refuses
	}
	return n
}

// Next unpacks the entry at the start of b into s, which must be zero, and
// returns what follows.
func Next(b string, s *session.Summary) (rest string, _ error) {
	r := entryReader{b: b}
	v := r.byte()
	switch {
	case v > Version:
		// The version byte is the one thing every format keeps in place:
		// a newer build's entry is never mistaken for damage.
		return "", &session.NewerError{Format: "summary entry format", Version: int(v), Known: Version}
	case v < 1:
		return "", ErrMalformed
	}
	n := r.uvarint()
	if r.err != nil || n > uint64(len(r.b)) {
		return "", ErrMalformed
	}
	r.b, rest = r.b[:n], r.b[n:]
	s.Head = r.varint()
	s.Messages = int(r.varint())
	s.Created = Micro(r.varint())
	s.Updated = Micro(r.varint())
	// Empty strings are left alone: s is zero, and every pointer stored
	// costs a write barrier while the garbage collector runs.
	for _, f := range [...]*string{&s.ID, &s.Kind, &s.Namespace, &s.Workdir, &s.Model, &s.Title, (*string)(&s.Status)} {
		if v := r.string(); v != "" {
			*f = v
		}
	}
	switch r.byte() {
	case 0:
	case 1:
		s.Parent = &session.ForkRef{Session: r.string(), Seq: r.varint()}
	default:
		r.err = ErrMalformed
	}
	open := r.uvarint()
	if open > uint64(len(r.b)) { // every id takes at least one byte
		r.err = ErrMalformed
	}
	if r.err == nil && open > 0 {
		s.Open = make([]string, open)
		for i := range s.Open {
			s.Open[i] = r.string()
		}
	}
	if v >= 2 {
		s.Fold = int(r.varint())
		if err := session.CheckFold(s); err != nil && r.err == nil {
			*s = session.Summary{}
			return "", err
		}
	} else {
		s.Fold = 1 // entries of version 1 were written by fold version 1
	}
	if r.err == nil && len(r.b) != 0 {
		if r.byte() != 1 {
			r.err = ErrMalformed
		}
		m := &session.Import{From: r.string(), Host: r.string(), At: Micro(r.varint()), Head: r.varint()}
		switch r.byte() {
		case 0:
		case 1:
			m.Salvaged = true
		default:
			r.err = ErrMalformed
		}
		s.Imported = m
	}
	if r.err == nil && len(r.b) != 0 {
		r.err = ErrMalformed
	}
	if r.err != nil {
		*s = session.Summary{}
		return "", r.err
	}
	return rest, nil
}

// DecodeInto unpacks one entry made by Encode into s, which must be zero.
// The strings of s share b's memory.
func DecodeInto(b string, s *session.Summary) error {
	rest, err := Next(b, s)
	if err == nil && rest != "" {
		*s = session.Summary{}
		err = ErrMalformed
	}
	return err
}
