package checkpointtest

import (
	"context"
	"fmt"
	"testing"

	"github.com/lite-agent/lite-agent/checkpoint"
)

// doctorRounds is how many whole-store checks testDoctorDuringWrites runs
// while the other process appends.
const doctorRounds = 15

// testDoctorDuringWrites: the doctor, run again and again while another
// process appends to the store (the crash child, to a session of its own,
// as fast as it can), reports no problem: a log that grows between what the
// doctor reads first and what it compares it with is not damage.
func testDoctorDuringWrites(t *testing.T, b Backend) {
	loc := b.NewLocation(t)
	c := open(t, b, loc)
	for i := range 3 {
		create(t, c, fmt.Sprintf("quiet-%d", i), "ns", 5)
	}
	ctx, cancel := context.WithTimeout(t.Context(), concurrencyTimeout)
	defer cancel()
	ch := startChild(t, b, roleCrash, loc, "busy", fmt.Sprintf("%d %d", 7, 1<<10))
	// Started: it printed its first acknowledged event.
	if _, err := ch.waitLine(ctx, "1 "); err != nil {
		t.Fatal(err)
	}
	seen := 0
	for round := range doctorRounds {
		rep, err := checkpoint.Doctor(ctx, c, checkpoint.DoctorOptions{})
		if err != nil {
			t.Fatalf("doctor round %d while another process appends: %v", round, err)
		}
		if len(rep.Problems) != 0 {
			t.Fatalf("doctor round %d while another process appends found %d problems, the first: %+v", round, len(rep.Problems), rep.Problems[0])
		}
		if one, err := checkpoint.Doctor(ctx, c, checkpoint.DoctorOptions{Session: "busy"}); err != nil || len(one.Problems) != 0 {
			t.Fatalf("doctor of the busy session, round %d: %+v, %v", round, one, err)
		}
		seen = len(ch.out.lines())
	}
	ch.kill()
	if seen < 2 {
		t.Fatalf("the other process acknowledged %d events while the doctor ran; the check proves nothing", seen)
	}
}
