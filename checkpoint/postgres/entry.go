package postgres

import (
	"encoding/binary"
	"errors"
	"time"

	"github.com/lite-agent/lite-agent/session"
)

// An entry is a session.Summary packed into a few hundred bytes: the
// sessions.entry column (schema version 2 on). Decoding one is many times
// faster than decoding the summary's JSON, which is what lets List return
// thousands of sessions in milliseconds and an Append read a session's
// summary back cheaply.
//
// Layout: a version byte (entryVersion), then signed varints and
// length-prefixed strings (uvarint length, bytes) in this order:
//
//	head, messages, created, updated (unix microseconds),
//	id, kind, namespace, workdir, model, title, status,
//	parent flag (0 none, 1 present) [parent session, parent seq],
//	number of open calls, then each open call id.
const entryVersion = 1

// errEntry reports an entry that does not decode.
var errEntry = errors.New("malformed summary entry")

// encodeEntry packs s.
func encodeEntry(s *session.Summary) []byte {
	b := make([]byte, 0, 48+len(s.ID)+len(s.Kind)+len(s.Namespace)+len(s.Workdir)+len(s.Model)+len(s.Title)+len(s.Status))
	b = append(b, entryVersion)
	b = binary.AppendVarint(b, s.Head)
	b = binary.AppendVarint(b, int64(s.Messages))
	b = binary.AppendVarint(b, s.Created.UnixMicro())
	b = binary.AppendVarint(b, s.Updated.UnixMicro())
	for _, str := range [...]string{s.ID, s.Kind, s.Namespace, s.Workdir, s.Model, s.Title, string(s.Status)} {
		b = appendString(b, str)
	}
	if s.Parent == nil {
		b = append(b, 0)
	} else {
		b = append(b, 1)
		b = appendString(b, s.Parent.Session)
		b = binary.AppendVarint(b, s.Parent.Seq)
	}
	b = binary.AppendUvarint(b, uint64(len(s.Open)))
	for _, id := range s.Open {
		b = appendString(b, id)
	}
	return b
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

func (r *entryReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	var x uint64
	var shift uint
	for i := 0; i < len(r.b) && i < binary.MaxVarintLen64; i++ {
		c := r.b[i]
		if c < 0x80 {
			if i == binary.MaxVarintLen64-1 && c > 1 {
				break // overflow
			}
			r.b = r.b[i+1:]
			return x | uint64(c)<<shift
		}
		x |= uint64(c&0x7f) << shift
		shift += 7
	}
	r.err = errEntry
	return 0
}

func (r *entryReader) varint() int64 {
	ux := r.uvarint()
	x := int64(ux >> 1)
	if ux&1 != 0 {
		x = ^x
	}
	return x
}

func (r *entryReader) string() string {
	n := r.uvarint()
	if r.err != nil || n == 0 {
		return ""
	}
	if n > uint64(len(r.b)) {
		r.err = errEntry
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
		r.err = errEntry
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

// micro is the time of a unix microsecond count, in UTC.
func micro(us int64) time.Time { return time.UnixMicro(us).UTC() }

// decodeEntry unpacks an entry made by encodeEntry into s, which must be
// zero. The strings of s share b's memory.
func decodeEntry(b string, s *session.Summary) error {
	r := entryReader{b: b}
	if r.byte() != entryVersion {
		return errEntry
	}
	s.Head = r.varint()
	s.Messages = int(r.varint())
	s.Created = micro(r.varint())
	s.Updated = micro(r.varint())
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
		r.err = errEntry
	}
	open := r.uvarint()
	if open > uint64(len(r.b)) { // every id takes at least one byte
		r.err = errEntry
	}
	if r.err == nil && open > 0 {
		s.Open = make([]string, open)
		for i := range s.Open {
			s.Open[i] = r.string()
		}
	}
	if r.err == nil && len(r.b) != 0 {
		r.err = errEntry
	}
	if r.err != nil {
		*s = session.Summary{}
		return r.err
	}
	return nil
}
