package postgres_test

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/postgres"
	"github.com/lite-agent/lite-agent/session"
)

// closedPort returns a 127.0.0.1 port nothing listens on.
func closedPort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

// openErrorCase is a URL Open must refuse with a message that says what is
// wrong and what to do, and never shows the password.
type openErrorCase struct {
	name     string
	url      string
	password string
	is       error    // if set, the error must wrap it
	want     []string // the message must contain each
}

func checkOpenErrors(t *testing.T, cases []openErrorCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := postgres.Open(t.Context(), tc.url, nil)
			if err == nil {
				s.Close()
				t.Fatal("open succeeded")
			}
			msg := err.Error()
			t.Log(msg)
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %q does not wrap %v", msg, tc.is)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not say %q", msg, w)
				}
			}
			for _, shown := range []string{msg, fmt.Sprintf("%v", err), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err.Error())} {
				if tc.password != "" && strings.Contains(shown, tc.password) {
					t.Fatalf("the error shows the URL's password: %s", shown)
				}
			}
		})
	}
}

func TestOpenErrorsWithoutServer(t *testing.T) {
	port := closedPort(t)
	checkOpenErrors(t, []openErrorCase{
		{
			name:     "closed port",
			url:      fmt.Sprintf("postgres://lite:Closed-Port-Secret-1@127.0.0.1:%d/db?sslmode=disable&connect_timeout=5", port),
			password: "Closed-Port-Secret-1",
			want:     []string{fmt.Sprintf("no PostgreSQL server answers at 127.0.0.1:%d", port), "start it, or fix the host and port"},
		},
		{
			name:     "not a postgres url",
			url:      "mysql://lite:Scheme-Secret-2@127.0.0.1:3306/db",
			password: "Scheme-Secret-2",
			is:       checkpoint.ErrInvalid,
			want:     []string{"postgres:// or postgresql://"},
		},
		{
			name:     "unparsable port",
			url:      "postgres://lite:Parse-Secret-3@127.0.0.1:notaport/db",
			password: "Parse-Secret-3",
			is:       checkpoint.ErrInvalid,
			want:     []string{"cannot parse the URL"},
		},
		{
			name:     "unparsable with an escaped password",
			url:      "postgresql://lite:Esc%40aped-Secret-4@127.0.0.1:99999999/db",
			password: "Esc@aped-Secret-4",
			is:       checkpoint.ErrInvalid,
			want:     []string{"cannot parse the URL"},
		},
		{
			name:     "password as a parameter",
			url:      fmt.Sprintf("postgres://127.0.0.1:%d/db?user=lite&password=Param-Secret-5&sslmode=disable", port),
			password: "Param-Secret-5",
			want:     []string{"no PostgreSQL server answers"},
		},
	})
}

func TestOpenErrors(t *testing.T) {
	base := serverURL(t)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	real, _ := u.User.Password()
	wrong := *u
	wrong.User = url.UserPassword(u.User.Username(), "Wrong-Password-Secret-6")
	nodb := *u
	nodb.Path = "/lite_no_such_database"
	checkOpenErrors(t, []openErrorCase{
		{
			name:     "wrong password",
			url:      wrong.String(),
			password: "Wrong-Password-Secret-6",
			want:     []string{"rejected the password", "check the user name and password in the URL"},
		},
		{
			name:     "database does not exist",
			url:      nodb.String(),
			password: real,
			want:     []string{`database "lite_no_such_database" does not exist`, "createdb lite_no_such_database"},
		},
		{
			name:     "search_path names no schema",
			url:      withParam(t, base, "search_path", "lite_no_such_schema"),
			password: real,
			is:       checkpoint.ErrInvalid,
			want:     []string{"no schema of the search_path", "CREATE SCHEMA"},
		},
	})
}

func TestReadOnly(t *testing.T) {
	loc := newSchema(t)
	// Nothing to inspect yet: a read-only store creates nothing.
	_, err := postgres.Open(t.Context(), loc, &postgres.Options{ReadOnly: true})
	if !errors.Is(err, checkpoint.ErrNotFound) || !strings.Contains(err.Error(), "open it once read-write") {
		t.Fatalf("read-only open of an empty schema: %v, want ErrNotFound saying to open it read-write once", err)
	}
	if n := queryInt(t, loc, `SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()`); n != 0 {
		t.Fatalf("a read-only open created %d tables", n)
	}

	rw := openStore(t, loc, nil)
	ctx := t.Context()
	start := session.MustNew(session.TypeSessionStarted, session.SessionStarted{ID: "s1", Namespace: "ns"})
	prompt := session.MustNew(session.TypeUserPrompt, session.UserPrompt{Text: "hi"})
	if _, err := rw.Append(ctx, "s1", 0, []session.Event{start, prompt}); err != nil {
		t.Fatal(err)
	}

	ro := openStore(t, loc, &postgres.Options{ReadOnly: true})
	if s, err := ro.Head(ctx, "s1"); err != nil || s.Head != 2 || s.Messages != 1 {
		t.Fatalf("read-only head: %+v, %v", s, err)
	}
	if list, err := ro.List(ctx, "ns", checkpoint.ListOptions{}); err != nil || len(list) != 1 {
		t.Fatalf("read-only list: %v, %v", list, err)
	}
	if log, err := checkpoint.ReadAll(ctx, ro, "s1"); err != nil || len(log) != 2 {
		t.Fatalf("read-only read: %d events, %v", len(log), err)
	}
	writes := map[string]error{}
	_, writes["append"] = ro.Append(ctx, "s1", 2, []session.Event{prompt})
	_, writes["create"] = ro.Append(ctx, "s2", 0, []session.Event{start})
	_, writes["truncate"] = ro.Truncate(ctx, "s1", 1, 2)
	writes["delete"] = ro.Delete(ctx, "s1")
	for op, err := range writes {
		if !errors.Is(err, checkpoint.ErrReadOnly) {
			t.Errorf("read-only %s: %v, want ErrReadOnly", op, err)
		}
	}
	if log, _ := checkpoint.ReadAll(ctx, rw, "s1"); len(log) != 2 {
		t.Fatalf("after refused writes the log has %d events, want 2", len(log))
	}
}

func TestConcurrentMigration(t *testing.T) {
	loc := newSchema(t)
	const n = 6
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			s, err := postgres.Open(t.Context(), loc, nil)
			if err == nil {
				err = s.Close()
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent open: %v", err)
		}
	}
	// One row per migration, each applied once: 1, 2, 3 with no gaps.
	if v, top := queryInt(t, loc, `SELECT count(*) FROM schema_version`), queryInt(t, loc, `SELECT max(version) FROM schema_version`); v != top || v < 1 {
		t.Fatalf("schema_version has %d rows up to version %d after %d concurrent opens, want one per version", v, top, n)
	}
}

func TestNewerSchema(t *testing.T) {
	loc := newSchema(t)
	openStore(t, loc, nil).Close()
	execSQL(t, loc, `INSERT INTO schema_version (version, name) VALUES (99, '0099_future.sql')`)
	for _, opts := range []*postgres.Options{nil, {ReadOnly: true}} {
		_, err := postgres.Open(t.Context(), loc, opts)
		if err == nil || !strings.Contains(err.Error(), "version 99") || !strings.Contains(err.Error(), "upgrade lite-agent") {
			t.Fatalf("open (%+v) of a schema from the future: %v, want an error saying to upgrade", opts, err)
		}
	}
}
