//go:build unix

package main

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/lite-agent/lite-agent/internal/fakemodel"
)

// TestRestoreRacingATool: a restore and another process's turn whose tool
// writes a file start on the same session at once, 20 times per backend
// (SQLite, PostgreSQL). Whatever the order, the workdir agrees with the
// log left: a.txt (written by the first turn) is there exactly when the
// log still has that turn, and b.txt (the racing tool's) exactly when the
// log has the racing tool's receipt. A tool never writes after a restore
// claimed the session, and a restore never rewinds files under a tool.
func TestRestoreRacingATool(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { restoreRacingATool(t, filepath.Join(t.TempDir(), "s.db")) })
	t.Run("postgres", func(t *testing.T) { restoreRacingATool(t, postgresDB(t)) })
}

func restoreRacingATool(t *testing.T, db string) {
	runs := 20
	if testing.Short() {
		runs = 3
	}
	outcomes := map[string]int{}
	for i := range runs {
		srv := startModel(t,
			fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{toolCall("w1", "write", map[string]any{"path": "a.txt", "content": "one\n"})}},
			fakemodel.Reply{Text: "made a"},
			fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{toolCall("w2", "write", map[string]any{"path": "b.txt", "content": "two\n"})}},
			fakemodel.Reply{Text: "made b"},
		)
		work, _ := filepath.EvalSymlinks(t.TempDir())
		if code, _, errs := run(t, srv, work, "--session-db", db, "--allow", "edit", "make a"); code != 0 {
			t.Fatalf("run %d: first turn: %d %s", i, code, errs)
		}
		id := onlySession(t, work, db)
		seq := firstCheckpoint(t, work, db, id)
		writer := start(t, srv, work, "--session-db", db, "--allow", "edit", "--resume", id, "make b")
		restore := start(t, nil, work, "--session-db", db, "--restore", id, "--to", seq)
		wcode, rcode := exitOf(t, writer), exitOf(t, restore)
		if (wcode != 0 && wcode != 4) || (rcode != 0 && rcode != 4) {
			t.Fatalf("run %d: writer exit %d (%s), restore exit %d (%s)", i, wcode, writer.stderr, rcode, restore.stderr)
		}
		code, out, errs := run(t, nil, work, "--session-db", db, "--export", id)
		if code != 0 {
			t.Fatalf("run %d: export: %d %s", i, code, errs)
		}
		var hasA, hasB, claim bool
		sc := bufio.NewScanner(strings.NewReader(out))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			line := sc.Text()
			hasA = hasA || strings.Contains(line, `"type":"tool_finished"`) && strings.Contains(line, `"w1"`)
			hasB = hasB || strings.Contains(line, `"type":"tool_finished"`) && strings.Contains(line, `"w2"`)
			claim = claim || strings.Contains(line, `"type":"restore_started"`)
		}
		_, aErr := os.Stat(filepath.Join(work, "a.txt"))
		_, bErr := os.Stat(filepath.Join(work, "b.txt"))
		if (aErr == nil) != hasA || (bErr == nil) != hasB || claim {
			t.Fatalf("run %d (writer exit %d, restore exit %d): files and log disagree: a.txt there %v, in the log %v; b.txt there %v, in the log %v; a claim left %v\nwriter: %s\nrestore: %s\n%s",
				i, wcode, rcode, aErr == nil, hasA, bErr == nil, hasB, claim, writer.stderr, restore.stderr, out)
		}
		outcomes[strings.Join([]string{"writer", exitWord(wcode), "restore", exitWord(rcode)}, " ")]++
	}
	t.Logf("%d runs: %v", runs, outcomes)
}

func exitWord(code int) string {
	if code == 0 {
		return "won"
	}
	return "lost"
}

// TestTurnLosesItsLease: the server ends the connection holding a running
// turn's lease (pg_terminate_backend) while the model streams, and another
// process takes the lease: the turn exits 4 saying it lost the lease and
// naming the new holder, its write tool does not run, and the log reads
// whole, ending where it was when the lease went.
func TestTurnLosesItsLease(t *testing.T) {
	db := postgresDB(t)
	srv := startModel(t,
		fakemodel.Reply{DelayMS: 3000, ToolCalls: []fakemodel.ToolCall{toolCall("w1", "write", map[string]any{"path": "a.txt", "content": "one\n"})}},
		fakemodel.Reply{Text: "made a"},
	)
	work, _ := filepath.EvalSymlinks(t.TempDir())
	p := start(t, srv, work, "--session-db", db, "--allow", "edit", "make a")
	waitFor(t, "the model request", func() bool { return len(srv.Requests()) > 0 })
	id := onlySession(t, work, db)
	before := exportLines(t, work, db, id)
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var ended int
	if err := conn.QueryRow(ctx, `WITH k AS (SELECT hashtextextended('lite-agent session lease ' || current_schema() || ' ' || $1, 0) AS key)
		SELECT count(pg_terminate_backend(l.pid)) FROM k, pg_locks l WHERE l.locktype = 'advisory' AND l.objsubid = 1 AND l.granted
		AND l.classid = ((k.key >> 32) & 4294967295)::oid AND l.objid = (k.key & 4294967295)::oid`, id).Scan(&ended); err != nil || ended != 1 {
		t.Fatalf("ending the lease's connection: %d, %v", ended, err)
	}
	var got bool
	waitFor(t, "the lease to be free", func() bool {
		err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(hashtextextended('lite-agent session lease ' || current_schema() || ' ' || $1, 0))`, id).Scan(&got)
		return err == nil && got
	})
	code := exitOf(t, p)
	if code != 4 || !strings.Contains(p.stderr.String(), "lost the session's lease") || !strings.Contains(p.stderr.String(), "running now in process") {
		t.Fatalf("the turn that lost its lease: exit %d, %s; want 4 saying so and naming the holder", code, p.stderr)
	}
	if _, err := os.Stat(filepath.Join(work, "a.txt")); !os.IsNotExist(err) {
		t.Errorf("the write tool ran after the turn lost its lease: %v", err)
	}
	if after := exportLines(t, work, db, id); after != before {
		t.Errorf("the log changed after the lease was lost:\nbefore %s\nafter  %s", before, after)
	}
}

func exportLines(t *testing.T, work, db, id string) string {
	t.Helper()
	code, out, errs := run(t, nil, work, "--session-db", db, "--export", id)
	if code != 0 {
		t.Fatalf("--export: %d %s", code, errs)
	}
	return out
}
