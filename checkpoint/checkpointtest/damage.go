package checkpointtest

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/jsonl"
	"github.com/lite-agent/lite-agent/session"
)

// Damage is a kind of damage to stored data that a backend's test inflicts
// through Backend.Damage, so that the suite can check every backend reads
// damage as damage.
type Damage int

const (
	// FlipByte changes one byte of the stored data of event seq.
	FlipByte Damage = iota + 1
	// DropEvent removes event seq and nothing else (a deleted row; in a
	// log file, its frame, with the frames after it moved up).
	DropEvent
	// CutLog removes every event from seq on while the store's recorded
	// head stays (rows deleted from the end; a log file cut short at the
	// start of seq's frame): the head is ahead of the log.
	CutLog
)

func (d Damage) String() string {
	switch d {
	case FlipByte:
		return "a flipped byte"
	case DropEvent:
		return "a dropped event"
	case CutLog:
		return "a cut log"
	}
	return fmt.Sprintf("damage %d", int(d))
}

// damageLen is the number of events in the logs the damage checks write,
// one Append each.
const damageLen = 6

// damageCases are the damage checks: what is done, to which seq.
var damageCases = []struct {
	name string
	d    Damage
	seq  int64
}{
	{"FlippedByte", FlipByte, 3},
	{"FlippedByteInFirstEvent", FlipByte, 1},
	{"DroppedFirstEvent", DropEvent, 1},
	{"FlippedByteInLastEvent", FlipByte, damageLen},
	{"DroppedEvent", DropEvent, 3},
	{"CutLog", CutLog, 4},
	{"HeadAheadOfLog", CutLog, damageLen},
}

// testDamage writes a log, damages it through b.Damage, reopens the store
// (when it is persistent) and checks that Read yields exactly the events
// before the damage and then a *checkpoint.CorruptError naming the session
// and the first damaged seq, never a shorter or altered log; that this
// stays so after an Append is tried at the head; and that the other
// sessions of the store are untouched.
func testDamage(t *testing.T, b Backend) {
	if b.Damage == nil {
		t.Skipf("%s's test gives the suite no way to damage stored data (Backend.Damage)", b.Name)
	}
	for _, dc := range damageCases {
		t.Run(dc.name, func(t *testing.T) {
			loc := b.NewLocation(t)
			c, err := b.Open(loc)
			if err != nil {
				t.Fatalf("open %s: %v", b.Name, err)
			}
			const id, other = "damaged", "intact"
			log := []session.Event{started(id, "ns")}
			head := mustAppend(t, c, id, 0, log[0])
			for i := 2; i <= damageLen; i++ {
				e := prompt(fmt.Sprintf("prompt %d", i))
				head = mustAppend(t, c, id, head, e)
				log = append(log, e)
			}
			log = numbered(0, log...)
			intact := create(t, c, other, "ns", 3)
			b.Damage(t, c, loc, id, dc.d, dc.seq)
			if b.Persistent {
				if err := c.Close(); err != nil {
					t.Fatalf("close: %v", err)
				}
				if c, err = b.Open(loc); err != nil {
					t.Fatalf("reopen %s after %s: %v", b.Name, dc.d, err)
				}
			}
			defer c.Close()
			wantCorrupt(t, c, id, log[:dc.seq-1], dc.seq)
			if dc.d != CutLog && dc.seq < damageLen {
				wantReadPast(t, c, id, dc.seq+1, log[dc.seq:])
			}
			wantSalvage(t, b, c, id, log, dc.d, dc.seq)
			// An Append at the head is refused or, where a backend accepts
			// it, it leaves the damage where it was: nothing is hidden.
			_, aerr := c.Append(t.Context(), id, damageLen, []session.Event{prompt("after the damage")})
			if aerr != nil && !errors.Is(aerr, checkpoint.ErrCorrupt) {
				t.Errorf("append after %s: %v, want nil or an error wrapping checkpoint.ErrCorrupt", dc.d, aerr)
			}
			wantCorrupt(t, c, id, log[:dc.seq-1], dc.seq)
			checkLog(t, c, other, intact)
		})
	}
}

// wantSalvage salvages damaged session id (log as written, damage d at seq)
// into a fresh store of the same backend and checks that every event that
// still verifies came over at its seq, the damaged one as an event_lost in
// its place when verified events follow it, a damaged tail left out; a
// damaged seq 1 rebuilt from the store's summary (the session's id,
// namespace, workdir and model), the stream saying so.
func wantSalvage(tb testing.TB, b Backend, c checkpoint.Checkpointer, id string, log []session.Event, d Damage, seq int64) {
	tb.Helper()
	var buf bytes.Buffer
	sv, err := jsonl.Salvage(tb.Context(), c, id, &buf)
	if err != nil {
		tb.Fatalf("salvage after %s at seq %d: %v", d, seq, err)
	}
	last := int64(len(log)) // the last seq that verifies
	if d == CutLog || seq == last {
		last = seq - 1
	}
	if sv.Events != last || sv.Damage == nil || sv.Head != int64(len(log)) || len(sv.Lost) != 1 || sv.Lost[0].From != seq || sv.Lost[0].Reason == "" || sv.Reconstructed != (seq == 1) {
		tb.Fatalf("salvage after %s at seq %d: %+v; want seqs 1 to %d written, seq %d on reported lost", d, seq, sv, last, seq)
	}
	if h, _, _ := bytes.Cut(buf.Bytes(), []byte("\n")); bytes.Contains(h, []byte(`"reconstructed":true`)) != (seq == 1) {
		tb.Fatalf("salvage after %s at seq %d: the header says seq 1 was rebuilt %v: %s", d, seq, seq != 1, h)
	}
	dst, err := b.Open(b.NewLocation(tb))
	if err != nil {
		tb.Fatal(err)
	}
	defer dst.Close()
	if _, err := jsonl.Import(tb.Context(), dst, &buf); err != nil {
		tb.Fatalf("import of the salvaged stream: %v", err)
	}
	got, err := checkpoint.ReadAll(tb.Context(), dst, id)
	if err != nil {
		tb.Fatal(err)
	}
	want := slices.Clone(log[:last])
	if seq <= last && seq > 1 {
		want[seq-1] = session.Event{Seq: seq, Type: session.TypeEventLost}
	}
	if int64(len(got)) != last {
		tb.Fatalf("the salvaged session holds %d events, want %d", len(got), last)
	}
	for i, e := range got {
		switch {
		case i == 0: // marked as imported; rebuilt if it was damaged
			var got, orig session.SessionStarted
			if e.Type != session.TypeSessionStarted || e.Decode(&got) != nil || log[0].Decode(&orig) != nil {
				tb.Fatalf("salvaged seq 1 is %s %s", e.Type, e.Data)
			}
			if got.ID != orig.ID || got.Namespace != orig.Namespace || got.Workdir != orig.Workdir || got.Model != orig.Model || got.Imported == nil || !got.Imported.Salvaged {
				tb.Fatalf("salvaged seq 1 is %+v; want the original's id, namespace, workdir and model (%+v), marked as imported from a salvage", got, orig)
			}
		case want[i].Type == session.TypeEventLost:
			var p session.EventLost
			if e.Seq != seq || e.Type != session.TypeEventLost || e.Decode(&p) != nil || p.Reason == "" {
				tb.Fatalf("salvaged seq %d is %s %s; want an event_lost with the reason", e.Seq, e.Type, e.Data)
			}
		default:
			if err := sameEvent(want[i], e); err != nil {
				tb.Fatalf("salvaged event: %v", err)
			}
		}
	}
}

// wantReadPast fails unless a Read of id from seq from, after the damage,
// yields exactly want (the events past the damage, which verify): a
// salvage can keep them.
func wantReadPast(tb testing.TB, c checkpoint.Checkpointer, id string, from int64, want []session.Event) {
	tb.Helper()
	var got []session.Event
	for e, err := range c.Read(tb.Context(), id, from) {
		if err != nil {
			tb.Fatalf("read of damaged %s from seq %d, past the damage: %v after %d events; want the %d events there", id, from, err, len(got), len(want))
		}
		got = append(got, e)
	}
	if err := sameLog(want, got); err != nil {
		tb.Fatalf("read of damaged %s from seq %d, past the damage: %v", id, from, err)
	}
}

// wantCorrupt fails unless reading id yields exactly good and then a
// *checkpoint.CorruptError for seq.
func wantCorrupt(tb testing.TB, c checkpoint.Checkpointer, id string, good []session.Event, seq int64) {
	tb.Helper()
	var got []session.Event
	var rerr error
	n := 0
	for e, err := range c.Read(tb.Context(), id, 1) {
		n++
		if rerr != nil {
			tb.Fatalf("read %s went on after its error %v (element %d)", id, rerr, n)
		}
		if err != nil {
			rerr = err
			continue
		}
		got = append(got, e)
	}
	if err := sameLog(good, got); err != nil {
		tb.Fatalf("read of damaged %s before its error: %v", id, err)
	}
	ce, ok := checkpoint.IsCorrupt(rerr)
	switch {
	case rerr == nil:
		tb.Fatalf("read of damaged %s: %d events and no error, want a *checkpoint.CorruptError at seq %d", id, len(got), seq)
	case !ok || !errors.Is(rerr, checkpoint.ErrCorrupt):
		tb.Fatalf("read of damaged %s: error %v, want a *checkpoint.CorruptError wrapping checkpoint.ErrCorrupt", id, rerr)
	case ce.Session != id || ce.Seq != seq:
		tb.Fatalf("read of damaged %s: corruption reported for session %q at seq %d, want %q at seq %d (%v)", id, ce.Session, ce.Seq, id, seq, rerr)
	case ce.Reason == "":
		tb.Fatalf("read of damaged %s: the corruption error gives no reason", id)
	}
}
