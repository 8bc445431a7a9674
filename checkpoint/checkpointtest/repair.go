package checkpointtest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
)

// testRepairDuringWrites: --doctor --repair of a store with a flipped byte
// in the middle of one log, while another process appends to a session of
// its own and a third starts appending to the damaged log as the repair
// begins. The repair moves the damaged tail (with what that writer
// appended after the damage) to the side file and keeps the events before
// it; every event the other writer acknowledged is in its
// log; the damaged log's writer is refused with an error that names the
// damage (before the cut) or the cut (a stale head), or appends after the
// kept events, and what it acknowledged is in the log; the doctor then
// finds nothing.
func testRepairDuringWrites(t *testing.T, b Backend) {
	if b.Damage == nil || b.Quarantined == nil {
		t.Skip("the backend has no Damage or Quarantined hook")
	}
	loc := b.NewLocation(t)
	c := open(t, b, loc)
	create(t, c, "quiet", "ns", 5)
	const damagedAt, length = 10, 20
	orig := create(t, c, "damaged", "ns", 0)
	for i := range length - 1 { // one append per event: one frame per event in a log file
		e := numbered(int64(i+1), prompt(fmt.Sprintf("prompt %d of damaged", i+1)))[0]
		mustAppend(t, c, "damaged", int64(i+1), e)
		orig = append(orig, e)
	}
	b.Damage(t, c, loc, "damaged", FlipByte, damagedAt)
	ctx, cancel := context.WithTimeout(t.Context(), concurrencyTimeout)
	defer cancel()
	own := startChild(t, b, roleCrash, loc, "busy", fmt.Sprintf("%d %d", 12, 1<<10))
	if _, err := own.waitLine(ctx, "1 "); err != nil {
		t.Fatalf("the other writer did not start: %v", err)
	}
	onDamaged := startChild(t, b, roleCrash, loc, "damaged", fmt.Sprintf("%d %d", 11, 1<<10))
	rep, err := checkpoint.Doctor(ctx, c, checkpoint.DoctorOptions{Repair: true})
	if err != nil {
		t.Fatalf("repair while other processes append: %v", err)
	}
	var cut *checkpoint.Problem
	for i, p := range rep.Problems {
		switch {
		case p.Session == "damaged" && p.Kind == checkpoint.ProblemCorrupt:
			cut = &rep.Problems[i]
		case p.Session == "damaged" && (p.Kind == checkpoint.ProblemSummaryStale || p.Kind == checkpoint.ProblemIndexStale):
			// the summary and index rows of the log cut short, rebuilt
			// with it
		default:
			t.Errorf("repair while other processes append found %+v", p)
		}
	}
	if cut == nil || !cut.Repaired || cut.Seq != damagedAt {
		t.Fatalf("repair while other processes append: %+v; want the damage at seq %d repaired", rep.Problems, damagedAt)
	}
	// The damaged log's writer was refused before the cut, or appends
	// after it.
	if _, err := onDamaged.waitLine(ctx, fmt.Sprint(damagedAt, " ")); err == nil {
		t.Log("the damaged log's writer appended after the cut")
	} else {
		t.Logf("the damaged log's writer was refused: %s", strings.TrimSpace(onDamaged.stderr.String()))
		// Refused at the damage, or as a stale writer once the log was cut.
		if msg := onDamaged.stderr.String(); !strings.Contains(msg, "damaged at seq") && !strings.Contains(msg, fmt.Sprintf(", found %d", damagedAt-1)) {
			t.Errorf("the damaged log's writer stopped with %q, want an error naming the damage or the cut", msg)
		}
	}
	n := len(own.out.lines())
	if _, err := own.waitLine(ctx, fmt.Sprint(n+3, " ")); err != nil {
		t.Fatalf("the other writer after the repair: %v", err)
	}
	own.kill()
	onDamaged.kill()

	log := readAll(t, c, "damaged", 1)
	if len(log) < damagedAt-1 {
		t.Fatalf("the damaged log keeps %d events, want the %d before the damage", len(log), damagedAt-1)
	}
	if err := sameLog(orig[:damagedAt-1], log[:damagedAt-1]); err != nil {
		t.Errorf("the kept log: %v", err)
	}
	side := b.Quarantined(t, c, loc, "damaged", damagedAt)
	moved := map[int64]string{}
	for _, e := range side {
		moved[e.Seq] = digest(e.Data)
	}
	for _, e := range orig[damagedAt:] {
		if moved[e.Seq] != digest(e.Data) {
			t.Errorf("event %d of the damaged log is not in the side file", e.Seq)
		}
	}
	// What it acknowledged before the cut was moved with the tail.
	checkAcknowledged(t, "the damaged log's writer", onDamaged, false, digests(log), moved)
	checkAcknowledged(t, "the other writer", own, true, digests(readAll(t, c, "busy", 1)))
	if rep, err := checkpoint.Doctor(ctx, c, checkpoint.DoctorOptions{}); err != nil || len(rep.Problems) != 0 {
		t.Errorf("doctor after the repair: %+v, %v", rep, err)
	}
}

// digests maps each event of log to the digest of its data.
func digests(log []session.Event) map[int64]string {
	out := make(map[int64]string, len(log))
	for _, e := range log {
		out[e.Seq] = digest(e.Data)
	}
	return out
}

// checkAcknowledged fails unless every event ch acknowledged ("<seq>
// <sha256>" lines) is in one of stored, by seq, with the same data; with
// some, ch must have acknowledged something.
func checkAcknowledged(t *testing.T, who string, ch *child, some bool, stored ...map[int64]string) {
	t.Helper()
	lines := ch.out.lines()
	if some && len(lines) == 0 {
		t.Fatalf("%s acknowledged nothing; the check proves nothing", who)
	}
	for _, l := range lines {
		var seq int64
		var sum string
		if _, err := fmt.Sscan(l, &seq, &sum); err != nil {
			t.Fatalf("%s printed %q: %v", who, l, err)
		}
		if !slices.ContainsFunc(stored, func(m map[int64]string) bool { return m[seq] == sum }) {
			t.Errorf("%s acknowledged event %d, which is lost", who, seq)
		}
	}
}
