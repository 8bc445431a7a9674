package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/sqlite"
	"github.com/lite-agent/lite-agent/session"
)

// TestDoctorReportsLeftoverMail: a mailbox entry whose session is gone (as
// a delete cut short by another program leaves it) is a doctor problem;
// --repair removes it, and a live session's mailbox is not one.
func TestDoctorReportsLeftoverMail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	s, err := sqlite.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	start := session.MustNew(session.TypeSessionStarted, session.SessionStarted{ID: "live", Namespace: "ns", Workdir: "/w"})
	if _, err := s.Append(ctx, "live", 0, []session.Event{start}); err != nil {
		t.Fatal(err)
	}
	if err := s.Post(ctx, "live", "c1", "approval", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := sqlDB(t, path).Exec(`INSERT INTO mailbox (session, call, kind, request, posted) VALUES ('gone', 'c9', 'approval', x'7b7d', 1)`); err != nil {
		t.Fatal(err)
	}
	for _, repair := range []bool{false, true} {
		rep, err := checkpoint.Doctor(ctx, s, checkpoint.DoctorOptions{Repair: repair})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Problems) != 1 || rep.Problems[0].Kind != checkpoint.ProblemMailOrphaned || rep.Problems[0].Session != "gone" || rep.Problems[0].Repaired != repair {
			t.Fatalf("doctor (repair %v): %+v; want one mailbox_orphaned problem of session gone", repair, rep.Problems)
		}
	}
	rep, err := checkpoint.Doctor(ctx, s, checkpoint.DoctorOptions{})
	if err != nil || len(rep.Problems) != 0 {
		t.Fatalf("doctor after the repair: %+v, %v; want no problem", rep, err)
	}
	if ids, err := s.Mailboxes(ctx); err != nil || len(ids) != 1 || ids[0] != "live" {
		t.Fatalf("mailboxes after the repair = %v, %v; want [live]", ids, err)
	}
}
