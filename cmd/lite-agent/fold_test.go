package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/lite-agent/lite-agent/internal/fakemodel"
	"github.com/lite-agent/lite-agent/session"
)

// entryDB reaches the summary entries of a session database behind
// lite-agent's back, as another build of it would have written them.
type entryDB struct {
	name string
	db   string // --session-db
	// entries returns every session's stored entry; set replaces one.
	entries func(t *testing.T) map[string][]byte
	set     func(t *testing.T, id string, e []byte)
}

// entryDBs returns a fresh SQLite database and, when the test server is
// set (LITE_AGENT_TEST_POSTGRES), a fresh PostgreSQL schema.
func entryDBs(t *testing.T) []entryDB {
	path := filepath.Join(t.TempDir(), "s.db")
	lite := entryDB{name: "sqlite", db: path,
		entries: func(t *testing.T) map[string][]byte {
			h, err := sql.Open("sqlite", path)
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			rows, err := h.Query(`SELECT id, entry FROM sessions`)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			return entryMap(t, rows)
		},
		set: func(t *testing.T, id string, e []byte) {
			h, err := sql.Open("sqlite", path)
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			if _, err := h.Exec(`UPDATE sessions SET entry = ? WHERE id = ?`, e, id); err != nil {
				t.Fatal(err)
			}
		},
	}
	out := []entryDB{lite}
	if os.Getenv("LITE_AGENT_TEST_POSTGRES") == "" {
		t.Log("LITE_AGENT_TEST_POSTGRES is not set: SQLite only")
		return out
	}
	url := postgresDB(t)
	{
		pgConn := func(t *testing.T) (*pgx.Conn, context.Context) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			t.Cleanup(cancel)
			c, err := pgx.Connect(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close(context.Background()) })
			return c, ctx
		}
		out = append(out, entryDB{name: "postgres", db: url,
			entries: func(t *testing.T) map[string][]byte {
				c, ctx := pgConn(t)
				rows, err := c.Query(ctx, `SELECT id, entry FROM sessions`)
				if err != nil {
					t.Fatal(err)
				}
				defer rows.Close()
				return entryMap(t, rows)
			},
			set: func(t *testing.T, id string, e []byte) {
				c, ctx := pgConn(t)
				// A new etag, as another build's write would leave.
				if _, err := c.Exec(ctx, `UPDATE sessions SET entry = $1, etag = etag + 1 WHERE id = $2`, e, id); err != nil {
					t.Fatal(err)
				}
			},
		})
	}
	return out
}

// entryMap collects rows of (id, entry), of database/sql or pgx.
func entryMap(t *testing.T, rows interface {
	Next() bool
	Scan(...any) error
}) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for rows.Next() {
		var id string
		var e []byte
		if err := rows.Scan(&id, &e); err != nil {
			t.Fatal(err)
		}
		out[id] = e
	}
	return out
}

// twoSessions records two sessions in db through the binary and returns
// what --sessions lists then.
func twoSessions(t *testing.T, work, db string) string {
	t.Helper()
	srv := startModel(t, fakemodel.Reply{Text: "alpha done"}, fakemodel.Reply{Text: "beta done"})
	for _, p := range []string{"alpha task", "beta task"} {
		if code, _, errs := run(t, srv, work, "--session-db", db, p); code != 0 {
			t.Fatalf("%s: %d %s", p, code, errs)
		}
	}
	return listing(t, work, db)
}

// listing runs --sessions, which must succeed.
func listing(t *testing.T, work, db string) string {
	t.Helper()
	code, out, errs := run(t, nil, work, "--session-db", db, "--sessions")
	if code != 0 {
		t.Fatalf("--sessions: %d %s", code, errs)
	}
	return out
}

// TestDoctorRefoldsOldSummaries stamps the stored summaries of a SQLite
// and a PostgreSQL store with an older fold version (as an older
// lite-agent left them) and checks that --sessions still lists what the
// logs say, --doctor names each as summary_old_fold, --doctor --repair
// stores the recomputed ones, and --doctor is clean afterwards.
func TestDoctorRefoldsOldSummaries(t *testing.T) {
	for _, b := range entryDBs(t) {
		t.Run(b.name, func(t *testing.T) {
			work := t.TempDir()
			before := twoSessions(t, work, b.db)
			var ids []string
			for id, e := range b.entries(t) {
				// An entry ends with its fold version, a zigzag varint (1 is 0x02).
				if e[len(e)-1] != byte(2*session.FoldVersion) {
					t.Fatalf("entry of %s does not end with fold version %d: %x", id, session.FoldVersion, e)
				}
				e[len(e)-1] = byte(2 * (session.FoldVersion - 1)) // the version before
				b.set(t, id, e)
				ids = append(ids, id)
			}
			if len(ids) != 2 {
				t.Fatalf("%d sessions in the store, want 2", len(ids))
			}
			if got := listing(t, work, b.db); got != before {
				t.Errorf("--sessions over old summaries:\n%s\nwant\n%s", got, before)
			}
			var list []struct{ ID, Title string }
			if err := json.Unmarshal([]byte(before), &list); err != nil || len(list) != 2 {
				t.Fatalf("listing %q: %v", before, err)
			}
			probs, code := runDoctor(t, work, b.db)
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
			probs, code = runDoctor(t, work, b.db, "--repair")
			if code != 0 || len(probs) != 2 || !probs[0].Repaired || !probs[1].Repaired {
				t.Fatalf("--doctor --repair: exit %d, problems %+v", code, probs)
			}
			if probs, code := runDoctor(t, work, b.db); code != 0 || len(probs) != 0 {
				t.Fatalf("--doctor after the repair: exit %d, problems %+v", code, probs)
			}
			for id, e := range b.entries(t) {
				if e[len(e)-1] != byte(2*session.FoldVersion) {
					t.Errorf("after the repair the entry of %s is %x, want fold version %d", id, e, session.FoldVersion)
				}
			}
			if got := listing(t, work, b.db); got != before {
				t.Errorf("--sessions after the repair:\n%s\nwant\n%s", got, before)
			}
		})
	}
}

// TestNewerStoreRefused gives one session of a SQLite and a PostgreSQL
// store a summary entry of the next entry format, as a newer lite-agent
// would write it, and checks what a user of this build sees: --sessions,
// --session-info, --doctor and --doctor --repair exit 1 saying that a
// newer lite-agent wrote the store and to upgrade, never that it is
// damaged or to restore a backup or salvage it; nothing is changed, and
// with the entry put back everything lists as before.
func TestNewerStoreRefused(t *testing.T) {
	for _, b := range entryDBs(t) {
		t.Run(b.name, func(t *testing.T) {
			work := t.TempDir()
			before := twoSessions(t, work, b.db)
			entries := b.entries(t)
			var id string
			for k := range entries {
				id = k
			}
			orig := entries[id]
			newer := append([]byte{orig[0] + 1}, orig[1:]...)
			b.set(t, id, newer)
			for _, args := range [][]string{{"--sessions"}, {"--session-info", id}, {"--doctor"}, {"--doctor", "--repair"}} {
				code, out, errs := run(t, nil, work, append([]string{"--session-db", b.db}, args...)...)
				if code != 1 {
					t.Errorf("%v: exit %d, want 1 (stdout %q, stderr %q)", args, code, out, errs)
				}
				for _, want := range []string{"newer lite-agent", "upgrade"} {
					if !strings.Contains(errs, want) {
						t.Errorf("%v: stderr %q does not say %q", args, errs, want)
					}
				}
				for _, bad := range []string{"damaged", "backup", "salvage", "corrupt"} {
					if strings.Contains(errs, bad) {
						t.Errorf("%v: stderr %q speaks of %q: a newer store is not damaged", args, errs, bad)
					}
				}
			}
			after := b.entries(t)
			if len(after) != len(entries) || string(after[id]) != string(newer) {
				t.Fatalf("the store changed: entries %x, want %x left as planted", after, newer)
			}
			for k, e := range entries {
				if k != id && string(after[k]) != string(e) {
					t.Errorf("the entry of %s changed from %x to %x", k, e, after[k])
				}
			}
			b.set(t, id, orig)
			if got := listing(t, work, b.db); got != before {
				t.Errorf("--sessions with the entry put back:\n%s\nwant\n%s", got, before)
			}
		})
	}
}
