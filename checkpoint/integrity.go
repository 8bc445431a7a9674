package checkpoint

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"sync"

	"github.com/lite-agent/lite-agent/session"
)

// ErrCorrupt: what a store holds for a session is damaged (an event whose
// checksum does not match, a seq missing, a log shorter than the head the
// store recorded). Reads that meet it stop there; nothing is repaired or
// changed. Every backend returns it as a *CorruptError.
var ErrCorrupt = errors.New("session data is corrupt")

// CorruptError is returned by Read (after the events before the damage) and,
// where the backend notices it, by Head, Append and Truncate, when the stored
// log of Session is damaged. Seq is the first seq that could not be read as
// written (0 when the damage is not tied to one event); Reason says what is
// wrong, in the backend's terms (a file and offset, a missing row, …). The
// events before Seq were verified and may be copied out; events from Seq on
// are not to be trusted. errors.Is(err, ErrCorrupt) holds for it.
type CorruptError struct {
	Session string
	Seq     int64
	Reason  string
}

func (e *CorruptError) Error() string {
	if e.Seq > 0 {
		return fmt.Sprintf("session %s is damaged at seq %d: %s; nothing was changed; events 1 to %d verify", e.Session, e.Seq, e.Reason, e.Seq-1)
	}
	return fmt.Sprintf("session %s is damaged: %s; nothing was changed", e.Session, e.Reason)
}

// Is makes errors.Is(err, ErrCorrupt) hold.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// IsCorrupt reports whether err is (or wraps) a *CorruptError, returning it.
func IsCorrupt(err error) (*CorruptError, bool) {
	var c *CorruptError
	ok := errors.As(err, &c)
	return c, ok
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Checksum is the CRC-32C (Castagnoli) of an event's canonical encoding:
// its seq and its time in Unix microseconds (8 bytes each, big-endian), the
// length of its type (uvarint), the type and the data. Database backends
// store it beside each event, in the transaction that writes the event, and
// check it on every read; a change to any of the four fields changes it.
// The CPU's CRC instructions make it cost a few nanoseconds per KiB.
func Checksum(e session.Event) uint32 {
	// The envelope goes through a pooled buffer: crc32.Update's argument
	// escapes, so a buffer on the stack (or []byte(e.Type)) would cost two
	// allocations per event on every read.
	bp := envelopes.Get().(*[]byte)
	b := binary.BigEndian.AppendUint64((*bp)[:0], uint64(e.Seq))
	b = binary.BigEndian.AppendUint64(b, uint64(e.Time.UnixMicro()))
	b = binary.AppendUvarint(b, uint64(len(e.Type)))
	b = append(b, e.Type...)
	c := crc32.Update(0, castagnoli, b)
	*bp = b
	envelopes.Put(bp)
	return crc32.Update(c, castagnoli, e.Data)
}

// envelopes holds the buffers Checksum encodes envelopes in.
var envelopes = sync.Pool{New: func() any { b := make([]byte, 0, 64); return &b }}

// Verifier checks a stream of stored events as a backend reads them: each
// event's checksum, seqs that follow one another from the first one asked
// for, and a log that reaches the head the store recorded. Backends create
// one per Read; its errors are *CorruptError. The zero value is not usable.
type Verifier struct {
	id   string
	next int64 // the seq the next event must carry
	head int64
}

// NewVerifier starts verifying a read of session id from seq from (≥ 1) of a
// log whose recorded head is head.
func NewVerifier(id string, from, head int64) *Verifier {
	return &Verifier{id: id, next: max(from, 1), head: head}
}

// Event checks the next event read, with the checksum stored for it.
func (v *Verifier) Event(e session.Event, stored uint32) error {
	if err := v.Seq(e.Seq); err != nil {
		return err
	}
	if Checksum(e) != stored {
		v.next--
		return &CorruptError{Session: v.id, Seq: e.Seq, Reason: fmt.Sprintf("the stored checksum of seq %d (%s) does not match its contents", e.Seq, e.Type)}
	}
	return nil
}

// Seq checks that the next event read carries seq, for backends whose own
// framing already checksums the event.
func (v *Verifier) Seq(seq int64) error {
	switch {
	case seq > v.head:
		return &CorruptError{Session: v.id, Seq: v.next, Reason: fmt.Sprintf("the log holds seq %d past its recorded head %d", seq, v.head)}
	case seq != v.next:
		return &CorruptError{Session: v.id, Seq: v.next, Reason: fmt.Sprintf("seq %d is missing (the next stored event is seq %d)", v.next, seq)}
	}
	v.next++
	return nil
}

// End checks, once the stored events ran out, that the log reached its
// recorded head.
func (v *Verifier) End() error {
	if v.next <= v.head {
		return &CorruptError{Session: v.id, Seq: v.next, Reason: fmt.Sprintf("the log ends before seq %d, but its recorded head is %d (events are missing)", v.next, v.head)}
	}
	return nil
}

// Next is the seq the next event must carry.
func (v *Verifier) Next() int64 { return v.next }
