package sqlite_test

import (
	"bytes"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/checkpointtest"
	"github.com/lite-agent/lite-agent/checkpoint/sqlite"
	"github.com/lite-agent/lite-agent/session"
)

// damage changes the events table of the database at loc through a
// connection of its own, as another program (or a bad disk) could.
func damage(tb testing.TB, _ checkpoint.Checkpointer, loc, id string, d checkpointtest.Damage, seq int64) {
	tb.Helper()
	db := sqlDB(tb, loc)
	const key = `(SELECT n FROM sessions WHERE id = ?) << 32 | ?`
	var err error
	switch d {
	case checkpointtest.FlipByte:
		var data []byte
		if err = db.QueryRow(`SELECT data FROM events WHERE key = `+key, id, seq).Scan(&data); err == nil {
			data[len(data)/2] ^= 0x20
			_, err = db.Exec(`UPDATE events SET data = ? WHERE key = `+key, data, id, seq)
		}
	case checkpointtest.DropEvent:
		_, err = db.Exec(`DELETE FROM events WHERE key = `+key, id, seq)
	case checkpointtest.CutLog:
		_, err = db.Exec(`DELETE FROM events WHERE key >= `+key+` AND key < (SELECT n + 1 FROM sessions WHERE id = ?) << 32`, id, seq, id)
	default:
		tb.Fatalf("unknown damage %v", d)
	}
	if err != nil {
		tb.Fatalf("damage %s: %v", loc, err)
	}
}

// TestUpgradeSchema1 checks that a database written by the previous schema
// (version 1: events without checksums) is read as it is by a read-only
// store, and upgraded by a writable one: every stored event gets its
// checksum in the same migration, the log reads back unchanged, and damage
// made after the upgrade is caught.
func TestUpgradeSchema1(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "sessions.db")
	s, err := sqlite.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	events := []session.Event{session.MustNew(session.TypeSessionStarted, session.SessionStarted{ID: "old", Namespace: "ns"})}
	for i := range 1500 { // more than one backfill batch
		events = append(events, session.MustNew(session.TypeUserPrompt, session.UserPrompt{Text: "prompt " + string(rune('a'+i%26))}))
	}
	if _, err := s.Append(ctx, "old", 0, events); err != nil {
		t.Fatal(err)
	}
	want, err := checkpoint.ReadAll(ctx, s, "old")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Make it the database version 1 wrote: the same tables without crc.
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`ALTER TABLE events DROP COLUMN crc; PRAGMA user_version = 1`); err != nil {
		t.Fatal(err)
	}
	db.Close()

	readAll := func(s *sqlite.Store) []session.Event {
		t.Helper()
		got, err := checkpoint.ReadAll(ctx, s, "old")
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	same := func(what string, got []session.Event) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %d events, want %d", what, len(got), len(want))
		}
		for i := range got {
			if got[i].Seq != want[i].Seq || got[i].Type != want[i].Type || !got[i].Time.Equal(want[i].Time) || !bytes.Equal(got[i].Data, want[i].Data) {
				t.Fatalf("%s: event %d differs: %+v, want %+v", what, i+1, got[i], want[i])
			}
		}
	}
	ro, err := sqlite.Open(path, &sqlite.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("read-only open of a version 1 database: %v", err)
	}
	same("read-only, version 1", readAll(ro))
	ro.Close()

	s, err = sqlite.Open(path, nil)
	if err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	same("after the upgrade", readAll(s))
	if _, err := s.Append(ctx, "old", int64(len(want)), []session.Event{session.MustNew(session.TypeUserPrompt, session.UserPrompt{Text: "new"})}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	var version, missing int64
	check := sqlDB(t, path)
	if err := check.QueryRow(`SELECT (SELECT user_version FROM pragma_user_version), (SELECT count(*) FROM events WHERE crc IS NULL)`).Scan(&version, &missing); err != nil {
		t.Fatal(err)
	}
	if version != 2 || missing != 0 {
		t.Fatalf("after the upgrade: schema version %d, %d events without a checksum; want 2 and 0", version, missing)
	}
	damage(t, nil, path, "old", checkpointtest.FlipByte, 700)
	s, err = sqlite.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := checkpoint.ReadAll(ctx, s, "old")
	var ce *checkpoint.CorruptError
	if !errors.As(err, &ce) || ce.Seq != 700 || len(got) != 699 {
		t.Fatalf("read after damaging a backfilled event: %d events, error %v; want 699 and corruption at seq 700", len(got), err)
	}
}
