package file

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
)

// TestDoctorRepairs damages a file store four ways (a summary record that
// disagrees with its log, a session dropped from the index, a flipped byte
// in a log's middle frame, a flipped byte in a log's last frame) and checks
// that the doctor names each, that a repair fixes them without losing an
// event that verified (the damaged frames go to a side file, byte for
// byte), and that the doctor is then clean, also when repeated and from a
// fresh store on the same root.
func TestDoctorRepairs(t *testing.T) {
	root := t.TempDir() + "/store"
	s := newStore(t, root)
	ctx := t.Context()
	const n = 6
	logs := map[string][]session.Event{}
	for _, id := range []string{"stale", "unindexed", "middle", "last", "healthy"} {
		head := mustAppend(t, s, id, 0, startedEv(id, "ns"))
		for i := range n - 1 {
			head = mustAppend(t, s, id, head, promptEv(fmt.Sprintf("%s prompt %d", id, i)))
		}
		got, err := checkpoint.ReadAll(ctx, s, id)
		if err != nil {
			t.Fatal(err)
		}
		logs[id] = got
	}
	if rep, err := checkpoint.Doctor(ctx, s, checkpoint.DoctorOptions{}); err != nil || len(rep.Problems) != 0 {
		t.Fatalf("doctor of a healthy store: %+v, %v", rep, err)
	}
	// A summary record that disagrees with its log, and a delete record
	// for a session whose log stays.
	folder := folderFor("ns")
	ix := s.ns(folder)
	ix.mu.Lock()
	wrong := ix.entries["stale"].st
	ix.mu.Unlock()
	wrong.sum.Title, wrong.sum.Messages = "not what the log says", 99
	if err := ix.acquireShared(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ix.write(indexRecord{kind: recSummary, id: "stale", st: wrong}, indexRecord{kind: recDelete, id: "unindexed"}); err != nil {
		t.Fatal(err)
	}
	ix.syncRecords()
	ix.releaseShared()
	flip := func(id string, seq int64) {
		t.Helper()
		path := s.logPath(folder, id)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		// Frames follow the header one per append; find seq's by reading.
		fr := newFrameReader(bytes.NewReader(b), path, logHeaderLen, int64(len(b)))
		for {
			off := fr.off
			h, _, _, ok, _, _ := fr.next()
			if !ok {
				t.Fatalf("no frame for seq %d in %s", seq, path)
			}
			if h.firstSeq == seq {
				b[off+frameHeaderLen+2] ^= 0x20
				break
			}
		}
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	flip("middle", 3)
	flip("last", n)
	middleLog, _ := os.ReadFile(s.logPath(folder, "middle"))

	for _, opts := range []*Options{{ReadOnly: true}, nil} {
		c, err := Open(root, opts)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := checkpoint.Doctor(ctx, c, checkpoint.DoctorOptions{})
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, p := range rep.Problems {
			got[p.Session] = p.Kind
			if p.Repaired || p.Fix == "" {
				t.Errorf("problem %+v", p)
			}
		}
		want := map[string]string{"stale": checkpoint.ProblemSummaryStale, "unindexed": checkpoint.ProblemSummaryLost,
			"middle": checkpoint.ProblemCorrupt, "last": checkpoint.ProblemCorrupt}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("doctor (read-only %v) found %v, want %v: %+v", opts != nil, got, want, rep.Problems)
		}
	}
	rep, err := checkpoint.Doctor(ctx, s, checkpoint.DoctorOptions{Repair: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rep.Problems {
		if !p.Repaired {
			t.Errorf("not repaired: %+v", p)
		}
	}
	for range 2 {
		if rep, err := checkpoint.Doctor(ctx, s, checkpoint.DoctorOptions{Repair: true}); err != nil || len(rep.Problems) != 0 {
			t.Fatalf("doctor after the repair: %+v, %v", rep, err)
		}
	}
	fresh := newStore(t, root)
	if rep, err := checkpoint.Doctor(ctx, fresh, checkpoint.DoctorOptions{}); err != nil || len(rep.Problems) != 0 {
		t.Fatalf("doctor of a fresh store after the repair: %+v, %v", rep, err)
	}
	for id, log := range logs {
		keep := log
		switch id {
		case "middle":
			keep = log[:2]
		case "last":
			keep = log[:n-1]
		}
		got, err := checkpoint.ReadAll(ctx, fresh, id)
		if err != nil || len(got) != len(keep) {
			t.Fatalf("%s after the repair: %d events, %v; want %d", id, len(got), err, len(keep))
		}
		for i := range keep {
			if got[i].Seq != keep[i].Seq || string(got[i].Data) != string(keep[i].Data) {
				t.Fatalf("%s event %d changed in the repair", id, i+1)
			}
		}
		if sum, err := fresh.Head(ctx, id); err != nil || sum.Head != int64(len(keep)) || sum.Title != session.Summarize(id, keep).Title {
			t.Fatalf("%s's summary after the repair: %+v, %v", id, sum, err)
		}
	}
	// The moved bytes are the log's from the damaged frame on.
	side, err := os.ReadFile(s.QuarantinePath("middle", 3))
	kept, _ := os.ReadFile(s.logPath(folder, "middle"))
	if err != nil || string(kept)+string(side) != string(middleLog) {
		t.Fatalf("the side file (%d bytes, %v) and the kept log (%d bytes) are not the damaged log (%d bytes)", len(side), err, len(kept), len(middleLog))
	}
	// The repaired sessions take appends again.
	if _, err := fresh.Append(context.Background(), "middle", 2, []session.Event{promptEv("after the repair")}); err != nil {
		t.Fatalf("append after the repair: %v", err)
	}
}
