package postgres_test

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
)

// writeVersion1 creates the version 1 tables at loc, as a build from before
// version 2 left them, holding the sessions of logs.
func writeVersion1(tb testing.TB, loc string, logs map[string][]session.Event) {
	tb.Helper()
	init, err := os.ReadFile("migrations/0001_init.sql")
	if err != nil {
		tb.Fatal(err)
	}
	execSQL(tb, loc, string(init))
	execSQL(tb, loc, `CREATE TABLE schema_version (version integer PRIMARY KEY, name text NOT NULL, applied timestamptz NOT NULL DEFAULT now())`)
	execSQL(tb, loc, `INSERT INTO schema_version (version, name) VALUES (1, '0001_init.sql')`)
	for id, log := range logs {
		for _, e := range log {
			execSQL(tb, loc, `INSERT INTO events (session, seq, type, time, data) VALUES ($1, $2, $3, $4, $5)`,
				id, e.Seq, string(e.Type), e.Time, e.Data)
		}
		sum := session.Summarize(id, log)
		js, err := json.Marshal(sum)
		if err != nil {
			tb.Fatal(err)
		}
		execSQL(tb, loc, `INSERT INTO sessions (id, namespace, kind, head, messages, status, created, updated, summary, generation, etag, max_data)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 1, 1, 100)`,
			id, sum.Namespace, sum.Kind, sum.Head, sum.Messages, string(sum.Status), sum.Created, sum.Updated, string(js))
	}
}

// TestMigrateFromVersion1 opens tables written at version 1 and checks that
// the upgrade keeps every session's summary, log and appendability.
func TestMigrateFromVersion1(t *testing.T) {
	full := transferLog("full")
	open := transferLog("open")[:4] // a tool started, not finished
	logs := map[string][]session.Event{"full": full, "open": open}
	loc := newSchema(t)
	writeVersion1(t, loc, logs)

	s := openStore(t, loc, nil)
	if v := queryInt(t, loc, `SELECT max(version) FROM schema_version`); v != 4 {
		t.Fatalf("schema version after the upgrade is %d, want 4", v)
	}
	if n := queryInt(t, loc, `SELECT count(*) FROM events WHERE crc IS NULL`); n != 0 {
		t.Fatalf("%d events without a checksum after the upgrade, want none", n)
	}
	for id, log := range logs {
		sum, err := s.Head(t.Context(), id)
		if err != nil {
			t.Fatalf("head %s: %v", id, err)
		}
		if diff := cmp.Diff(session.Summarize(id, log), sum); diff != "" {
			t.Fatalf("head %s after the upgrade (-want +got):\n%s", id, diff)
		}
		var got []session.Event
		for e, err := range s.Read(t.Context(), id, 1) {
			if err != nil {
				t.Fatalf("read %s: %v", id, err)
			}
			got = append(got, e)
		}
		if diff := cmp.Diff(log, got, exactEvent); diff != "" {
			t.Fatalf("log of %s after the upgrade (-want +got):\n%s", id, diff)
		}
	}
	list, err := s.List(t.Context(), "transfer", checkpoint.ListOptions{AllKinds: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 {
		t.Fatalf("list after the upgrade has %d sessions, want 2", len(list))
	}
	for _, sum := range list {
		if diff := cmp.Diff(session.Summarize(sum.ID, logs[sum.ID]), sum); diff != "" {
			t.Fatalf("listed summary of %s after the upgrade (-want +got):\n%s", sum.ID, diff)
		}
	}

	more := session.MustNew(session.TypeToolFinished, session.ToolFinished{CallID: "c1", Tool: "read", Output: "done"})
	head, err := s.Append(t.Context(), "open", int64(len(open)), []session.Event{more})
	if err != nil {
		t.Fatalf("append after the upgrade: %v", err)
	}
	var log []session.Event
	for e, err := range s.Read(t.Context(), "open", 1) {
		if err != nil {
			t.Fatal(err)
		}
		log = append(log, e)
	}
	sum, err := s.Head(t.Context(), "open")
	if err != nil {
		t.Fatal(err)
	}
	if head != 5 || len(log) != 5 {
		t.Fatalf("append after the upgrade: head %d, log of %d events, want 5", head, len(log))
	}
	if diff := cmp.Diff(session.Summarize("open", log), sum); diff != "" {
		t.Fatalf("head after an append to an upgraded session (-want +got):\n%s", diff)
	}
	if len(sum.Open) != 0 {
		t.Fatalf("open calls after the tool finished: %v, want none", sum.Open)
	}
	// The backfilled checksums are checked: a changed byte in an event
	// stored before the upgrade is caught.
	execSQL(t, loc, `UPDATE events SET data = set_byte(data, 1, get_byte(data, 1) # 32) WHERE session = 'full' AND seq = 2`)
	got, err := checkpoint.ReadAll(t.Context(), openStore(t, loc, nil), "full")
	if ce, ok := checkpoint.IsCorrupt(err); !ok || ce.Seq != 2 || len(got) != 1 {
		t.Fatalf("read of an upgraded log damaged at seq 2: %d events, error %v; want 1 event and corruption at seq 2", len(got), err)
	}
}
