package main

import (
	"database/sql"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"

	"github.com/lite-agent/lite-agent/internal/fakemodel"
	"github.com/lite-agent/lite-agent/session"
)

// TestDoctorRefoldsOldSummaries stamps the stored summaries of a SQLite
// store with an older fold version (as an older lite-agent left them) and
// checks that --sessions still lists what the logs say, --doctor names
// each as summary_old_fold, --doctor --repair stores the recomputed ones,
// and --doctor is clean afterwards.
func TestDoctorRefoldsOldSummaries(t *testing.T) {
	work := t.TempDir()
	db := filepath.Join(t.TempDir(), "s.db")
	srv := startModel(t, fakemodel.Reply{Text: "alpha done"}, fakemodel.Reply{Text: "beta done"})
	for _, p := range []string{"alpha task", "beta task"} {
		if code, _, errs := run(t, srv, work, "--session-db", db, p); code != 0 {
			t.Fatalf("%s: %d %s", p, code, errs)
		}
	}
	listing := func() string {
		t.Helper()
		code, out, errs := run(t, nil, work, "--session-db", db, "--sessions")
		if code != 0 {
			t.Fatalf("--sessions: %d %s", code, errs)
		}
		return out
	}
	before := listing()

	h, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := h.Query(`SELECT id, entry FROM sessions`)
	if err != nil {
		t.Fatal(err)
	}
	entries := map[string][]byte{}
	for rows.Next() {
		var id string
		var e []byte
		if err := rows.Scan(&id, &e); err != nil {
			t.Fatal(err)
		}
		entries[id] = e
	}
	rows.Close()
	var ids []string
	for id, e := range entries {
		// An entry ends with its fold version, a zigzag varint (1 is 0x02).
		if e[len(e)-1] != byte(2*session.FoldVersion) {
			t.Fatalf("entry of %s does not end with fold version %d: %x", id, session.FoldVersion, e)
		}
		e[len(e)-1] = byte(2 * (session.FoldVersion - 1)) // the version before
		if _, err := h.Exec(`UPDATE sessions SET entry = ? WHERE id = ?`, e, id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	h.Close()
	if len(ids) != 2 {
		t.Fatalf("%d sessions in the store, want 2", len(ids))
	}

	if got := listing(); got != before {
		t.Errorf("--sessions over old summaries:\n%s\nwant\n%s", got, before)
	}
	var list []struct{ ID, Title string }
	if err := json.Unmarshal([]byte(before), &list); err != nil || len(list) != 2 {
		t.Fatalf("listing %q: %v", before, err)
	}
	probs, code := runDoctor(t, work, db)
	if code != 1 {
		t.Fatalf("--doctor over old summaries: exit %d, want 1 (%+v)", code, probs)
	}
	var found []string
	for _, p := range probs {
		if p.Problem == "summary_old_fold" && !p.Repaired && p.Fix != "" {
			found = append(found, p.Session)
		}
	}
	slices.Sort(found)
	slices.Sort(ids)
	if !slices.Equal(found, ids) {
		t.Fatalf("--doctor reported summary_old_fold for %v, want %v: %+v", found, ids, probs)
	}
	probs, code = runDoctor(t, work, db, "--repair")
	if code != 0 || len(probs) != 2 || !probs[0].Repaired || !probs[1].Repaired {
		t.Fatalf("--doctor --repair: exit %d, problems %+v", code, probs)
	}
	if probs, code := runDoctor(t, work, db); code != 0 || len(probs) != 0 {
		t.Fatalf("--doctor after the repair: exit %d, problems %+v", code, probs)
	}
	if got := listing(); got != before {
		t.Errorf("--sessions after the repair:\n%s\nwant\n%s", got, before)
	}
}
