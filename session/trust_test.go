package session

import "testing"

// TestWorkdirChangedMovesTheSession: after a workdir_changed the summary
// names the new workdir, and a restore_started at the end of the log shows
// as restoring until a later event ends it.
func TestWorkdirChangedMovesTheSession(t *testing.T) {
	ev := func(seq int64, ty Type, p any) Event {
		e := MustNew(ty, p)
		e.Seq = seq
		return e
	}
	log := []Event{
		ev(1, TypeSessionStarted, SessionStarted{ID: "s", Namespace: "/a", Workdir: "/a"}),
		ev(2, TypeUserPrompt, UserPrompt{Text: "hi"}),
		ev(3, TypeTurnCompleted, TurnCompleted{}),
	}
	if s := Summarize("s", log); s.Workdir != "/a" || s.Status != StatusCompleted {
		t.Fatalf("before: workdir %q status %q", s.Workdir, s.Status)
	}
	log = append(log, ev(4, TypeWorkdirChanged, WorkdirChanged{From: "/a", To: "/b"}))
	st := Replay(log)
	if st.Summary.Workdir != "/b" || st.Summary.Namespace != "/a" {
		t.Fatalf("after workdir_changed: workdir %q namespace %q, want /b and /a", st.Summary.Workdir, st.Summary.Namespace)
	}
	log = append(log, ev(5, TypeRestoreStarted, RestoreStarted{ToSeq: 1, Head: 4}))
	if s := Replay(log).Summary; s.Status != StatusRestoring {
		t.Fatalf("status after restore_started = %q, want %q", s.Status, StatusRestoring)
	}
	// A workdir_changed without a target is damage, not a move.
	bad := append(log[:4:4], ev(5, TypeWorkdirChanged, WorkdirChanged{From: "/b"}))
	if s := Summarize("s", bad); s.Workdir != "/b" {
		t.Fatalf("an empty target moved the session to %q", s.Workdir)
	}
}
