package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/internal/fakemodel"
)

// TestPrune: --prune goes by the last event's time, keeps the newest
// --keep sessions and the parents of kept forks, --dry-run changes no byte,
// and a real prune's archive imports back to identical logs.
func TestPrune(t *testing.T) {
	work := t.TempDir()
	dir := t.TempDir()
	db := filepath.Join(dir, "s.db")
	srv := startModel(t, fakemodel.Reply{Text: "a done"}, fakemodel.Reply{Text: "b done"}, fakemodel.Reply{Text: "c done"}, fakemodel.Reply{Text: "fork done"})
	var ids []string
	for _, p := range []string{"task a", "task b", "task c"} {
		if code, _, errs := run(t, srv, work, "--session-db", db, p); code != 0 {
			t.Fatalf("%s: %d %s", p, code, errs)
		}
		code, out, _ := run(t, nil, work, "--session-db", db, "--sessions")
		var list []struct{ ID string }
		if code != 0 || json.Unmarshal([]byte(out), &list) != nil {
			t.Fatal(out)
		}
		ids = append(ids, list[0].ID) // newest first
	}
	a, b, cc := ids[0], ids[1], ids[2]
	// A fork of a, continued so that it is the newest: kept by --keep 1,
	// it keeps a.
	code, out, errs := run(t, nil, work, "--session-db", db, "--fork", a)
	var fork struct{ ID string }
	if code != 0 || json.Unmarshal([]byte(out), &fork) != nil {
		t.Fatalf("--fork: %d %s", code, errs)
	}
	if code, _, errs := run(t, srv, work, "--session-db", db, "--resume", fork.ID, "go on"); code != 0 {
		t.Fatalf("resume the fork: %d %s", code, errs)
	}
	exports := map[string]string{}
	for _, id := range ids {
		_, exports[id], _ = run(t, nil, work, "--session-db", db, "--export", id)
	}
	time.Sleep(50 * time.Millisecond)

	before, _ := os.ReadFile(db)
	entriesBefore := names(t, dir)
	code, out, errs = run(t, nil, work, "--session-db", db, "--prune", "--older-than", "10ms", "--keep", "1", "--dry-run")
	var dry struct {
		WouldRemove []string `json:"would_remove"`
		Kept        []struct{ ID, Reason string }
	}
	if code != 0 || json.Unmarshal([]byte(out), &dry) != nil {
		t.Fatalf("--dry-run: %d %q %q", code, out, errs)
	}
	if strings.Join(dry.WouldRemove, ",") != cc+","+b || len(dry.Kept) != 1 || dry.Kept[0].ID != a || !strings.Contains(dry.Kept[0].Reason, "fork") {
		t.Fatalf("--dry-run would remove %v and keep %+v; want %s,%s removed and %s kept for its fork", dry.WouldRemove, dry.Kept, cc, b, a)
	}
	after, _ := os.ReadFile(db)
	if !bytes.Equal(before, after) {
		t.Fatal("--dry-run changed the database")
	}
	if after := names(t, dir); after != entriesBefore {
		t.Fatalf("--dry-run wrote files: %s, before it %s", after, entriesBefore)
	}

	code, out, errs = run(t, nil, work, "--session-db", db, "--prune", "--older-than", "10ms", "--keep", "1")
	var res struct {
		Removed []string
		Archive string
	}
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || len(res.Removed) != 2 || res.Archive == "" {
		t.Fatalf("--prune: %d %q %q", code, out, errs)
	}
	for _, id := range []string{b, cc} {
		if code, _, _ := run(t, nil, work, "--session-db", db, "--session-info", id); code == 0 {
			t.Errorf("%s is still there after the prune", id)
		}
	}
	if code, _, _ := run(t, nil, work, "--session-db", db, "--session-info", a); code != 0 {
		t.Errorf("the fork's parent %s was removed", a)
	}
	// The archive imports back to the very same logs, marked as imported.
	db2 := filepath.Join(t.TempDir(), "back.db")
	if code, out, errs := run(t, nil, work, "--session-db", db2, "--import", res.Archive); code != 0 || !strings.Contains(out, b) || !strings.Contains(out, cc) {
		t.Fatalf("--import the archive: %d %q %q", code, out, errs)
	}
	for _, id := range []string{b, cc} {
		_, got, _ := run(t, nil, work, "--session-db", db2, "--export", id)
		sameButImportMark(t, got, exports[id], res.Archive, true)
	}
	for _, bad := range [][]string{
		{"--session-db", db, "--prune"},                      // no --older-than: nothing by default
		{"--session-db", db, "--older-than", "1h"},           // without --prune
		{"--session-db", db, "--prune", "--older-than", "x"}, // a bad duration
		{"--prune", "--older-than", "1h"},                    // no database
	} {
		if code, _, errs := run(t, nil, work, bad...); code != 2 || !strings.Contains(errs, "lite-agent:") {
			t.Errorf("%v: exit %d %q, want 2", bad, code, errs)
		}
	}
}

// names lists the entries of dir, one string.
func names(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return strings.Join(out, " ")
}
