package sqlite

import (
	"database/sql/driver"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
)

// TestSearchBySession makes every query take the session-by-session path
// that queries of common words take, reading sessions five at a time, and
// holds it to the scan: sessions created in one order and updated in
// another, pairs of them updated at the same instant, logs of different
// lengths, in two namespaces.
func TestSearchBySession(t *testing.T) {
	oldMany, oldPage := manyMatches, sessionsPage
	manyMatches, sessionsPage = 1, 5
	t.Cleanup(func() { manyMatches, sessionsPage = oldMany, oldPage })
	s, err := Open(filepath.Join(t.TempDir(), "s.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	base := session.Now().Add(-time.Hour)
	for i := range 12 {
		id := fmt.Sprintf("s%02d", i)
		// Sessions created in one order, updated in another.
		// Every event of a session at one instant, pairs of sessions at the
		// same one: ties that only seq and id order.
		at := func(time.Duration) time.Time { return base.Add(time.Duration((i*7)%12/2) * time.Minute) }
		evs := []session.Event{session.MustNew(session.TypeSessionStarted, session.SessionStarted{ID: id, Namespace: fmt.Sprint("ns", i%2)})}
		for j := range 4 + i%3 {
			evs = append(evs, session.MustNew(session.TypeUserPrompt, session.UserPrompt{Text: fmt.Sprintf("common word %d of %d", j, i)}))
		}
		for j := range evs {
			evs[j].Time = at(time.Duration(j) * time.Second)
		}
		if _, err := s.Append(t.Context(), id, 0, evs); err != nil {
			t.Fatal(err)
		}
	}
	for _, opts := range []checkpoint.SearchOptions{{}, {Limit: 1}, {Limit: 7}, {Limit: 12}, {Limit: 100}, {Namespace: "ns1", Limit: 1}, {Namespace: "ns1", Limit: 3}, {Namespace: "ns0", Limit: 11}} {
		q, _ := checkpoint.ParseQuery("common wor")
		want, err := checkpoint.Scan(t.Context(), s, q, opts)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.Search(t.Context(), q, opts)
		if err != nil {
			t.Fatal(err)
		}
		if len(want) == 0 {
			t.Fatal("the scan found nothing")
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%+v: (-scan +search)\n%s", opts, diff)
		}
	}
}

// TestMatchSpellsOutPrefixes: the last term of a query becomes the OR of
// the indexed words it starts when they are few, stays a prefix when they
// are many, and a term no word starts matches nothing; on a read-only
// store too, on a database whose writers predate search_words (read
// through fts5vocab), and after a writable open made search_words for it;
// every query finds what the scan finds.
func TestMatchSpellsOutPrefixes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	evs := []session.Event{session.MustNew(session.TypeSessionStarted, session.SessionStarted{ID: "s", Namespace: "ns"})}
	for _, text := range []string{"refactor the parser", "refactor parsers", "parsing refactor", "refactor other"} {
		evs = append(evs, session.MustNew(session.TypeUserPrompt, session.UserPrompt{Text: text}))
	}
	for i := range maxExpansion + 1 {
		evs = append(evs, session.MustNew(session.TypeUserPrompt, session.UserPrompt{Text: fmt.Sprintf("refactor many%02d", i)}))
	}
	if _, err := s.Append(t.Context(), "s", 0, evs); err != nil {
		t.Fatal(err)
	}
	if err := s.catchUp(t.Context()); err != nil { // match reads the index
		t.Fatal(err)
	}
	s.Close()
	checkMatches(t, path, true)
	dropWords(t, path)
	checkMatches(t, path, false)
	s, err = Open(path, nil) // makes search_words again
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	checkMatches(t, path, true)
}

// dropWords drops the search_words table of the database at path, as if
// it had been written by builds before it.
func dropWords(t *testing.T, path string) {
	t.Helper()
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := s.conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer s.pool.put(c, false)
	if err := c.script(t.Context(), "DROP TABLE search_words"); err != nil {
		t.Fatal(err)
	}
}

// checkMatches opens path read-only and checks match and Search there;
// words says whether the database has search_words.
func checkMatches(t *testing.T, path string, words bool) {
	t.Helper()
	ro, err := Open(path, &Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	c, err := ro.conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	dest := make([]driver.Value, 1)
	_, err = c.row(t.Context(), dest, stmtWordsExist)
	ro.pool.put(c, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := dest[0] == int64(1); got != words {
		t.Fatalf("search_words exists: %v, want %v", got, words)
	}
	for _, tc := range []struct {
		query, expr string
		ok          bool
	}{
		{"refactor pars", `"refactor" AND ("parser" OR "parsers" OR "parsing")`, true},
		{"refactor many", `"refactor" "many"*`, true},
		{"refactor zzz", "", false},
	} {
		q, err := checkpoint.ParseQuery(tc.query)
		if err != nil {
			t.Fatal(err)
		}
		c, err := ro.conn(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		expr, ok := ro.match(t.Context(), c, q)
		ro.pool.put(c, false)
		if expr != tc.expr || ok != tc.ok {
			t.Errorf("match(%q) = %q, %v; want %q, %v", tc.query, expr, ok, tc.expr, tc.ok)
		}
		got, err := ro.Search(t.Context(), q, checkpoint.SearchOptions{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		want, err := checkpoint.Scan(t.Context(), ro, q, checkpoint.SearchOptions{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("search %q differs from the scan (-scan +search):\n%s", tc.query, diff)
		}
	}
}
