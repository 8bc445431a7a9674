package sqlite_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	_ "modernc.org/sqlite" // database/sql driver, to make files the store did not

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/sqlite"
	"github.com/lite-agent/lite-agent/session"
)

// dirState is every file of a directory tree with its mode and content.
type dirState map[string]string

// snapshot records dir so that a test can check nothing changed in it.
func snapshot(tb testing.TB, dir string) dirState {
	tb.Helper()
	st := dirState{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		content := ""
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			content = string(b)
		}
		st[rel] = fi.Mode().String() + " " + content
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return st
}

// sameState fails unless dir is as it was, but for the files named in
// ignore.
func sameState(tb testing.TB, what string, before dirState, dir string, ignore ...string) {
	tb.Helper()
	after := snapshot(tb, dir)
	for _, name := range ignore {
		delete(after, name)
		delete(before, name)
	}
	if diff := cmp.Diff(summarize(before), summarize(after)); diff != "" {
		tb.Fatalf("%s changed files (-before +after):\n%s", what, diff)
	}
	for name, b := range before {
		if after[name] != b {
			tb.Fatalf("%s changed the bytes of %s", what, name)
		}
	}
}

// summarize shortens a dirState to names, modes and sizes, for diffs.
func summarize(st dirState) map[string]string {
	out := make(map[string]string, len(st))
	for name, v := range st {
		mode, content, _ := strings.Cut(v, " ")
		out[name] = mode + " " + byteCount(len(content))
	}
	return out
}

func byteCount(n int) string { return strconv.Itoa(n) + " bytes" }

func startedIn(id, ns string) session.Event {
	return session.MustNew(session.TypeSessionStarted, session.SessionStarted{ID: id, Namespace: ns})
}

func promptEvent(text string) session.Event {
	return session.MustNew(session.TypeUserPrompt, session.UserPrompt{Text: text})
}

// mustOpen opens a store and closes it when the test ends.
func mustOpen(tb testing.TB, path string, opts *sqlite.Options) *sqlite.Store {
	tb.Helper()
	s, err := sqlite.Open(path, opts)
	if err != nil {
		tb.Fatalf("open %s: %v", path, err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("close %s: %v", path, err)
		}
	})
	return s
}

// fill creates sessions a and b in namespace ns with a few prompts.
func fill(tb testing.TB, s *sqlite.Store) {
	tb.Helper()
	for _, id := range []string{"a", "b"} {
		head, err := s.Append(tb.Context(), id, 0, []session.Event{startedIn(id, "ns"), promptEvent("hello " + id)})
		if err != nil {
			tb.Fatal(err)
		}
		if _, err := s.Append(tb.Context(), id, head, []session.Event{promptEvent("again")}); err != nil {
			tb.Fatal(err)
		}
	}
}

// sqlDB opens path with database/sql, for setting up files by hand.
func sqlDB(tb testing.TB, path string) *sql.DB {
	tb.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

func TestFileModes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	s, err := sqlite.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	fill(t, s)
	for _, suffix := range []string{"", "-wal", "-shm"} {
		fi, err := os.Stat(path + suffix)
		if err != nil {
			t.Fatalf("while open: %v", err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", filepath.Base(path+suffix), fi.Mode().Perm())
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	// At rest the WAL was checkpointed into the database file; the -wal
	// file stays, empty, with the -shm file, for the next process to reuse.
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"sessions.db", "sessions.db-shm", "sessions.db-wal"}) {
		t.Fatalf("after close the directory holds %v, want sessions.db and its kept -wal and -shm files", names)
	}
	if fi, err := os.Stat(path + "-wal"); err != nil || fi.Size() != 0 {
		t.Fatalf("after close the -wal file is %v (%v), want it empty: every event in the database file", fi, err)
	}
	// Everything is in the database file itself.
	s = mustOpen(t, path, &sqlite.Options{ReadOnly: true})
	if sum, err := s.Head(t.Context(), "b"); err != nil || sum.Head != 3 {
		t.Fatalf("head of b after reopening: %d, %v", sum.Head, err)
	}
}

func TestSchemaVersion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	for range 2 { // creating, then opening an up-to-date database
		s, err := sqlite.Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	var app, ver int64
	if err := sqlDB(t, path).QueryRow("SELECT (SELECT application_id FROM pragma_application_id), (SELECT user_version FROM pragma_user_version)").Scan(&app, &ver); err != nil {
		t.Fatal(err)
	}
	if app != 0x6c697465 || ver != 2 {
		t.Fatalf("application_id %#x, user_version %d; want 0x6c697465, 2", app, ver)
	}
}

// TestOpenTogether opens a new database from several stores at once, as
// several processes starting together would: each must find the schema
// created exactly once.
func TestOpenTogether(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	const n = 6
	var wg sync.WaitGroup
	stores := make([]*sqlite.Store, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { stores[i], errs[i] = sqlite.Open(path, nil) })
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("open %d: %v", i, errs[i])
		}
		defer stores[i].Close()
	}
	for i, s := range stores {
		id := string(rune('a' + i))
		if _, err := s.Append(t.Context(), id, 0, []session.Event{startedIn(id, "ns")}); err != nil {
			t.Fatalf("store %d: %v", i, err)
		}
	}
	list, err := stores[0].List(t.Context(), "ns", checkpoint.ListOptions{})
	if err != nil || len(list) != n {
		t.Fatalf("list: %d sessions, %v; want %d", len(list), err, n)
	}
}

// TestBadLocations opens stores where no database can be, or where the
// file is not ours. Each must fail with an error that names the path and
// says what to do, change nothing on disk, and not crash.
func TestBadLocations(t *testing.T) {
	garbage := make([]byte, 8192)
	for i := range garbage {
		garbage[i] = byte(rand.N(256))
	}
	cases := []struct {
		name string
		// setUp prepares dir and returns the path to open.
		setUp func(t *testing.T, dir string) string
		// want are phrases the errors must hold (writable and read-only).
		want []string
	}{
		{
			name:  "directory",
			setUp: func(t *testing.T, dir string) string { return dir },
			want:  []string{"is a directory", "sessions.db"},
		},
		{
			name: "missing parent directory",
			setUp: func(t *testing.T, dir string) string {
				return filepath.Join(dir, "nope", "sessions.db")
			},
			want: []string{"nope"},
		},
		{
			name: "under a regular file",
			setUp: func(t *testing.T, dir string) string {
				writeFile(t, filepath.Join(dir, "file"), []byte("data"))
				return filepath.Join(dir, "file", "sessions.db")
			},
			want: []string{"not a directory"},
		},
		{name: "one garbage byte", setUp: garbageFile([]byte("x")), want: []string{"not a SQLite database", "nothing was changed"}},
		{name: "short garbage", setUp: garbageFile([]byte("SQLite format")), want: []string{"not a SQLite database"}},
		{name: "text", setUp: garbageFile([]byte(strings.Repeat("these are my notes\n", 30))), want: []string{"not a SQLite database"}},
		{name: "random bytes", setUp: garbageFile(garbage), want: []string{"not a SQLite database"}},
		{
			name:  "header then garbage",
			setUp: garbageFile(append([]byte("SQLite format 3\x00"), garbage...)),
			want:  []string{"not a SQLite database"},
		},
		{
			name: "another program's database",
			setUp: func(t *testing.T, dir string) string {
				path := filepath.Join(dir, "app.db")
				if _, err := sqlDB(t, path).Exec("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('keep me')"); err != nil {
					t.Fatal(err)
				}
				return path
			},
			want: []string{"another program", "nothing was changed"},
		},
		{
			name: "another program's application id",
			setUp: func(t *testing.T, dir string) string {
				path := filepath.Join(dir, "app.db")
				if _, err := sqlDB(t, path).Exec("PRAGMA application_id = 42; CREATE TABLE sessions (x)"); err != nil {
					t.Fatal(err)
				}
				return path
			},
			want: []string{"another program", "0x2a"},
		},
		{
			name: "newer schema",
			setUp: func(t *testing.T, dir string) string {
				path := filepath.Join(dir, "sessions.db")
				s, err := sqlite.Open(path, nil)
				if err != nil {
					t.Fatal(err)
				}
				fill(t, s)
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				db := sqlDB(t, path)
				if _, err := db.Exec("PRAGMA user_version = 99"); err != nil {
					t.Fatal(err)
				}
				db.Close()
				return path
			},
			want: []string{"newer lite-agent", "upgrade"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := tc.setUp(t, dir)
			before := snapshot(t, dir)
			for _, opts := range []*sqlite.Options{nil, {ReadOnly: true}} {
				s, err := sqlite.Open(path, opts)
				if err == nil {
					s.Close()
					t.Fatalf("open %s (%+v) succeeded", path, opts)
				}
				msg := err.Error()
				t.Logf("%+v: %s", opts, msg)
				if !strings.Contains(msg, path) {
					t.Errorf("error %q does not name %s", msg, path)
				}
				for _, w := range tc.want {
					if !strings.Contains(msg, w) {
						t.Errorf("error %q does not say %q", msg, w)
					}
				}
				sameState(t, "a failed open", before, dir)
			}
		})
	}
}

// garbageFile returns a setUp that writes content to a file.
func garbageFile(content []byte) func(t *testing.T, dir string) string {
	return func(t *testing.T, dir string) string {
		path := filepath.Join(dir, "sessions.db")
		writeFile(t, path, content)
		return path
	}
}

func writeFile(tb testing.TB, path string, content []byte) {
	tb.Helper()
	if err := os.WriteFile(path, content, 0o644); err != nil {
		tb.Fatal(err)
	}
}

// TestUnwritableDirectory needs a directory this process cannot write to;
// root can write anywhere, so it only runs as another user (the path under
// a regular file in TestBadLocations covers root).
func TestUnwritableDirectory(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("running as root, which may write to any directory; TestBadLocations/under_a_regular_file covers a location that cannot hold a database")
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(dir, 0o700)
	path := filepath.Join(dir, "sessions.db")
	_, err := sqlite.Open(path, nil)
	if err == nil || !strings.Contains(err.Error(), "cannot create") || !strings.Contains(err.Error(), path) {
		t.Fatalf("open in a read-only directory: %v, want an error that it cannot create %s", err, path)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a file appeared: %v", err)
	}
}

func TestEventTooLarge(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sessions.db")
	s := mustOpen(t, path, &sqlite.Options{MaxEventBytes: 1 << 10})
	ctx := t.Context()
	head, err := s.Append(ctx, "s", 0, []session.Event{startedIn("s", "ns"), promptEvent("small")})
	if err != nil {
		t.Fatal(err)
	}
	want, err := checkpoint.ReadAll(ctx, s, "s")
	if err != nil {
		t.Fatal(err)
	}
	big := promptEvent(strings.Repeat("x", 2<<10))
	for name, batch := range map[string][]session.Event{
		"alone":            {big},
		"after a small":    {promptEvent("fits"), big},
		"before a small":   {big, promptEvent("fits")},
		"in a new session": nil,
	} {
		id, expected := "s", head
		if batch == nil {
			id, expected, batch = "new", 0, []session.Event{startedIn("new", "ns"), big}
		}
		_, err := s.Append(ctx, id, expected, batch)
		if !errors.Is(err, checkpoint.ErrTooLarge) {
			t.Fatalf("%s: append of a %d-byte event over a 1 KiB limit: %v, want ErrTooLarge", name, len(big.Data), err)
		}
		if !strings.Contains(err.Error(), "1024") {
			t.Errorf("%s: error %q does not state the limit", name, err)
		}
	}
	got, err := checkpoint.ReadAll(ctx, s, "s")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("log has %d events after rejected appends, want %d", len(got), len(want))
	}
	if _, err := s.Head(ctx, "new"); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("a session whose create was rejected: %v, want ErrNotFound", err)
	}
	// At the limit exactly is fine.
	exact := session.Event{Type: session.TypeUserPrompt, Data: bytes.Repeat([]byte("y"), 1<<10)}
	if _, err := s.Append(ctx, "s", head, []session.Event{exact}); err != nil {
		t.Fatalf("append of an event of exactly the limit: %v", err)
	}
}

func TestBadOptions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	for name, opts := range map[string]*sqlite.Options{
		"negative limit":   {MaxEventBytes: -1},
		"limit over 1e9":   {MaxEventBytes: sqlite.MaxEventBytesLimit + 1},
		"negative timeout": {BusyTimeout: -time.Second},
	} {
		if s, err := sqlite.Open(path, opts); err == nil {
			s.Close()
			t.Errorf("%s: open succeeded", name)
		}
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("refused options left a file behind: %v", err)
	}
	if _, err := sqlite.Open("", nil); err == nil {
		t.Error("open of an empty path succeeded")
	}
}

func TestTimesKeptToTheMicrosecond(t *testing.T) {
	s := mustOpen(t, sqlite.Memory, nil)
	when := time.Date(2026, 3, 4, 5, 6, 7, 123456789, time.FixedZone("X", 3600))
	e := startedIn("s", "ns")
	e.Time = when
	if _, err := s.Append(t.Context(), "s", 0, []session.Event{e}); err != nil {
		t.Fatal(err)
	}
	got, err := checkpoint.ReadAll(t.Context(), s, "s")
	if err != nil {
		t.Fatal(err)
	}
	want := when.Truncate(time.Microsecond).UTC()
	if !got[0].Time.Equal(want) || got[0].Time.Location() != time.UTC {
		t.Fatalf("time %v came back as %v, want %v", when, got[0].Time, want)
	}
}

// TestReadPages reads logs longer than a page, by count and by size.
func TestReadPages(t *testing.T) {
	s, _ := openFile(t)
	ctx := t.Context()
	head, err := s.Append(ctx, "s", 0, []session.Event{startedIn("s", "ns")})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	want = append(want, "")
	batch := make([]session.Event, 0, 100)
	small := int64(2*sqlite.PageRows + 210) // two whole pages and part of a third
	for head < small {
		batch = batch[:0]
		for range min(100, small-head) {
			batch = append(batch, promptEvent(strconv.Itoa(len(want)+len(batch))))
		}
		for _, e := range batch {
			want = append(want, string(e.Data))
		}
		if head, err = s.Append(ctx, "s", head, batch); err != nil {
			t.Fatal(err)
		}
	}
	for range 5 { // 1.5 MiB each: pages end by size
		e := session.Event{Type: session.TypeUserPrompt, Data: bytes.Repeat([]byte{'a' + byte(head%26)}, 3<<19)}
		want = append(want, string(e.Data))
		if head, err = s.Append(ctx, "s", head, []session.Event{e}); err != nil {
			t.Fatal(err)
		}
	}
	const p = sqlite.PageRows
	for _, from := range []int64{-5, 1, p, p + 1, 2*p - 24, small + 1, head, head + 1} {
		n := 0
		for e, err := range s.Read(ctx, "s", from) {
			if err != nil {
				t.Fatal(err)
			}
			seq := max(from, 1) + int64(n)
			if e.Seq != seq {
				t.Fatalf("from %d: event %d has seq %d, want %d", from, n, e.Seq, seq)
			}
			if seq > 1 && string(e.Data) != want[seq-1] {
				t.Fatalf("from %d: seq %d has different data", from, seq)
			}
			n++
		}
		if wantN := max(head-max(from, 1)+1, 0); int64(n) != wantN {
			t.Fatalf("from %d: read %d events, want %d", from, n, wantN)
		}
	}
}

// openFile opens a store on a new file in a temporary directory.
func openFile(tb testing.TB) (*sqlite.Store, string) {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "sessions.db")
	return mustOpen(tb, path, nil), path
}

// TestWriteWhileReading appends from inside a Read loop, to the session
// being read and to another. The in-memory store has one connection: Read
// must not hold it while the caller's loop runs.
func TestWriteWhileReading(t *testing.T) {
	for name, path := range map[string]string{"memory": sqlite.Memory, "file": filepath.Join(t.TempDir(), "s.db")} {
		t.Run(name, func(t *testing.T) {
			s := mustOpen(t, path, nil)
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			n := 2*sqlite.PageRows + 176 // more than two pages
			batch := []session.Event{startedIn("s", "ns")}
			for len(batch) < n {
				batch = append(batch, promptEvent("p"))
			}
			head, err := s.Append(ctx, "s", 0, batch)
			if err != nil {
				t.Fatal(err)
			}
			other, err := s.Append(ctx, "other", 0, []session.Event{startedIn("other", "ns")})
			if err != nil {
				t.Fatal(err)
			}
			read := 0
			for e, err := range s.Read(ctx, "s", 1) {
				if err != nil {
					t.Fatal(err)
				}
				if e.Seq != int64(read+1) {
					t.Fatalf("event %d has seq %d", read+1, e.Seq)
				}
				read++
				if read%100 == 0 {
					if head, err = s.Append(ctx, "s", head, []session.Event{promptEvent("more")}); err != nil {
						t.Fatal(err)
					}
				}
				if read%10 == 0 {
					if other, err = s.Append(ctx, "other", other, []session.Event{promptEvent("more")}); err != nil {
						t.Fatal(err)
					}
				}
			}
			if read < n {
				t.Fatalf("read %d events, want at least %d", read, n)
			}
		})
	}
}

func TestMemoryStoresAreSeparate(t *testing.T) {
	a := mustOpen(t, sqlite.Memory, nil)
	b := mustOpen(t, sqlite.Memory, nil)
	if _, err := a.Append(t.Context(), "s", 0, []session.Event{startedIn("s", "ns")}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Head(t.Context(), "s"); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("a session of one in-memory store is in another: %v", err)
	}
	if _, err := sqlite.Open(sqlite.Memory, &sqlite.Options{ReadOnly: true}); err == nil {
		t.Fatal("a read-only in-memory store opened")
	}
}

// TestDamagedDatabase overwrites pages in the middle of a database: every
// call either works or fails with an error that says the file is damaged.
func TestDamagedDatabase(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sessions.db")
	s, err := sqlite.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	head, err := s.Append(t.Context(), "s", 0, []session.Event{startedIn("s", "ns")})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if head, err = s.Append(t.Context(), "s", head, []session.Event{promptEvent(strings.Repeat(strconv.Itoa(i), 500))}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 4*4096 {
		t.Fatalf("database of %d bytes, too small to damage its middle", len(b))
	}
	for i := 4096; i < len(b); i++ { // everything but the header page
		b[i] ^= 0x5a
	}
	writeFile(t, path, b)
	failed := false
	check := func(what string, err error) {
		t.Helper()
		if err == nil {
			return
		}
		failed = true
		t.Logf("%s: %v", what, err)
		if !strings.Contains(err.Error(), "damaged") || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v, want it to say %s is damaged", what, err, path)
		}
	}
	for _, opts := range []*sqlite.Options{{ReadOnly: true}, nil} {
		s, err := sqlite.Open(path, opts)
		check("open", err)
		if err != nil {
			continue
		}
		_, err = s.List(t.Context(), "", checkpoint.ListOptions{})
		check("list", err)
		_, err = s.Head(t.Context(), "s")
		check("head", err)
		_, err = checkpoint.ReadAll(t.Context(), s, "s")
		check("read", err)
		s.Close()
	}
	if !failed {
		t.Fatal("no call noticed the damage")
	}
}

// TestReadAcrossRewrite changes a log while it is read, between pages: a
// reader either sees one history or is told the log changed, never the
// start of one history followed by the end of another.
func TestReadAcrossRewrite(t *testing.T) {
	cases := []struct {
		name   string
		change func(t *testing.T, s *sqlite.Store, head int64)
		want   func(err error) bool
	}{
		{"truncated and regrown", func(t *testing.T, s *sqlite.Store, head int64) {
			h, err := s.Truncate(t.Context(), "s", 300, head)
			if err != nil {
				t.Fatal(err)
			}
			batch := make([]session.Event, 0, 1000)
			for range cap(batch) {
				batch = append(batch, promptEvent("other history"))
			}
			if _, err := s.Append(t.Context(), "s", h, batch); err != nil {
				t.Fatal(err)
			}
		}, checkpoint.IsConflict},
		{"truncated", func(t *testing.T, s *sqlite.Store, head int64) {
			if _, err := s.Truncate(t.Context(), "s", 100, head); err != nil {
				t.Fatal(err)
			}
		}, checkpoint.IsConflict},
		{"deleted", func(t *testing.T, s *sqlite.Store, head int64) {
			if err := s.Delete(t.Context(), "s"); err != nil {
				t.Fatal(err)
			}
		}, func(err error) bool { return errors.Is(err, checkpoint.ErrNotFound) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := openFile(t)
			batch := []session.Event{startedIn("s", "ns")}
			for len(batch) < sqlite.PageRows+588 { // more than one page
				batch = append(batch, promptEvent("first history "+strconv.Itoa(len(batch)+1)))
			}
			head, err := s.Append(t.Context(), "s", 0, batch)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			var end error
			for e, err := range s.Read(t.Context(), "s", 1) {
				if err != nil {
					end = err
					break
				}
				if n++; n > 1 && string(e.Data) != string(batch[n-1].Data) {
					t.Fatalf("event %d is %s, from another history", n, e.Data)
				}
				if n == 10 {
					tc.change(t, s, head)
				}
			}
			if !tc.want(end) {
				t.Fatalf("read %d events, then %v", n, end)
			}
			t.Logf("read %d events, then: %v", n, end)
		})
	}
}

// TestNoGoroutineLeft checks that a store leaves no goroutine behind once
// closed, after writes, reads, cancelled calls and a Read stopped early.
func TestNoGoroutineLeft(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	path := filepath.Join(t.TempDir(), "sessions.db")
	s, err := sqlite.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	fill(t, s)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			id := "g" + strconv.Itoa(i)
			if _, err := s.Append(t.Context(), id, 0, []session.Event{startedIn(id, "ns")}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for range s.Read(t.Context(), "a", 1) {
		break
	}
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.Head(cancelled, "a"); !errors.Is(err, context.Canceled) {
		t.Fatalf("head with a cancelled context: %v", err)
	}
	if _, err := s.List(t.Context(), "ns", checkpoint.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestSessionEventsView reads a database with plain SQL through the view
// doc.go documents, as a person with the sqlite3 shell would.
func TestSessionEventsView(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	s, err := sqlite.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	fill(t, s)
	if err := s.Delete(t.Context(), "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(t.Context(), "c", 0, []session.Event{startedIn("c", "ns")}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db := sqlDB(t, path)
	rows, err := db.Query(`SELECT session, seq, type FROM session_events ORDER BY session, seq`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var id, typ string
		var seq int64
		if err := rows.Scan(&id, &seq, &typ); err != nil {
			t.Fatal(err)
		}
		got = append(got, id+" "+strconv.FormatInt(seq, 10)+" "+typ)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	want := []string{"b 1 session_started", "b 2 user_prompt", "b 3 user_prompt", "c 1 session_started"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("session_events (-want +got):\n%s", diff)
	}
	var seqs string
	if err := db.QueryRow(`SELECT group_concat(seq, ' ') FROM (SELECT seq FROM events ORDER BY key)`).Scan(&seqs); err != nil {
		t.Fatal(err)
	}
	if seqs != "1 2 3 1" {
		t.Fatalf("the events table's seq column reads %q, want \"1 2 3 1\"", seqs)
	}
}
