package enginecmp

import (
	"bytes"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ncruces/go-sqlite3"
	_ "github.com/ncruces/go-sqlite3/driver"
	"github.com/ncruces/go-sqlite3/ext/fts5"
	_ "modernc.org/sqlite"
)

// TestMain gives ncruces's connections FTS5, which its build has as an
// extension to register (modernc's has it built in).
func TestMain(m *testing.M) {
	sqlite3.AutoExtension(fts5.Register)
	os.Exit(m.Run())
}

// engine is one driver and how its DSN spells the settings.
type engine struct {
	name, driver string
}

var engines = []engine{{"modernc", "sqlite"}, {"ncruces", "sqlite3"}}

// dsn is checkpoint/sqlite's writable DSN for path.
func (e engine) dsn(path string) string {
	p := "_pragma=busy_timeout(5000)&_pragma=synchronous(FULL)&_pragma=foreign_keys(0)&_pragma=journal_size_limit(67108864)&_pragma=journal_mode(wal)"
	if e.name == "ncruces" {
		p += "&_txlock=immediate"
	}
	return "file:" + path + "?mode=rwc&" + p
}

// The schema: checkpoint/sqlite/schema/0001 and 0002 and search.go's
// index tables.
const schema = `
CREATE TABLE sessions (id TEXT NOT NULL PRIMARY KEY, n INTEGER NOT NULL UNIQUE, namespace TEXT NOT NULL,
	kind TEXT NOT NULL, head INTEGER NOT NULL, messages INTEGER NOT NULL, status TEXT NOT NULL,
	created INTEGER NOT NULL, updated INTEGER NOT NULL, title TEXT NOT NULL, summary TEXT NOT NULL,
	entry BLOB NOT NULL) WITHOUT ROWID;
CREATE INDEX sessions_list ON sessions (namespace, updated DESC, id, kind, entry);
CREATE TABLE events (key INTEGER PRIMARY KEY, seq INTEGER GENERATED ALWAYS AS (key & 4294967295) VIRTUAL,
	type TEXT NOT NULL, time INTEGER NOT NULL, data BLOB);
ALTER TABLE events ADD COLUMN crc INTEGER;
CREATE VIRTUAL TABLE search USING fts5(words, content='', contentless_delete=1, tokenize='ascii');
CREATE TABLE search_words (word TEXT NOT NULL PRIMARY KEY) WITHOUT ROWID;
PRAGMA user_version = 2;`

// The write path's statements (checkpoint/sqlite write.go, search.go).
const (
	stmtSummary = `SELECT n, CAST(entry AS TEXT) FROM sessions WHERE id = ?`
	stmtInsert  = `INSERT INTO events (key, type, time, data, crc) VALUES (?, ?, ?, ?, ?)`
	stmtIndex   = `INSERT INTO search (rowid, words) VALUES (?, ?)`
	stmtWord    = `INSERT OR IGNORE INTO search_words (word) VALUES (?)`
	stmtSave    = `INSERT INTO sessions (id, n, namespace, kind, head, messages, status, created, updated, title, summary, entry)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET namespace = excluded.namespace, kind = excluded.kind, head = excluded.head,
			messages = excluded.messages, status = excluded.status, created = excluded.created, updated = excluded.updated,
			title = excluded.title, summary = excluded.summary, entry = excluded.entry`
	stmtRange = `SELECT key & 4294967295, type, time, data FROM events WHERE key > ? AND key <= ? ORDER BY key`
)

// payload is a 1 KiB assistant message of words, as the stores' benchmark
// appends.
var payload = func() []byte {
	var b bytes.Buffer
	b.WriteString(`{"blocks":[{"type":"text","text":"`)
	for i := 0; b.Len() < 1000; i++ {
		fmt.Fprintf(&b, "word%d ", i%97)
	}
	b.WriteString(`"}]}`)
	return b.Bytes()
}()

var words = strings.Fields(string(payload[35 : len(payload)-4]))

func open(tb testing.TB, e engine, path string) *sql.DB {
	tb.Helper()
	db, err := sql.Open(e.driver, e.dsn(path))
	if err != nil {
		tb.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	return db
}

func create(tb testing.TB, e engine, path string) *sql.DB {
	tb.Helper()
	db := open(tb, e, path)
	if _, err := db.Exec(schema); err != nil {
		tb.Fatalf("%s schema: %v", e.name, err)
	}
	if _, err := db.Exec(stmtSave, "s1", 1, "ns", "main", 0, 0, "idle", 1, 1, "t", "{}", []byte("e")); err != nil {
		tb.Fatal(err)
	}
	return db
}

// appendOne is one durable append of the write path: head check, event,
// index row and words, summary, commit.
func appendOne(tb testing.TB, db *sql.DB, seq int64) {
	tx, err := db.Begin()
	if err != nil {
		tb.Fatal(err)
	}
	var n int64
	var entry string
	if err := tx.QueryRow(stmtSummary, "s1").Scan(&n, &entry); err != nil {
		tb.Fatal(err)
	}
	key := n<<32 | seq
	if _, err := tx.Exec(stmtInsert, key, "assistant_message", seq, payload, 12345); err != nil {
		tb.Fatal(err)
	}
	if _, err := tx.Exec(stmtIndex, key, strings.Join(words, " ")); err != nil {
		tb.Fatal(err)
	}
	for _, w := range words[:8] {
		if _, err := tx.Exec(stmtWord, w); err != nil {
			tb.Fatal(err)
		}
	}
	if _, err := tx.Exec(stmtSave, "s1", n, "ns", "main", seq, seq, "idle", 1, seq, "t", "{}", []byte(entry)); err != nil {
		tb.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		tb.Fatal(err)
	}
}

// floor is a bare 1 KiB write+fsync in dir.
func floor(tb testing.TB, dir string) time.Duration {
	f, err := os.OpenFile(filepath.Join(dir, "floor"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	start := time.Now()
	if _, err := f.Write(payload); err != nil {
		tb.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		tb.Fatal(err)
	}
	return time.Since(start)
}

func p50(d []time.Duration) time.Duration {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[len(d)/2]
}

// BenchmarkAppend: one durable append per op, alternating the two engines
// and the fsync floor so that all three see the same disk and load.
func BenchmarkAppend(b *testing.B) {
	dir := b.TempDir()
	dbs := map[string]*sql.DB{}
	for _, e := range engines {
		dbs[e.name] = create(b, e, filepath.Join(dir, e.name+".db"))
		defer dbs[e.name].Close()
	}
	times := map[string][]time.Duration{}
	b.ResetTimer()
	for i := range b.N {
		times["floor"] = append(times["floor"], floor(b, dir))
		for _, e := range engines {
			start := time.Now()
			appendOne(b, dbs[e.name], int64(i+1))
			times[e.name] = append(times[e.name], time.Since(start))
		}
	}
	f := p50(times["floor"])
	b.ReportMetric(float64(f.Microseconds()), "floor-us-p50")
	for _, e := range engines {
		d := p50(times[e.name])
		b.ReportMetric(float64(d.Microseconds()), e.name+"-us-p50")
		b.ReportMetric(float64(d)/float64(f), e.name+"-x-floor")
	}
	b.ReportMetric(0, "ns/op")
}

// BenchmarkRead10k: a range scan of a 10,000-event log of 1 KiB events,
// each row's columns copied out as checkpoint/sqlite does.
func BenchmarkRead10k(b *testing.B) {
	for _, e := range engines {
		b.Run(e.name, func(b *testing.B) {
			db := create(b, e, filepath.Join(b.TempDir(), "r.db"))
			defer db.Close()
			tx, _ := db.Begin()
			for seq := int64(1); seq <= 10000; seq++ {
				if _, err := tx.Exec(stmtInsert, 1<<32|seq, "assistant_message", seq, payload, 1); err != nil {
					b.Fatal(err)
				}
			}
			if err := tx.Commit(); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				rows, err := db.Query(stmtRange, int64(1)<<32, int64(1)<<32|10000)
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				var seq, tm int64
				var typ string
				var data []byte
				for rows.Next() {
					if err := rows.Scan(&seq, &typ, &tm, &data); err != nil {
						b.Fatal(err)
					}
					n++
				}
				if err := rows.Err(); err != nil || n != 10000 {
					b.Fatalf("%d rows, %v", n, err)
				}
				rows.Close()
			}
		})
	}
}

// BenchmarkProcessOpenAppend: a whole process (this test binary run
// again) that opens an existing database, makes one durable append and
// closes it, as a one-shot lite-agent run does; the two engines
// alternated. It reports each one's median wall and CPU time.
func BenchmarkProcessOpenAppend(b *testing.B) {
	dir := b.TempDir()
	for _, e := range engines {
		create(b, e, filepath.Join(dir, e.name+".db")).Close()
	}
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	walls, cpus := map[string][]time.Duration{}, map[string][]time.Duration{}
	b.ResetTimer()
	for i := range b.N {
		for _, e := range engines {
			cmd := exec.Command(self, "-test.run", "^TestChild$")
			cmd.Env = append(os.Environ(), "ENGINECMP_CHILD="+e.name, "ENGINECMP_DB="+filepath.Join(dir, e.name+".db"), fmt.Sprintf("ENGINECMP_SEQ=%d", i+1))
			start := time.Now()
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("%s child: %v\n%s", e.name, err, out)
			}
			walls[e.name] = append(walls[e.name], time.Since(start))
			cpus[e.name] = append(cpus[e.name], cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
		}
	}
	for _, e := range engines {
		b.ReportMetric(float64(p50(walls[e.name]).Microseconds())/1000, e.name+"-ms-wall-p50")
		b.ReportMetric(float64(p50(cpus[e.name]).Microseconds())/1000, e.name+"-ms-cpu-p50")
	}
	b.ReportMetric(0, "ns/op")
}

// TestChild is BenchmarkProcessOpenAppend's child; it does nothing in a
// normal test run.
func TestChild(t *testing.T) {
	name := os.Getenv("ENGINECMP_CHILD")
	if name == "" {
		t.Skip("run by BenchmarkProcessOpenAppend")
	}
	var seq int64
	fmt.Sscan(os.Getenv("ENGINECMP_SEQ"), &seq)
	for _, e := range engines {
		if e.name == name {
			db := open(t, e, os.Getenv("ENGINECMP_DB"))
			appendOne(t, db, seq)
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestSamePattern checks that both engines take the whole pattern (FTS5
// included) and read back what was appended.
func TestSamePattern(t *testing.T) {
	for _, e := range engines {
		db := create(t, e, filepath.Join(t.TempDir(), "t.db"))
		for seq := int64(1); seq <= 3; seq++ {
			appendOne(t, db, seq)
		}
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM search WHERE search MATCH 'word5'`).Scan(&n); err != nil || n != 3 {
			t.Fatalf("%s: %d index hits, %v", e.name, n, err)
		}
		var data []byte
		if err := db.QueryRow(`SELECT data FROM events WHERE key = ?`, int64(1)<<32|2).Scan(&data); err != nil || !bytes.Equal(data, payload) {
			t.Fatalf("%s: read back %d bytes, %v", e.name, len(data), err)
		}
		db.Close()
	}
}
