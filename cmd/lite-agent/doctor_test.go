package main

import (
	"bufio"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/internal/fakemodel"
	_ "modernc.org/sqlite"
)

type problemJSON struct {
	Session  string `json:"session"`
	Seq      int64  `json:"seq"`
	Problem  string `json:"problem"`
	Fix      string `json:"fix"`
	Repaired bool   `json:"repaired"`
}

// runDoctor runs --doctor (with more args) and returns its problems and
// its exit status.
func runDoctor(t *testing.T, work, db string, args ...string) ([]problemJSON, int) {
	t.Helper()
	code, out, errs := run(t, nil, work, append([]string{"--session-db", db, "--doctor"}, args...)...)
	var probs []problemJSON
	sc := bufio.NewScanner(strings.NewReader(out))
	last := ""
	for sc.Scan() {
		last = sc.Text()
		var p problemJSON
		if err := json.Unmarshal([]byte(last), &p); err != nil {
			t.Fatalf("--doctor printed a line that is not JSON: %q (stderr %q)", last, errs)
		}
		if p.Problem != "" {
			probs = append(probs, p)
		}
	}
	if !strings.Contains(last, `"sessions":`) {
		t.Fatalf("--doctor's last line should count the sessions: %q (stderr %q)", last, errs)
	}
	return probs, code
}

// TestDoctorFindsAndRepairsDamage damages a SQLite store four ways (a
// deleted summary row, a stale summary, a missing index row, a flipped
// byte in an event) and checks that --doctor names each, --repair fixes
// them without losing an event (the damaged one goes to a side file), and
// --doctor is clean afterwards, and stays clean when repeated.
func TestDoctorFindsAndRepairsDamage(t *testing.T) {
	work := t.TempDir()
	dir := t.TempDir()
	db := filepath.Join(dir, "s.db")
	srv := startModel(t, fakemodel.Reply{Text: "alpha done"}, fakemodel.Reply{Text: "beta done"}, fakemodel.Reply{Text: "gamma done"})
	for _, p := range []string{"alpha task", "beta task", "gamma task"} {
		if code, _, errs := run(t, srv, work, "--session-db", db, p); code != 0 {
			t.Fatalf("%s: %d %s", p, code, errs)
		}
	}
	if probs, code := runDoctor(t, work, db); code != 0 || len(probs) != 0 {
		t.Fatalf("a healthy store: exit %d, problems %+v", code, probs)
	}
	// A repair of a healthy store finds nothing, and indexes what waits for
	// the search index, so that a row deleted below is one doctor expects.
	if probs, code := runDoctor(t, work, db, "--repair"); code != 0 || len(probs) != 0 {
		t.Fatalf("--repair of a healthy store: exit %d, problems %+v", code, probs)
	}
	ids := map[string]string{}
	exports := map[string]string{}
	code, out, _ := run(t, nil, work, "--session-db", db, "--sessions")
	var list []struct{ ID, Title string }
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil {
		t.Fatal(out)
	}
	for _, s := range list {
		name := strings.Fields(strings.ToLower(s.Title))[0]
		ids[name] = s.ID
		_, exports[name], _ = run(t, nil, work, "--session-db", db, "--export", s.ID)
	}

	h, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	var nGamma, headGamma int64
	if err := h.QueryRow(`SELECT n, head FROM sessions WHERE id = ?`, ids["gamma"]).Scan(&nGamma, &headGamma); err != nil {
		t.Fatal(err)
	}
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`DELETE FROM sessions WHERE id = ?`, []any{ids["alpha"]}},
		{`UPDATE sessions SET entry = (SELECT entry FROM sessions WHERE id = ?) WHERE id = ?`, []any{ids["gamma"], ids["beta"]}},
		{`DELETE FROM search WHERE rowid = (SELECT min(rowid) FROM search WHERE rowid > ? AND rowid < ?)`, []any{nGamma << 32, (nGamma + 1) << 32}}, // gamma's prompt
		{`UPDATE events SET data = CAST(replace(CAST(data AS TEXT), 'end_turn', 'end_tUrn') AS BLOB) WHERE key = ?`, []any{nGamma<<32 | headGamma}}, // its last event
	} {
		if _, err := h.Exec(q.sql, q.args...); err != nil {
			t.Fatalf("%s: %v", q.sql, err)
		}
	}
	h.Close()

	probs, code := runDoctor(t, work, db)
	if code != 1 {
		t.Fatalf("--doctor on a damaged store: exit %d, want 1", code)
	}
	want := map[string]string{"summary_missing": ids["alpha"], "summary_stale": ids["beta"], "index_stale": ids["gamma"], "corrupt_log": ids["gamma"]}
	for kind, id := range want {
		found := false
		for _, p := range probs {
			found = found || p.Problem == kind && p.Session == id && !p.Repaired && p.Fix != ""
		}
		if !found {
			t.Errorf("--doctor did not report %s for %s: %+v", kind, id, probs)
		}
	}

	probs, code = runDoctor(t, work, db, "--repair")
	if code != 0 {
		t.Fatalf("--doctor --repair: exit %d, problems %+v", code, probs)
	}
	for _, args := range [][]string{nil, {"--repair"}, nil} { // clean, and repair is idempotent
		if probs, code := runDoctor(t, work, db, args...); code != 0 || len(probs) != 0 {
			t.Fatalf("--doctor %v after the repair: exit %d, problems %+v", args, code, probs)
		}
	}
	for _, name := range []string{"alpha", "beta"} {
		if _, got, _ := run(t, nil, work, "--session-db", db, "--export", ids[name]); got != exports[name] {
			t.Errorf("%s's log changed in the repair:\n got %s\nwant %s", name, got, exports[name])
		}
	}
	// gamma keeps every event before the damaged one; that one is in the
	// side file, byte for byte as the damage left it.
	_, got, _ := run(t, nil, work, "--session-db", db, "--export", ids["gamma"])
	before := strings.Split(strings.TrimSpace(exports["gamma"]), "\n")
	after := strings.Split(strings.TrimSpace(got), "\n")
	if len(after) != len(before)-1 || after[1] != before[1] || after[len(after)-1] != before[len(before)-2] {
		t.Errorf("gamma after the repair:\n%s\nbefore:\n%s", got, exports["gamma"])
	}
	side, err := os.ReadFile(db + ".quarantine-" + ids["gamma"] + "-" + itoa(headGamma) + ".jsonl")
	if err != nil || !strings.Contains(string(side), "end_tUrn") || strings.Count(string(side), "\n") != 1 {
		t.Fatalf("the side file: %q, %v", side, err)
	}
	if hits := search(t, work, db, "gamma"); len(hits) == 0 {
		t.Fatalf("search after the repair finds nothing")
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }
