package sqlite

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
)

// These tests cover the search index trailing the logs (pending.go).

// count runs a query of one integer on a connection of s.
func count(t *testing.T, s *Store, query string, args ...driver.Value) int64 {
	t.Helper()
	c, err := s.conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer s.pool.put(c, false)
	dest := make([]driver.Value, 1)
	if _, err := c.row(t.Context(), dest, query, args...); err != nil {
		t.Fatal(err)
	}
	n, _ := dest[0].(int64)
	return n
}

// found returns the seqs of session id that a search for query finds.
func found(t *testing.T, c checkpoint.Checkpointer, id, query string) []int64 {
	t.Helper()
	hits, err := checkpoint.Search(t.Context(), c, query, checkpoint.SearchOptions{Limit: 1000})
	if err != nil {
		t.Fatalf("search %q: %v", query, err)
	}
	var seqs []int64
	for _, h := range hits {
		if h.Session == id {
			seqs = append(seqs, h.Seq)
		}
	}
	return seqs
}

// rawDB opens path through database/sql, beside the store, as a person
// with the sqlite3 shell would.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func mustQuery(t *testing.T, text string) checkpoint.Query {
	t.Helper()
	q, err := checkpoint.ParseQuery(text)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func mustAppend(t *testing.T, s *Store, id string, head int64, events ...session.Event) int64 {
	t.Helper()
	h, err := s.Append(t.Context(), id, head, events)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestIndexTrailsAppends: an append writes no index row, only a mark; the
// first Search indexes the marked events, finds them and clears the marks.
func TestIndexTrailsAppends(t *testing.T) {
	s, _ := openTemp(t, nil)
	mustAppend(t, s, "s", 0, started("s"), prompt("alpha parser"))
	mustAppend(t, s, "s", 2, prompt("beta parser"))
	if rows, marks := count(t, s, `SELECT count(*) FROM search`), count(t, s, `SELECT count(*) FROM search_pending`); rows != 0 || marks != 1 {
		t.Fatalf("after two appends: %d index rows and %d marks, want 0 and 1", rows, marks)
	}
	if after := count(t, s, `SELECT after FROM search_pending`); after != 1 {
		t.Errorf("the mark is after seq %d, want 1 (the first prompt is seq 2)", after)
	}
	if got := found(t, s, "s", "parser"); fmt.Sprint(got) != "[3 2]" {
		t.Errorf("search found seqs %v, want [3 2]", got)
	}
	if rows, marks := count(t, s, `SELECT count(*) FROM search`), count(t, s, `SELECT count(*) FROM search_pending`); rows != 2 || marks != 0 {
		t.Errorf("after the search: %d index rows and %d marks, want 2 and 0", rows, marks)
	}
}

// TestCloseIndexes: Close leaves fewer than indexLag marked events to a
// later process, and indexes them once that many are marked, whichever
// stores appended them, so that a database at rest is at most indexLag
// events behind.
func TestCloseIndexes(t *testing.T) {
	defer func(n int64) { indexLag = n }(indexLag)
	indexLag = 5
	path := filepath.Join(t.TempDir(), "s.db")
	marked := func(events ...session.Event) (rows, marks int64) {
		t.Helper()
		s, err := Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		head, err := s.Head(t.Context(), "s")
		if err != nil && !errors.Is(err, checkpoint.ErrNotFound) {
			t.Fatal(err)
		}
		mustAppend(t, s, "s", head.Head, events...)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		ro, err := Open(path, &Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer ro.Close()
		return count(t, ro, `SELECT count(*) FROM search`), count(t, ro, `SELECT count(*) FROM search_pending`)
	}
	if rows, marks := marked(started("s"), prompt("alpha"), prompt("beta")); rows != 0 || marks != 1 {
		t.Errorf("after Close with 3 events marked: %d index rows and %d marks, want 0 and 1", rows, marks)
	}
	if rows, marks := marked(prompt("gamma"), prompt("delta"), prompt("epsilon")); rows != 5 || marks != 0 {
		t.Errorf("after Close with 5 events marked: %d index rows and %d marks, want 5 and 0", rows, marks)
	}
}

// TestMarksLeftByACrash: marks a killed process left (made here by hand,
// with an index row it never wrote) are read beside the index by a
// read-only store, an event both indexed and marked found once, and
// indexed by the next writable store.
func TestMarksLeftByACrash(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, s, "s", 0, started("s"), prompt("alpha common"), prompt("beta common"), prompt("gamma common"))
	mustAppend(t, s, "other", 0, session.MustNew(session.TypeSessionStarted, session.SessionStarted{ID: "other", Namespace: "elsewhere"}), prompt("beta common"))
	if err := s.catchUp(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Seq 2 indexed before the mark, 3 indexed inside it, 4 not indexed.
	db := rawDB(t, path)
	if _, err := db.Exec(`DELETE FROM search WHERE rowid = (SELECT n FROM sessions WHERE id = 's') << 32 | 4;
		INSERT INTO search_pending (n, after) SELECT n, 2 FROM sessions WHERE id = 's'`); err != nil {
		t.Fatal(err)
	}
	db.Close()

	ro, err := Open(path, &Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	for q, want := range map[string]string{"common": "[4 3 2]", "gamma": "[4]", "beta": "[3]", "alpha": "[2]"} {
		if got := found(t, ro, "s", q); fmt.Sprint(got) != want {
			t.Errorf("read-only search %q found seqs %v, want %s", q, got, want)
		}
	}
	hits, err := ro.Search(t.Context(), mustQuery(t, "beta"), checkpoint.SearchOptions{Namespace: "ns"})
	if err != nil || len(hits) != 1 || hits[0].Session != "s" {
		t.Errorf("read-only search of namespace ns: %v, %v; want the one hit of s", hits, err)
	}
	hits, err = ro.Search(t.Context(), mustQuery(t, "common"), checkpoint.SearchOptions{Limit: 2})
	if err != nil || len(hits) != 2 || hits[0].Seq != 2 || hits[0].Session != "other" || hits[1].Seq != 4 {
		t.Errorf("read-only search with limit 2: %v, %v; want other's seq 2 and s's seq 4, newest first", hits, err)
	}
	ro.Close()

	w, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if got := found(t, w, "s", "gamma"); fmt.Sprint(got) != "[4]" {
		t.Errorf("search found seqs %v, want [4]", got)
	}
	if rows, marks := count(t, w, `SELECT count(*) FROM search`), count(t, w, `SELECT count(*) FROM search_pending`); rows != 4 || marks != 0 {
		t.Errorf("after the writable search: %d index rows and %d marks, want 4 and 0", rows, marks)
	}
}

// TestSearchBesideAWriter: a writable store's Search that finds marks while
// another connection keeps the write lock does not wait for it (the busy
// timeout here is a minute): it reads the marked events beside the index,
// and indexes them on a later Search once the lock is free.
func TestSearchBesideAWriter(t *testing.T) {
	s, path := openTemp(t, &Options{BusyTimeout: time.Minute})
	mustAppend(t, s, "s", 0, started("s"), prompt("alpha"), prompt("beta"))
	release := holdWriteLock(t, path)
	began := time.Now()
	if got := found(t, s, "s", "beta"); fmt.Sprint(got) != "[3]" {
		t.Errorf("search beside the writer found seqs %v, want [3]", got)
	}
	if waited := time.Since(began); waited > 10*time.Second {
		t.Errorf("the search waited %v for the write lock", waited)
	}
	if marks := count(t, s, `SELECT count(*) FROM search_pending`); marks != 1 {
		t.Errorf("%d marks while the lock was held, want 1", marks)
	}
	release()
	if got := found(t, s, "s", "alpha"); fmt.Sprint(got) != "[2]" {
		t.Errorf("search after the writer found seqs %v, want [2]", got)
	}
	if rows, marks := count(t, s, `SELECT count(*) FROM search`), count(t, s, `SELECT count(*) FROM search_pending`); rows != 2 || marks != 0 {
		t.Errorf("after the lock was released: %d index rows and %d marks, want 2 and 0", rows, marks)
	}
}

// TestTruncateLowersTheMark: a log cut below its mark gets the mark
// lowered, so the events appended in place of the cut ones are indexed,
// and the cut ones are not found.
func TestTruncateLowersTheMark(t *testing.T) {
	s, _ := openTemp(t, nil)
	head := mustAppend(t, s, "s", 0, started("s"), prompt("one"), prompt("two"))
	if err := s.catchUp(t.Context()); err != nil {
		t.Fatal(err)
	}
	head = mustAppend(t, s, "s", head, prompt("three"), prompt("four")) // marked after 3
	head, err := s.Truncate(t.Context(), "s", 2, head)
	if err != nil {
		t.Fatal(err)
	}
	if after := count(t, s, `SELECT after FROM search_pending`); after != 2 {
		t.Errorf("after the truncate the mark is after seq %d, want 2", after)
	}
	mustAppend(t, s, "s", head, prompt("five"))
	for q, want := range map[string]string{"one": "[2]", "two": "[]", "three": "[]", "four": "[]", "five": "[3]"} {
		if got := found(t, s, "s", q); fmt.Sprint(got) != want {
			t.Errorf("search %q found seqs %v, want %s", q, got, want)
		}
	}
}

// TestRepairIndexesTheMarks: a doctor's repair leaves no marks: what
// waited is indexed, and the check before it reported nothing.
func TestRepairIndexesTheMarks(t *testing.T) {
	s, _ := openTemp(t, nil)
	mustAppend(t, s, "s", 0, started("s"), prompt("one"), prompt("two"))
	found, err := s.CheckDerivedVisit(t.Context(), true, nil)
	if err != nil || len(found) != 0 {
		t.Fatalf("repair of a healthy store: %v, %v; want no problems", found, err)
	}
	if rows, marks := count(t, s, `SELECT count(*) FROM search`), count(t, s, `SELECT count(*) FROM search_pending`); rows != 2 || marks != 0 {
		t.Errorf("after the repair: %d index rows and %d marks, want 2 and 0", rows, marks)
	}
}

// TestDeleteDropsTheMark: deleting a marked session leaves no mark.
func TestDeleteDropsTheMark(t *testing.T) {
	s, _ := openTemp(t, nil)
	mustAppend(t, s, "s", 0, started("s"), prompt("one"))
	if err := s.Delete(t.Context(), "s"); err != nil {
		t.Fatal(err)
	}
	if marks := count(t, s, `SELECT count(*) FROM search_pending`); marks != 0 {
		t.Errorf("%d marks after the delete, want 0", marks)
	}
}

// TestIndexesInTheBackground: once indexLag events wait, the store indexes
// them without a Search or Close.
func TestIndexesInTheBackground(t *testing.T) {
	defer func(n int64) { indexLag = n }(indexLag)
	indexLag = 4
	s, _ := openTemp(t, nil)
	head := mustAppend(t, s, "s", 0, started("s"))
	for i := range 3 { // the fourth event appended starts the indexing
		head = mustAppend(t, s, "s", head, prompt(fmt.Sprint("word", i)))
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if count(t, s, `SELECT count(*) FROM search_pending`) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("after 4 events appended with indexLag 4 the session is still marked 10 s later")
		}
	}
	if rows := count(t, s, `SELECT count(*) FROM search`); rows != 3 {
		t.Errorf("%d index rows, want 3", rows)
	}
}

// TestMarksTableDroppedByHand: an append to a database whose marks table
// someone dropped makes it again instead of failing.
func TestMarksTableDroppedByHand(t *testing.T) {
	s, path := openTemp(t, nil)
	db := rawDB(t, path)
	if _, err := db.Exec(`DROP TABLE search_pending`); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, s, "s", 0, started("s"), prompt("alpha"))
	if got := found(t, s, "s", "alpha"); fmt.Sprint(got) != "[2]" {
		t.Errorf("search found seqs %v, want [2]", got)
	}
}

// TestTrailingIndexConcurrently: two stores on one file append to their
// own sessions while both search (and so index); at the end every prompt
// is found exactly once.
func TestTrailingIndexConcurrently(t *testing.T) {
	defer func(n int64) { indexLag = n }(indexLag)
	indexLag = 8
	path := filepath.Join(t.TempDir(), "s.db")
	stores := make([]*Store, 2)
	for i := range stores {
		s, err := Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		stores[i] = s
	}
	const writers, prompts = 4, 30
	var wg sync.WaitGroup
	for w := range writers {
		s := stores[w%2]
		wg.Go(func() {
			id := fmt.Sprint("w", w)
			head, err := s.Append(t.Context(), id, 0, []session.Event{started(id)})
			for i := 0; err == nil && i < prompts; i++ {
				if head, err = s.Append(t.Context(), id, head, []session.Event{prompt(fmt.Sprintf("common w%dp%dq", w, i))}); err == nil && i%10 == 9 {
					_, err = checkpoint.Search(t.Context(), s, "common", checkpoint.SearchOptions{})
				}
			}
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for w := range writers {
		for i := range prompts {
			if got := found(t, stores[(w+1)%2], fmt.Sprint("w", w), fmt.Sprintf("w%dp%dq", w, i)); fmt.Sprint(got) != fmt.Sprint([]int64{int64(i) + 2}) {
				t.Fatalf("search for prompt %d of w%d found seqs %v, want [%d]", i, w, got, i+2)
			}
		}
	}
	if rows := count(t, stores[0], `SELECT count(*) FROM search`); rows != writers*prompts {
		t.Errorf("%d index rows, want %d", rows, writers*prompts)
	}
}
