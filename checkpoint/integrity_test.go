package checkpoint_test

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
)

// TestChecksum checks that a change to any field of an event changes its
// checksum, and that the checksum is the same for the same event.
func TestChecksum(t *testing.T) {
	at := time.Date(2026, 12, 1, 22, 0, 0, 123456000, time.UTC)
	e := session.Event{Seq: 7, Type: session.TypeUserPrompt, Time: at, Data: []byte(`{"text":"hello"}`)}
	sum := checkpoint.Checksum(e)
	if again := checkpoint.Checksum(e); again != sum {
		t.Fatalf("checksum of the same event: %08x, then %08x", sum, again)
	}
	changed := map[string]session.Event{}
	for name, f := range map[string]func(*session.Event){
		"seq":  func(e *session.Event) { e.Seq++ },
		"type": func(e *session.Event) { e.Type = session.TypeAssistantMessage },
		"time": func(e *session.Event) { e.Time = e.Time.Add(time.Microsecond) },
		"data": func(e *session.Event) { e.Data = []byte(`{"text":"hellp"}`) },
		// The type's length is part of the envelope: moving a byte
		// between type and data is a change.
		"split": func(e *session.Event) { e.Type, e.Data = "user_promp", append([]byte("t"), e.Data...) },
	} {
		c := e
		c.Data = append([]byte(nil), e.Data...)
		f(&c)
		changed[name] = c
	}
	for name, c := range changed {
		if checkpoint.Checksum(c) == sum {
			t.Errorf("changing the %s leaves the checksum %08x", name, sum)
		}
	}
}

// TestVerifier checks the verdicts of a Verifier on a log with recorded
// head 4.
func TestVerifier(t *testing.T) {
	ev := func(seq int64) session.Event {
		return session.Event{Seq: seq, Type: session.TypeUserPrompt, Time: time.Unix(int64(seq), 0).UTC(), Data: []byte(`{}`)}
	}
	cases := []struct {
		name    string
		from    int64
		seqs    []int64
		bad     int64 // the seq whose stored checksum is wrong
		wantSeq int64 // 0: no damage
	}{
		{"whole", 1, []int64{1, 2, 3, 4}, 0, 0},
		{"from the middle", 3, []int64{3, 4}, 0, 0},
		{"past the head", 5, nil, 0, 0},
		{"gap", 1, []int64{1, 2, 4}, 0, 3},
		{"short", 1, []int64{1, 2, 3}, 0, 4},
		{"empty", 1, nil, 0, 1},
		{"past the recorded head", 1, []int64{1, 2, 3, 4, 5}, 0, 5},
		{"bad checksum", 1, []int64{1, 2, 3, 4}, 2, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := checkpoint.NewVerifier("s", tc.from, 4)
			var err error
			for _, seq := range tc.seqs {
				e := ev(seq)
				sum := checkpoint.Checksum(e)
				if seq == tc.bad {
					sum ^= 1
				}
				if err = v.Event(e, sum); err != nil {
					break
				}
			}
			if err == nil {
				err = v.End()
			}
			var ce *checkpoint.CorruptError
			switch {
			case tc.wantSeq == 0 && err != nil:
				t.Fatalf("damage reported in a sound log: %v", err)
			case tc.wantSeq != 0 && (!errors.As(err, &ce) || !errors.Is(err, checkpoint.ErrCorrupt) || ce.Seq != tc.wantSeq || ce.Session != "s"):
				t.Fatalf("error %v, want a *CorruptError for s at seq %d", err, tc.wantSeq)
			}
		})
	}
}

// BenchmarkChecksum1KiB is the cost of checking one 1 KiB event.
func BenchmarkChecksum1KiB(b *testing.B) {
	e := session.Event{Seq: 7, Type: session.TypeAssistantMessage, Time: session.Now(), Data: make([]byte, 1024)}
	b.SetBytes(1024)
	b.ReportAllocs()
	for b.Loop() {
		checkpoint.Checksum(e)
	}
}

// envelopeChecksum is Checksum as its documentation states it: the
// canonical encoding built in a buffer and summed by hash/crc32.
func envelopeChecksum(e session.Event) uint32 {
	b := binary.BigEndian.AppendUint64(nil, uint64(e.Seq))
	b = binary.BigEndian.AppendUint64(b, uint64(e.Time.UnixMicro()))
	b = binary.AppendUvarint(b, uint64(len(e.Type)))
	b = append(b, e.Type...)
	b = append(b, e.Data...)
	return crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli))
}

// TestChecksumIsTheDocumentedCRC: Checksum, which folds the envelope in
// by hand, equals the CRC-32C of the documented encoding, for seqs and
// times of every size, types long enough for a two-byte length, and data
// of every length up to a few KiB, so logs written by either read alike.
func TestChecksumIsTheDocumentedCRC(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 5000 {
		data := make([]byte, r.IntN(4096))
		for j := range data {
			data[j] = byte(r.Uint32())
		}
		typ := make([]byte, r.IntN(200))
		for j := range typ {
			typ[j] = 'a' + byte(r.IntN(26))
		}
		e := session.Event{Seq: r.Int64() >> r.IntN(63), Time: time.UnixMicro(r.Int64() >> r.IntN(63)), Type: session.Type(typ), Data: data}
		if i%7 == 0 {
			e.Seq = -e.Seq
		}
		if got, want := checkpoint.Checksum(e), envelopeChecksum(e); got != want {
			t.Fatalf("event %d (seq %d, type of %d bytes, %d bytes of data): Checksum %08x, the documented CRC %08x", i, e.Seq, len(typ), len(data), got, want)
		}
	}
}
