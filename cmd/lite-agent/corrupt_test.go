package main

import (
	"bytes"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/internal/fakemodel"
)

// damagedDB runs turns of one session into a SQLite database, then
// overwrites 800 bytes of the database page that holds the data of the
// last turn's prompt, and returns the database, the session and the
// workdir.
func damagedDB(t *testing.T) (db, id, work string) {
	t.Helper()
	var replies []fakemodel.Reply
	for i := range 6 {
		replies = append(replies, fakemodel.Reply{Text: fmt.Sprintf("answer %d %s", i, strings.Repeat("words ", 60))})
	}
	srv := startModel(t, replies...)
	work = t.TempDir()
	db = filepath.Join(t.TempDir(), "s.db")
	if code, _, errs := run(t, srv, work, "--session-db", db, "turn MARK-0"); code != 0 {
		t.Fatalf("first turn: %d %s", code, errs)
	}
	id = onlySession(t, work, db)
	for i := 1; i < 6; i++ {
		if code, _, errs := run(t, srv, work, "--session-db", db, "--resume", id, fmt.Sprintf("turn MARK-%d", i)); code != 0 {
			t.Fatalf("turn %d: %d %s", i, code, errs)
		}
	}
	b, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(db + "-wal"); err == nil && fi.Size() > 0 {
		t.Fatalf("%s-wal holds %d bytes: the events may not be in the database file", db, fi.Size())
	}
	pageSize := int(binary.BigEndian.Uint16(b[16:18])) // the database header's page size
	at := livePage(t, id, b, pageSize, []byte("turn MARK-5"))
	page := at / pageSize * pageSize
	from := min(max(at-400, page+100), page+pageSize-800)
	for i := range 800 {
		b[from+i] = byte(0xA5 ^ i)
	}
	if err := os.WriteFile(db, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return db, id, work
}

// livePage returns the offset in b (the database file at db) of the
// marker in the page SQLite reads it from: pages that held it before the
// b-tree moved it are still in the file, so each page holding it is
// damaged in a copy until SQLite no longer reads the marker back.
func livePage(t *testing.T, id string, b []byte, pageSize int, marker []byte) int {
	t.Helper()
	for at, from := 0, 0; ; from = at + 1 {
		i := bytes.Index(b[from:], marker)
		if i < 0 {
			t.Fatalf("no page SQLite reads holds %q (page size %d)", marker, pageSize)
		}
		at = from + i
		copyDB := filepath.Join(t.TempDir(), "probe.db")
		c := bytes.Clone(b)
		copy(c[at:], bytes.Repeat([]byte{'#'}, len(marker)))
		if err := os.WriteFile(copyDB, c, 0o600); err != nil {
			t.Fatal(err)
		}
		if code, exported, _ := run(t, nil, t.TempDir(), "--session-db", copyDB, "--export", id); code != 0 || !strings.Contains(exported, string(marker)) {
			return at
		}
	}
}

// TestDamagedDatabasePage overwrites 800 bytes of a real database page that
// holds event data and checks that every command reading the session says
// it is damaged (exit 1, naming the session and pointing at --salvage)
// instead of reading a shorter log, that --resume appends nothing, and that
// --export --salvage writes the events that verify, which --import then
// brings into a fresh database as a session marked salvaged.
func TestDamagedDatabasePage(t *testing.T) {
	db, id, work := damagedDB(t)
	before, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	srv := startModel(t, fakemodel.Reply{Text: "must not be asked"})
	for _, args := range [][]string{
		{"--export", id},
		{"--session-info", id},
		{"--recovery-info", id},
		{"--checkpoints", id},
		{"--resume", id, "go on"},
	} {
		code, _, errs := run(t, srv, work, append([]string{"--session-db", db}, args...)...)
		if code != 1 || !strings.Contains(errs, "damaged") || !strings.Contains(errs, "--export "+id+" --salvage") || strings.Contains(errs, "another process") {
			t.Fatalf("%s on a damaged page: exit %d, %q; want exit 1 saying the session is damaged and how to salvage it", args[0], code, errs)
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("--resume of a damaged session asked the model %d times", n)
	}
	after, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Fatal("the commands changed the damaged database")
	}

	code, salvaged, errs := run(t, nil, work, "--session-db", db, "--export", id, "--salvage")
	if code != 0 || !strings.Contains(errs, "salvaged events 1 to") {
		t.Fatalf("--export --salvage: exit %d, %q", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(salvaged), "\n")
	var header struct {
		Export struct {
			Session  string
			Head     int64
			Events   int64
			Salvaged bool
			Lost     []struct{ From, To int64 }
		}
	}
	if err := json.Unmarshal([]byte(lines[0]), &header); err != nil || !header.Export.Salvaged || header.Export.Session != id ||
		header.Export.Events < 1 || header.Export.Events > header.Export.Head || int64(len(lines)-1) != header.Export.Events || len(header.Export.Lost) == 0 {
		t.Fatalf("salvaged stream's header %s (%v) with %d event lines", lines[0], err, len(lines)-1)
	}
	// Every seq not lost came over as it was; the lost ones before the
	// last salvaged event are event_lost lines in their place.
	for _, g := range header.Export.Lost {
		for seq := g.From; seq <= min(g.To, header.Export.Events); seq++ {
			if !strings.Contains(lines[seq], `"type":"event_lost"`) || !strings.Contains(lines[seq], fmt.Sprintf(`"seq":%d,`, seq)) {
				t.Fatalf("lost seq %d is written as %s", seq, lines[seq])
			}
		}
	}
	if !strings.Contains(errs, "damaged: seq") {
		t.Fatalf("--salvage does not report what was lost: %q", errs)
	}
	file := filepath.Join(t.TempDir(), "salvaged.jsonl")
	if err := os.WriteFile(file, []byte(salvaged), 0o600); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(t.TempDir(), "fresh.db")
	code, out, errs := run(t, nil, work, "--session-db", fresh, "--import", file)
	if code != 0 || !strings.Contains(out, `"salvaged": true`) {
		t.Fatalf("--import of the salvaged stream: exit %d, %q %q", code, out, errs)
	}
	code, exported, errs := run(t, nil, work, "--session-db", fresh, "--export", id)
	if code != 0 || strings.Count(exported, "\n") != len(lines) {
		t.Fatalf("--export of the imported session: exit %d, %d lines, %q", code, strings.Count(exported, "\n"), errs)
	}
	sameButImportMark(t, exported, salvaged, file, false)
	if code, _, errs := run(t, nil, work, "--session-db", fresh, "--session-info", id); code != 0 {
		t.Fatalf("--session-info of the imported session: exit %d, %q", code, errs)
	}
}

// TestSalvageRebuildsFirstEvent: with the first event of a session
// (session_started) damaged in a real SQLite database, --export --salvage
// rebuilds it from the database's summary, says so on stderr and in the
// stream's header, and --import brings the session into a fresh database
// with its workdir and model, so it resumes there.
func TestSalvageRebuildsFirstEvent(t *testing.T) {
	srv := startModel(t, fakemodel.Reply{Text: "first answer"}, fakemodel.Reply{Text: "after the salvage"})
	work, _ := filepath.EvalSymlinks(t.TempDir())
	db := filepath.Join(t.TempDir(), "s.db")
	if code, _, errs := run(t, srv, work, "--session-db", db, "--model", "claude-test", "hello"); code != 0 {
		t.Fatalf("first turn: %d %s", code, errs)
	}
	id := onlySession(t, work, db)
	h, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	res, err := h.Exec(`UPDATE events SET data = CAST(replace(CAST(data AS TEXT), '"id"', '"ID"') AS BLOB) WHERE seq = 1`)
	if n, _ := res.RowsAffected(); err != nil || n != 1 {
		t.Fatalf("damage seq 1: %v (%d rows)", err, n)
	}
	h.Close()
	if code, _, errs := run(t, nil, work, "--session-db", db, "--export", id); code != 1 || !strings.Contains(errs, "damaged") {
		t.Fatalf("--export of the damaged session: %d %s; want 1 saying it is damaged", code, errs)
	}
	code, salvaged, errs := run(t, nil, work, "--session-db", db, "--export", id, "--salvage")
	if code != 0 || !strings.Contains(errs, "rebuilt from the database's summary") {
		t.Fatalf("--export --salvage with seq 1 damaged: exit %d, %q; want it rebuilt and said so", code, errs)
	}
	head, first, _ := strings.Cut(salvaged, "\n")
	if !strings.Contains(head, `"reconstructed":true`) || !strings.Contains(first, `"type":"session_started"`) || !strings.Contains(first, work) {
		t.Fatalf("salvaged stream begins %s\n%.300s; want a header marking seq 1 reconstructed and a session_started naming %s", head, first, work)
	}
	file := filepath.Join(t.TempDir(), "salvaged.jsonl")
	if err := os.WriteFile(file, []byte(salvaged), 0o600); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(t.TempDir(), "fresh.db")
	if code, _, errs := run(t, nil, work, "--session-db", fresh, "--import", file); code != 0 {
		t.Fatalf("--import of the salvaged stream: %d %s", code, errs)
	}
	code, out, errs := run(t, nil, work, "--session-db", fresh, "--session-info", id)
	if code != 0 || !strings.Contains(out, work) || !strings.Contains(out, "claude-test") || !strings.Contains(out, `"salvaged": true`) {
		t.Fatalf("--session-info of the imported session: %d %s %s; want its workdir, model and the salvage mark", code, out, errs)
	}
	if code, out, errs := run(t, srv, work, "--session-db", fresh, "--resume", id, "go on"); code != 0 || !strings.Contains(out, "after the salvage") {
		t.Fatalf("--resume of the imported session: %d %q %s", code, out, errs)
	}
}
