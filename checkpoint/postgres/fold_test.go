package postgres_test

import (
	"bytes"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/checkpointtest"
	"github.com/lite-agent/lite-agent/checkpoint/internal/entry"
	"github.com/lite-agent/lite-agent/checkpoint/postgres"
	"github.com/lite-agent/lite-agent/session"
)

// storeSummary overwrites a session's stored summary through a connection
// of its own, as another lite-agent would have left it: with a new etag,
// as its appends do.
func storeSummary(tb testing.TB, _ checkpoint.Checkpointer, loc, id string, s session.Summary) {
	tb.Helper()
	execSQL(tb, loc, `UPDATE sessions SET entry = $1, messages = $2, etag = etag + 1 WHERE id = $3`, entry.Encode(&s), s.Messages, id)
}

// TestNewerEntryFormat plants a summary entry of the next entry format (as
// a newer lite-agent would write one) and checks that a writable and a
// read-only store refuse it in words that say to upgrade, while another
// session goes on (checkpointtest.CheckRefusesNewer); the entry is left
// byte for byte.
func TestNewerEntryFormat(t *testing.T) {
	loc := newSchema(t)
	ctx := t.Context()
	s, err := postgres.Open(ctx, loc, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b"} {
		start := session.MustNew(session.TypeSessionStarted, session.SessionStarted{ID: id, Namespace: "ns"})
		if _, err := s.Append(ctx, id, 0, []session.Event{start, session.MustNew(session.TypeUserPrompt, session.UserPrompt{Text: "hi"})}); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	newer := []byte{entry.Version + 1, 3, 'x', 'y', 'z'}
	execSQL(t, loc, `UPDATE sessions SET entry = $1, etag = etag + 1 WHERE id = 'a'`, newer)
	bHead := int64(2)
	for _, ro := range []bool{false, true} {
		s, err := postgres.Open(ctx, loc, &postgres.Options{ReadOnly: ro})
		if err != nil {
			t.Fatal(err)
		}
		checkpointtest.CheckRefusesNewer(t, s, "a", "ns", 2, "b", &bHead, ro)
		s.Close()
	}
	conn, err := pgx.Connect(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var got []byte
	if err := conn.QueryRow(ctx, `SELECT entry FROM sessions WHERE id = 'a'`).Scan(&got); err != nil || !bytes.Equal(got, newer) {
		t.Fatalf("the newer entry is now %x (%v), want it left as %x", got, err, newer)
	}
}

// TestWriteBackAfterAppend recomputes a stale summary as a reader does and
// lets another store append to the session between the read of the log
// and the write-back: the write-back must not store its fold (of a shorter
// log) over the appended session's summary. With nothing in between it
// stores it.
func TestWriteBackAfterAppend(t *testing.T) {
	loc := newSchema(t)
	ctx := t.Context()
	s, other := openStore(t, loc, nil), openStore(t, loc, nil)
	start := session.MustNew(session.TypeSessionStarted, session.SessionStarted{ID: "s", Namespace: "ns"})
	log := []session.Event{start, session.MustNew(session.TypeUserPrompt, session.UserPrompt{Text: "first"})}
	if _, err := s.Append(ctx, "s", 0, log); err != nil {
		t.Fatal(err)
	}
	for i := range log {
		log[i].Seq = int64(i + 1)
	}
	stale := func() {
		old := session.Summarize("s", log)
		old.Fold, old.Title = session.FoldVersion-1, "stale"
		storeSummary(t, s, loc, "s", old)
	}
	stale()
	next := session.MustNew(session.TypeUserPrompt, session.UserPrompt{Text: "second"})
	wrote, err := postgres.WriteBackAfter(ctx, s, "s", func() {
		if _, err := other.Append(ctx, "s", 2, []session.Event{next}); err != nil {
			t.Fatal(err)
		}
	})
	if err != nil || wrote {
		t.Fatalf("a write-back after another store's append: wrote %v, %v; want it left alone", wrote, err)
	}
	next.Seq = 3
	log = append(log, next)
	fresh := openStore(t, loc, &postgres.Options{ReadOnly: true}) // no cache, no write-back
	got, err := fresh.Head(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if want := session.Summarize("s", log); got.Head != 3 || got.Title != want.Title || got.Fold != session.FoldVersion {
		t.Fatalf("after the append the summary is %+v, want %+v", got, want)
	}
	if rep, err := checkpoint.Doctor(ctx, fresh, checkpoint.DoctorOptions{}); err != nil || len(rep.Problems) != 0 {
		t.Fatalf("doctor: %+v, %v", rep, err)
	}

	stale()
	if wrote, err := postgres.WriteBackAfter(ctx, s, "s", func() {}); err != nil || !wrote {
		t.Fatalf("a write-back with nothing in between: wrote %v, %v", wrote, err)
	}
	if rep, err := checkpoint.Doctor(ctx, fresh, checkpoint.DoctorOptions{}); err != nil || len(rep.Problems) != 0 {
		t.Fatalf("doctor after the write-back: %+v, %v", rep, err)
	}
}
