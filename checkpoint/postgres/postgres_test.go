package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/checkpointtest"
	"github.com/lite-agent/lite-agent/checkpoint/postgres"
	"github.com/lite-agent/lite-agent/session"
)

// envURL names a PostgreSQL server the tests may create schemas on: a URL
// to a superuser (or a user allowed to CREATE SCHEMA). .ci/postgres.sh
// starts a throwaway server and sets it.
const envURL = "LITE_AGENT_TEST_POSTGRES"

// serverURL returns the test server's URL or skips the test.
func serverURL(tb testing.TB) string {
	tb.Helper()
	u := os.Getenv(envURL)
	if u == "" {
		tb.Skipf("%s is not set: these tests need a PostgreSQL server; run `source .ci/postgres.sh` to start a throwaway one, or set it to postgres://USER:PASSWORD@127.0.0.1:PORT/DB of a superuser", envURL)
	}
	return u
}

// withParam returns raw with query parameter k set to v.
func withParam(tb testing.TB, raw, k, v string) string {
	tb.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		tb.Fatalf("parse %s: %v", envURL, err)
	}
	q := u.Query()
	q.Set(k, v)
	u.RawQuery = q.Encode()
	return u.String()
}

// admin runs one statement on the test server.
func admin(tb testing.TB, sql string) {
	tb.Helper()
	execSQL(tb, serverURL(tb), sql)
}

// withConn runs f on a connection of its own to loc (a test schema's URL).
func withConn(tb testing.TB, loc string, f func(ctx context.Context, conn *pgx.Conn)) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, loc)
	if err != nil {
		tb.Fatalf("connect to the test server: %v", err)
	}
	defer conn.Close(ctx)
	f(ctx, conn)
}

// execSQL runs one statement at loc (a test schema's URL).
func execSQL(tb testing.TB, loc, sql string, args ...any) {
	tb.Helper()
	withConn(tb, loc, func(ctx context.Context, conn *pgx.Conn) {
		if _, err := conn.Exec(ctx, sql, args...); err != nil {
			tb.Fatalf("%s: %v", sql, err)
		}
	})
}

// queryInt runs a query returning one integer at loc.
func queryInt(tb testing.TB, loc, sql string, args ...any) int64 {
	tb.Helper()
	var n int64
	withConn(tb, loc, func(ctx context.Context, conn *pgx.Conn) {
		if err := conn.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
			tb.Fatalf("%s: %v", sql, err)
		}
	})
	return n
}

// newSchema creates an empty schema on the test server, dropped when the
// test ends, and returns a URL whose search_path names it.
func newSchema(tb testing.TB) string {
	tb.Helper()
	base := serverURL(tb)
	var b [8]byte
	_, _ = rand.Read(b[:])
	name := "lite_test_" + hex.EncodeToString(b[:])
	admin(tb, `CREATE SCHEMA `+name)
	tb.Cleanup(func() { admin(tb, `DROP SCHEMA `+name+` CASCADE`) })
	return withParam(tb, base, "search_path", name)
}

// openStore opens a Store at loc, closed when the test ends.
func openStore(tb testing.TB, loc string, opts *postgres.Options) *postgres.Store {
	tb.Helper()
	s, err := postgres.Open(tb.Context(), loc, opts)
	if err != nil {
		tb.Fatalf("open: %v", err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// crashApp is the application_name of the connections of the crash test's
// child in the schema of loc.
func crashApp(loc string) string {
	u, err := url.Parse(loc)
	if err != nil {
		return "lite-crash"
	}
	return "lite-crash-" + u.Query().Get("search_path")
}

// settle waits until no connection of a killed crash child is left on the
// server. A client that dies does not stop the statement it already sent: the
// server runs it to the end (and commits it) before it notices. The crash
// test reads the log and then the head, so it must not overlap that.
func settle(loc string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, loc)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	for {
		var n int
		err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, crashApp(loc)).Scan(&n)
		if err != nil || n == 0 {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d connections of killed crash children are still on the server: %w", n, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func backend() checkpointtest.Backend {
	return checkpointtest.Backend{
		Name:        "postgres",
		NewLocation: newSchema,
		Open: func(loc string) (checkpoint.Checkpointer, error) {
			// The suite plays child roles in processes of this test binary
			// (see checkpointtest.Main), named by this variable.
			if os.Getenv("LITEAGENT_CHECKPOINTTEST_ROLE") == "crash" {
				loc += "&application_name=" + url.QueryEscape(crashApp(loc))
			} else if err := settle(loc); err != nil {
				return nil, err
			}
			return postgres.Open(context.Background(), loc, nil)
		},
		Persistent:    true,
		MaxEventBytes: postgres.DefaultMaxEventBytes,
		Damage:        damage,
		StoreSummary:  storeSummary,
		Quarantined:   quarantined,
	}
}

// quarantined reads the rows a repair moved from session id's log, from
// seq from on, into the quarantine table at loc.
func quarantined(tb testing.TB, _ checkpoint.Checkpointer, loc, id string, from int64) []session.Event {
	tb.Helper()
	var out []session.Event
	withConn(tb, loc, func(ctx context.Context, conn *pgx.Conn) {
		rows, err := conn.Query(ctx, `SELECT seq, type, time, data FROM quarantine WHERE session = $1 AND seq >= $2 ORDER BY seq`, id, from)
		if err != nil {
			tb.Fatal(err)
		}
		var e session.Event
		var typ string
		if _, err := pgx.ForEachRow(rows, []any{&e.Seq, &typ, &e.Time, &e.Data}, func() error {
			out = append(out, session.Event{Seq: e.Seq, Type: session.Type(typ), Time: e.Time, Data: slices.Clone(e.Data)})
			return nil
		}); err != nil {
			tb.Fatal(err)
		}
	})
	return out
}

// damage changes the events table at loc through a connection of its own,
// as another program with access to the database could.
func damage(tb testing.TB, _ checkpoint.Checkpointer, loc, id string, d checkpointtest.Damage, seq int64) {
	tb.Helper()
	switch d {
	case checkpointtest.FlipByte:
		execSQL(tb, loc, `UPDATE events SET data = set_byte(data, length(data) / 2, get_byte(data, length(data) / 2) # 32)
			WHERE session = $1 AND seq = $2`, id, seq)
	case checkpointtest.DropEvent:
		execSQL(tb, loc, `DELETE FROM events WHERE session = $1 AND seq = $2`, id, seq)
	case checkpointtest.CutLog:
		execSQL(tb, loc, `DELETE FROM events WHERE session = $1 AND seq >= $2`, id, seq)
	default:
		tb.Fatalf("unknown damage %v", d)
	}
}

func TestMain(m *testing.M) {
	if role := os.Getenv(envRole); role != "" {
		// A child process of one of this package's own tests.
		if err := runChild(role); err != nil {
			fmt.Fprintf(os.Stderr, "child %s: %v\n", role, err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	checkpointtest.Main(m, backend())
}

func TestConformance(t *testing.T) { checkpointtest.Run(t, backend()) }

func TestCrashConformance(t *testing.T) { checkpointtest.RunCrash(t, backend(), 50) }

func BenchmarkPostgres(b *testing.B) { checkpointtest.Bench(b, backend()) }

// BenchmarkSearch10kx100: search and doctor on 10,000 sessions × 100
// events (the fill takes minutes).
func BenchmarkSearch10kx100(b *testing.B) { checkpointtest.BenchSearch(b, backend(), 10_000, 100) }
