package postgres_test

import (
	"fmt"
	"testing"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/postgres"
	"github.com/lite-agent/lite-agent/session"
)

// doctorLogs writes five sessions of n prompts each, one Append per event,
// and returns their logs by name.
func doctorLogs(t *testing.T, s *postgres.Store, n int) map[string][]session.Event {
	t.Helper()
	logs := map[string][]session.Event{}
	for _, name := range []string{"stale", "rowless", "unindexed", "flipped", "cut", "healthy"} {
		log := []session.Event{started(name)}
		head, err := s.Append(t.Context(), name, 0, log)
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			e := promptEvent(fmt.Sprintf("%s prompt %d", name, i))
			if head, err = s.Append(t.Context(), name, head, []session.Event{e}); err != nil {
				t.Fatal(err)
			}
			log = append(log, e)
		}
		stored, err := checkpoint.ReadAll(t.Context(), s, name)
		if err != nil {
			t.Fatal(err)
		}
		logs[name] = stored
	}
	return logs
}

// TestDoctorRepairs damages a PostgreSQL store five ways (a stale summary,
// a deleted session row, a deleted index row, a flipped byte in the last
// event, the last events deleted) and checks that the doctor names each,
// that a repair fixes them without losing an event that verified (the
// damaged row goes to the quarantine table), and that the doctor is then
// clean, and stays clean when the repair is repeated.
func TestDoctorRepairs(t *testing.T) {
	loc := newSchema(t)
	s := openStore(t, loc, nil)
	const n = 5
	logs := doctorLogs(t, s, n)
	if rep, err := checkpoint.Doctor(t.Context(), s, checkpoint.DoctorOptions{}); err != nil || len(rep.Problems) != 0 || rep.Sessions != len(logs) {
		t.Fatalf("doctor of a healthy store: %+v, %v", rep, err)
	}
	execSQL(t, loc, `UPDATE sessions SET entry = (SELECT entry FROM sessions WHERE id = 'healthy') WHERE id = 'stale'`)
	execSQL(t, loc, `DELETE FROM sessions WHERE id = 'rowless'`)
	execSQL(t, loc, `DELETE FROM search_index WHERE session = 'unindexed' AND seq = 3`)
	execSQL(t, loc, `UPDATE events SET data = set_byte(data, 2, get_byte(data, 2) # 1) WHERE session = 'flipped' AND seq = $1`, n+1)
	execSQL(t, loc, `DELETE FROM events WHERE session = 'cut' AND seq > 3`)

	ro := openStore(t, loc, &postgres.Options{ReadOnly: true})
	rep, err := checkpoint.Doctor(t.Context(), ro, checkpoint.DoctorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"stale": checkpoint.ProblemSummaryStale, "rowless": checkpoint.ProblemSummaryLost,
		"unindexed": checkpoint.ProblemIndexStale, "flipped": checkpoint.ProblemCorrupt, "cut": checkpoint.ProblemCorrupt}
	got := map[string]string{}
	for _, p := range rep.Problems {
		if p.Repaired || p.Fix == "" || p.Detail == "" {
			t.Errorf("problem %+v", p)
		}
		got[p.Session] = p.Kind
	}
	for id, kind := range want {
		if got[id] != kind {
			t.Errorf("doctor found %q for %s, want %q (all: %+v)", got[id], id, kind, rep.Problems)
		}
	}
	if len(got) != len(want) {
		t.Errorf("doctor found problems in %d sessions, want %d: %+v", len(got), len(want), rep.Problems)
	}
	if _, err := checkpoint.Doctor(t.Context(), ro, checkpoint.DoctorOptions{Repair: true}); err == nil {
		t.Fatal("a repair through a read-only store did not fail")
	}

	rep, err = checkpoint.Doctor(t.Context(), s, checkpoint.DoctorOptions{Repair: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rep.Problems {
		if !p.Repaired {
			t.Errorf("not repaired: %+v", p)
		}
	}
	for range 2 { // clean, and the repair is idempotent
		if rep, err := checkpoint.Doctor(t.Context(), s, checkpoint.DoctorOptions{Repair: true}); err != nil || len(rep.Problems) != 0 {
			t.Fatalf("doctor after the repair: %+v, %v", rep, err)
		}
	}
	// Every event that verified is still there; the damaged row is in
	// quarantine.
	for id, log := range logs {
		keep := log
		switch id {
		case "flipped":
			keep = log[:n]
		case "cut":
			keep = log[:3]
		}
		got, err := checkpoint.ReadAll(t.Context(), s, id)
		if err != nil || len(got) != len(keep) {
			t.Fatalf("%s after the repair: %d events, %v; want %d", id, len(got), err, len(keep))
		}
		for i := range keep {
			if got[i].Seq != keep[i].Seq || string(got[i].Data) != string(keep[i].Data) {
				t.Fatalf("%s event %d changed in the repair", id, i+1)
			}
		}
		if sum, err := s.Head(t.Context(), id); err != nil || sum.Head != int64(len(keep)) || sum.Messages != len(keep)-1 {
			t.Fatalf("%s's summary after the repair: %+v, %v", id, sum, err)
		}
	}
	if q := queryInt(t, loc, `SELECT count(*) FROM quarantine WHERE session = 'flipped' AND seq = $1`, n+1); q != 1 {
		t.Fatalf("the flipped event is not in quarantine (%d rows)", q)
	}
	q, err := checkpoint.ParseQuery("unindexed prompt 1")
	if err != nil {
		t.Fatal(err)
	}
	hits, err := s.Search(t.Context(), q, checkpoint.SearchOptions{})
	if err != nil || len(hits) == 0 {
		t.Fatalf("search after the index repair: %v, %v", hits, err)
	}
}
