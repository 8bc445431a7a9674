package sqlite_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	msqlite "modernc.org/sqlite"

	"github.com/lite-agent/lite-agent/checkpoint/sqlite"
	"github.com/lite-agent/lite-agent/session"
)

func TestExpInterleaved(t *testing.T) {
	if os.Getenv("EXP") == "" {
		t.Skip()
	}
	if os.Getenv("FDS") != "" {
		msqlite.Fdatasync(true)
	}
	dir := t.TempDir()
	f, _ := os.Create(filepath.Join(dir, "floor"))
	s, err := sqlite.Open(filepath.Join(dir, "s.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	head, _ := s.Append(t.Context(), "bench", 0, []session.Event{startedIn("bench", "bench")})
	text := strings.Repeat("lorem ipsum ", 100)[:1024]
	e := session.MustNew(session.TypeAssistantMessage, session.AssistantMessage{Blocks: []session.Block{{Type: "text", Text: text}}})
	buf := []byte(text)
	db, _ := sql.Open("sqlite", "file:"+filepath.Join(dir, "raw.db")+"?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_txlock=immediate")
	db.SetMaxOpenConns(1)
	db.Exec("create table t(s text, seq int, data blob, primary key(s, seq))")
	ctx := context.Background()
	var fl, ap, raw []time.Duration
	for i := range 3000 {
		st := time.Now()
		f.Write(buf)
		f.Sync()
		fl = append(fl, time.Since(st))
		st = time.Now()
		head, err = s.Append(t.Context(), "bench", head, []session.Event{e})
		if err != nil {
			t.Fatal(err)
		}
		ap = append(ap, time.Since(st))
		st = time.Now()
		tx, _ := db.BeginTx(ctx, nil)
		tx.Exec("insert into t values(?,?,?)", "bench", i, buf)
		tx.Commit()
		raw = append(raw, time.Since(st))
	}
	for _, x := range [][]time.Duration{fl, ap, raw} {
		slices.Sort(x)
	}
	p := func(x []time.Duration) time.Duration { return x[len(x)/2] }
	t.Logf("floor p50 %v | append p50 %v (%.2f) | raw sqlite insert p50 %v (%.2f)", p(fl), p(ap), float64(p(ap))/float64(p(fl)), p(raw), float64(p(raw))/float64(p(fl)))
	s.Close()
	f.Close()
}
