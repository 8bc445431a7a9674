package sqlite

import (
	"context"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/internal/entry"
	"github.com/lite-agent/lite-agent/checkpoint/internal/groupcommit"
	"github.com/lite-agent/lite-agent/session"
)

// openTemp opens a store on a new file and closes it when the test ends.
func openTemp(tb testing.TB, opts *Options) (*Store, string) {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "sessions.db")
	s, err := Open(path, opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Error(err)
		}
	})
	return s, path
}

func started(id string) session.Event {
	return session.MustNew(session.TypeSessionStarted, session.SessionStarted{ID: id, Namespace: "ns"})
}

func prompt(text string) session.Event {
	return session.MustNew(session.TypeUserPrompt, session.UserPrompt{Text: text})
}

// appendReq builds a prepared append request as Append would.
func appendReq(tb testing.TB, ctx context.Context, id string, head int64, events ...session.Event) *request {
	tb.Helper()
	prepared, err := checkpoint.Prepare(id, head, events, 0)
	if err != nil {
		tb.Fatal(err)
	}
	return &request{ctx: ctx, op: opAppend, id: id, expected: head, events: prepared}
}

// TestBatchOutcomes runs batches through commit directly: every request in
// a batch gets its own head check and outcome, later requests see earlier
// ones, and a request that breaks the transaction does not fail the rest.
func TestBatchOutcomes(t *testing.T) {
	s, _ := openTemp(t, nil)
	ctx := t.Context()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()

	// A request whose events carry a seq already taken: the INSERT fails
	// with a constraint error, which fails the whole transaction.
	broken := appendReq(t, ctx, "b", 0, started("b"), prompt("one"))
	broken.events[1].Seq = 1

	batch := []*request{
		appendReq(t, ctx, "a", 0, started("a")),
		appendReq(t, ctx, "a", 1, prompt("first")),    // sees the create above
		appendReq(t, ctx, "a", 1, prompt("stale")),    // conflicts with the one above
		appendReq(t, ctx, "c", 0, started("c")),       // another session
		appendReq(t, cancelled, "d", 0, started("d")), // its caller gave up
		broken,
		{ctx: ctx, op: opTruncate, id: "a", expected: 2, keep: 1},
		{ctx: ctx, op: opDelete, id: "nope"},
	}
	s.commit(batch)

	type result struct {
		head int64
		err  string
	}
	got := make([]result, len(batch))
	for i, r := range batch {
		got[i].head = r.head
		if r.err != nil {
			got[i].err = r.err.Error()
		}
	}
	want := []result{
		{head: 1},
		{head: 2},
		{err: (&checkpoint.ConflictError{Session: "a", Expected: 1, Actual: 2}).Error()},
		{head: 1},
		{err: "append d: " + context.Canceled.Error()},
		{err: "UNIQUE constraint failed"},
		{head: 1},
		{err: "delete nope: " + checkpoint.ErrNotFound.Error()},
	}
	for i := range want {
		ok := got[i].head == want[i].head && strings.Contains(got[i].err, want[i].err) && (want[i].err == "") == (got[i].err == "")
		if !ok {
			t.Errorf("request %d: head %d, error %q; want head %d, error containing %q", i, got[i].head, got[i].err, want[i].head, want[i].err)
		}
	}
	var ce *checkpoint.ConflictError
	if !errors.As(batch[2].err, &ce) {
		t.Fatalf("stale append: %v is not a *checkpoint.ConflictError", batch[2].err)
	}

	for id, head := range map[string]int64{"a": 1, "c": 1} {
		sum, err := s.Head(ctx, id)
		if err != nil || sum.Head != head {
			t.Errorf("head of %s: %d, %v; want %d", id, sum.Head, err, head)
		}
	}
	for _, id := range []string{"b", "d"} {
		if _, err := s.Head(ctx, id); !errors.Is(err, checkpoint.ErrNotFound) {
			t.Errorf("head of %s, whose append failed: %v, want ErrNotFound", id, err)
		}
	}
}

// TestGroupCommitShares checks that concurrent appends share commits.
func TestGroupCommitShares(t *testing.T) {
	s, _ := openTemp(t, nil)
	var mu sync.Mutex
	largest := 0
	commit := s.commit
	s.group.Submit(&request{ctx: t.Context(), op: opDelete, id: "warm-up"}) // no batching yet
	s.group = groupcommit.New(func(batch []*request) {
		mu.Lock()
		largest = max(largest, len(batch))
		mu.Unlock()
		commit(batch)
	})
	const writers, appends = 8, 20
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			id := fmt.Sprint("w", w)
			head, err := s.Append(t.Context(), id, 0, []session.Event{started(id)})
			for range appends {
				if err != nil {
					break
				}
				head, err = s.Append(t.Context(), id, head, []session.Event{prompt("p")})
			}
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if largest < 2 {
		t.Fatalf("%d writers appending at once never shared a commit", writers)
	}
	t.Logf("largest batch: %d", largest)
}

// holdWriteLock takes the write lock of the database at path on a
// connection of its own and returns a function that releases it.
func holdWriteLock(tb testing.TB, path string) (release func()) {
	tb.Helper()
	other, err := Open(path, nil)
	if err != nil {
		tb.Fatal(err)
	}
	c, err := other.pool.get(tb.Context())
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := c.exec(tb.Context(), "BEGIN IMMEDIATE"); err != nil {
		tb.Fatal(err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			if _, err := c.exec(context.Background(), "ROLLBACK"); err != nil {
				tb.Error(err)
			}
			other.pool.put(c, false)
			if err := other.Close(); err != nil {
				tb.Error(err)
			}
		})
	}
	tb.Cleanup(release)
	return release
}

// TestLockedByAnotherConnection checks what a writer sees while another
// connection (as another process would) holds the write lock: it waits, and
// then either succeeds, fails with a clear message (no SQLITE_BUSY), or
// stops when its context ends. Nothing of a failed append is written.
func TestLockedByAnotherConnection(t *testing.T) {
	cases := []struct {
		name    string
		timeout time.Duration // BusyTimeout
		release time.Duration // when the lock is released; 0: never
		ctxWait time.Duration // the caller's deadline; 0: none
		want    func(error) bool
	}{
		{"released in time", time.Minute, 50 * time.Millisecond, 0, func(err error) bool { return err == nil }},
		{"held too long", 200 * time.Millisecond, 0, 0, func(err error) bool {
			msg := fmt.Sprint(err)
			return strings.Contains(msg, "stayed locked by another connection") && !strings.Contains(msg, "SQLITE_BUSY") && !strings.Contains(msg, "database is locked")
		}},
		{"caller gives up", time.Minute, 0, 30 * time.Millisecond, func(err error) bool { return errors.Is(err, context.DeadlineExceeded) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, path := openTemp(t, &Options{BusyTimeout: tc.timeout})
			ctx := t.Context()
			if _, err := s.Append(ctx, "s", 0, []session.Event{started("s")}); err != nil {
				t.Fatal(err)
			}
			release := holdWriteLock(t, path)
			if tc.release > 0 {
				time.AfterFunc(tc.release, release)
			}
			// Reads go on while the write lock is held.
			sum, err := s.Head(ctx, "s")
			if err != nil {
				t.Fatalf("head while the write lock is held: %v", err)
			}
			actx := ctx
			if tc.ctxWait > 0 {
				var cancel context.CancelFunc
				actx, cancel = context.WithTimeout(ctx, tc.ctxWait)
				defer cancel()
			}
			_, err = s.Append(actx, "s", sum.Head, []session.Event{prompt("p")})
			if !tc.want(err) {
				t.Fatalf("append: %v", err)
			}
			release()
			want := int64(1)
			if err == nil {
				want = 2
			}
			if sum, err := s.Head(ctx, "s"); err != nil || sum.Head != want {
				t.Fatalf("head %d, %v; want %d", sum.Head, err, want)
			}
		})
	}
}

// TestStoredSummaryIsTheFold checks the sessions row after appends and a
// truncate: its packed entry, its JSON and its columns all hold the fold of
// the log.
func TestStoredSummaryIsTheFold(t *testing.T) {
	s, _ := openTemp(t, nil)
	ctx := t.Context()
	events := []session.Event{
		session.MustNew(session.TypeSessionStarted, session.SessionStarted{ID: "s", Namespace: "ns", Kind: "", Workdir: "/w", Model: "m", Parent: &session.ForkRef{Session: "p", Seq: 3}}),
		prompt("first prompt"),
		session.MustNew(session.TypeAssistantMessage, session.AssistantMessage{Blocks: []session.Block{{Type: session.BlockToolUse, ID: "c1", Name: "bash"}}}),
		session.MustNew(session.TypeToolStarted, session.ToolStarted{CallID: "c1", Tool: "bash"}),
		session.MustNew(session.TypeToolFinished, session.ToolFinished{CallID: "c1", Output: "ok"}),
		session.MustNew(session.TypeTurnCompleted, session.TurnCompleted{}),
		prompt("second"),
		session.MustNew(session.TypeToolStarted, session.ToolStarted{CallID: "c2", Tool: "bash"}),
	}
	head := int64(0)
	for _, e := range events {
		var err error
		if head, err = s.Append(ctx, "s", head, []session.Event{e}); err != nil {
			t.Fatal(err)
		}
	}
	check := func(keep int) {
		t.Helper()
		log, err := checkpoint.ReadAll(ctx, s, "s")
		if err != nil {
			t.Fatal(err)
		}
		if len(log) != keep {
			t.Fatalf("log of %d events, want %d", len(log), keep)
		}
		want := session.Summarize("s", log)
		stored := storedRow(t, s, "s")
		if diff := cmp.Diff(want, stored.entry); diff != "" {
			t.Errorf("entry after %d events (-fold +stored):\n%s", keep, diff)
		}
		if diff := cmp.Diff(want, stored.json); diff != "" {
			t.Errorf("JSON after %d events (-fold +stored):\n%s", keep, diff)
		}
		cols := []any{want.Namespace, want.Kind, want.Head, int64(want.Messages), string(want.Status), want.Created.UnixMicro(), want.Updated.UnixMicro(), want.Title}
		if diff := cmp.Diff(cols, stored.columns); diff != "" {
			t.Errorf("columns after %d events (-fold +stored):\n%s", keep, diff)
		}
		list, err := s.List(ctx, "ns", checkpoint.ListOptions{})
		if err != nil || len(list) != 1 {
			t.Fatalf("list: %v, %v", list, err)
		}
		if diff := cmp.Diff(want, list[0]); diff != "" {
			t.Errorf("listed after %d events (-fold +listed):\n%s", keep, diff)
		}
	}
	check(len(events))
	if head, err := s.Truncate(ctx, "s", 4, head); err != nil || head != 4 {
		t.Fatalf("truncate to 4: %d, %v", head, err)
	}
	check(4) // c1 is open again, the second prompt is gone
}

// storedSummary is a sessions row decoded three ways.
type storedSummary struct {
	entry, json session.Summary
	columns     []any
}

func storedRow(tb testing.TB, s *Store, id string) storedSummary {
	tb.Helper()
	c, err := s.pool.get(tb.Context())
	if err != nil {
		tb.Fatal(err)
	}
	defer s.pool.put(c, false)
	dest := make([]driver.Value, 10)
	found, err := c.row(tb.Context(), dest, `SELECT entry, summary, namespace, kind, head, messages, status, created, updated, title FROM sessions WHERE id = ?`, id)
	if err != nil || !found {
		tb.Fatalf("row of %s: %v, %v", id, found, err)
	}
	var out storedSummary
	if out.entry, err = entry.Decode(asString(dest[0])); err != nil {
		tb.Fatal(err)
	}
	if err := json.Unmarshal([]byte(asString(dest[1])), &out.json); err != nil {
		tb.Fatal(err)
	}
	for _, v := range dest[2:] {
		out.columns = append(out.columns, any(v))
	}
	return out
}

// TestQueryPlans pins the plans the speed of the store depends on: List
// reads nothing but the sessions_list index and never sorts for one
// namespace, Read and Truncate walk a range of the events table's keys, and
// the head check is one primary key lookup.
func TestQueryPlans(t *testing.T) {
	s, _ := openTemp(t, nil)
	c, err := s.pool.get(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer s.pool.put(c, false)
	cases := []struct {
		query      string
		args       int
		want, nope []string
	}{
		{stmtListKind, 3, []string{"USING COVERING INDEX sessions_list"}, []string{"TEMP B-TREE"}},
		{stmtListAll, 2, []string{"USING COVERING INDEX sessions_list"}, []string{"TEMP B-TREE"}},
		{stmtListNSKind, 2, []string{"COVERING INDEX sessions_list"}, nil},
		{stmtListNSAll, 1, []string{"COVERING INDEX sessions_list"}, nil},
		{stmtPage, 3, []string{"SEARCH s USING PRIMARY KEY (id=?)", "SEARCH e USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)"}, []string{"TEMP B-TREE"}},
		{stmtRange, 2, []string{"SEARCH events USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)"}, []string{"TEMP B-TREE"}},
		{stmtDropRange, 2, []string{"SEARCH events USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)"}, nil},
		{stmtSummary, 1, []string{"SEARCH sessions USING PRIMARY KEY (id=?)"}, nil},
		{stmtNumber, 0, []string{"SEARCH sessions USING COVERING INDEX sqlite_autoindex_sessions_2"}, nil},
		{stmtPendingEvents, 1, []string{"SEARCH p USING INTEGER PRIMARY KEY (rowid>?)", "SEARCH s USING INDEX sqlite_autoindex_sessions_2 (n=?)", "SEARCH e USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)"}, []string{"TEMP B-TREE", "SCAN s"}},
		{stmtPendingSearch, 1, []string{"SCAN p", "SEARCH s USING INDEX sqlite_autoindex_sessions_2 (n=?)", "SEARCH e USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)"}, []string{"SCAN s"}},
		{`SELECT * FROM session_events WHERE session = ?`, 1, []string{"SEARCH e USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)"}, nil},
	}
	for _, tc := range cases {
		args := make([]driver.Value, tc.args)
		for i := range args {
			args[i] = int64(1)
		}
		rows, err := c.query(t.Context(), "EXPLAIN QUERY PLAN "+tc.query, args...)
		if err != nil {
			t.Fatalf("%s: %v", tc.query, err)
		}
		var plan []string
		dest := make([]driver.Value, len(rows.Columns()))
		for rows.Next(dest) == nil {
			plan = append(plan, fmt.Sprint(dest[len(dest)-1]))
		}
		rows.Close()
		text := strings.Join(plan, "; ")
		t.Logf("%s\n  plan: %s", strings.Join(strings.Fields(tc.query), " "), text)
		for _, w := range tc.want {
			if !strings.Contains(text, w) {
				t.Errorf("plan of %s\n  is %q, want %q in it", tc.query, text, w)
			}
		}
		for _, n := range tc.nope {
			if strings.Contains(text, n) {
				t.Errorf("plan of %s\n  is %q, want no %q in it", tc.query, text, n)
			}
		}
	}
}

// TestCloseBesideAReader closes a store while another connection (another
// process, say) holds a read transaction, so the WAL cannot be fully
// checkpointed: Close must give up on that quickly, without an error, and
// leave the data whole.
func TestCloseBesideAReader(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	s, err := Open(path, &Options{BusyTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(t.Context(), "s", 0, []session.Event{started("s"), prompt("kept")}); err != nil {
		t.Fatal(err)
	}
	reader, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	c, err := reader.pool.get(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.exec(t.Context(), "BEGIN"); err != nil {
		t.Fatal(err)
	}
	if found, err := c.row(t.Context(), make([]driver.Value, 1), stmtExists, "s"); err != nil || !found {
		t.Fatalf("reader: %v, %v", found, err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("close beside a reader: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("close waited for the reader (the busy timeout is 30s)")
	}
	if _, err := c.exec(t.Context(), "COMMIT"); err != nil {
		t.Fatal(err)
	}
	reader.pool.put(c, false)
	if sum, err := reader.Head(t.Context(), "s"); err != nil || sum.Head != 2 {
		t.Fatalf("after close: head %d, %v", sum.Head, err)
	}
}

// codeError is a driver error with a SQLite result code.
type codeError int

func (e codeError) Error() string { return fmt.Sprintf("sqlite error %d", int(e)) }
func (e codeError) Code() int     { return int(e) }

func TestExplain(t *testing.T) {
	s := &Store{path: "/x/sessions.db"}
	cases := []struct {
		code int
		want string
	}{
		{13, "the disk holding /x/sessions.db is full"},
		{10 | 4<<8, "input/output error on /x/sessions.db"}, // SQLITE_IOERR_FSYNC
		{8, "/x/sessions.db cannot be written"},
		{11, "/x/sessions.db is damaged"},
		{26, "/x/sessions.db is damaged"},
		{1, "sqlite error 1"},
	}
	for _, tc := range cases {
		err := s.explain(codeError(tc.code))
		if !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("code %d: %q, want it to start with %q", tc.code, err, tc.want)
		}
		if code(err) != tc.code {
			t.Errorf("code %d: the explained error lost the code", tc.code)
		}
	}
}
