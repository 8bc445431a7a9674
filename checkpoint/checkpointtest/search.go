package checkpointtest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
)

// Search runs through checkpoint.Search, so a backend that is a
// checkpoint.Searcher is held to the same answers as the scan every other
// backend gets: the same hits, in the same order, with the same snippets.

// at sets e's time to base plus d.
func at(e session.Event, base time.Time, d time.Duration) session.Event {
	e.Time = base.Add(d)
	return e
}

// titled is a session_titled event.
func titled(title string) session.Event {
	return session.MustNew(session.TypeSessionTitled, session.SessionTitled{Title: title, By: session.TitleByUser})
}

// toolOutput is a tool_finished event with output.
func toolOutput(callID, output string) session.Event {
	return session.MustNew(session.TypeToolFinished, session.ToolFinished{CallID: callID, Tool: "bash", Output: output})
}

// searchFixture writes three sessions in two namespaces with known times and
// returns the store and the time base.
func searchFixture(t *testing.T, c checkpoint.Checkpointer) time.Time {
	t.Helper()
	base := session.Now().Add(-time.Hour)
	mustAppend(t, c, "s-alpha", 0,
		at(started("s-alpha", "ws1"), base, 0),
		at(prompt("Refactor the Tokenizer in parser.go"), base, 1*time.Second),
		at(reply("I will split the tokenizer into two functions."), base, 2*time.Second),
		at(toolStarted("c1"), base, 3*time.Second),
		at(toolOutput("c1", "ok: 12 tests passed, zebra_crossing fixed"), base, 4*time.Second),
		at(completed(), base, 5*time.Second),
	)
	mustAppend(t, c, "s-beta", 0,
		at(started("s-beta", "ws1"), base, 10*time.Second),
		at(prompt("Write docs for the tokenizer"), base, 11*time.Second),
		at(reply("Docs written; the Tokeniser spelling is British."), base, 12*time.Second),
		at(titled("Tokenizer documentation"), base, 13*time.Second),
	)
	mustAppend(t, c, "s-gamma", 0,
		at(started("s-gamma", "ws2"), base, 20*time.Second),
		at(prompt("Éclair recipe: why does the tokenizer crash on ÜMLAUTS?"), base, 21*time.Second),
	)
	return base
}

func testSearch(t *testing.T, b Backend) {
	c := fresh(t, b)
	base := searchFixture(t, c)
	hit := func(id string, seq int64, typ session.Type, d time.Duration, snippet string) checkpoint.Hit {
		return checkpoint.Hit{Session: id, Seq: seq, Type: typ, Time: base.Add(d), Snippet: snippet}
	}
	cases := []struct {
		name  string
		query string
		opts  checkpoint.SearchOptions
		want  []checkpoint.Hit
	}{
		{"a prompt", "parser", checkpoint.SearchOptions{Namespace: "ws1"},
			[]checkpoint.Hit{hit("s-alpha", 2, session.TypeUserPrompt, time.Second, "Refactor the Tokenizer in parser.go")}},
		{"an answer", "functions", checkpoint.SearchOptions{Namespace: "ws1"},
			[]checkpoint.Hit{hit("s-alpha", 3, session.TypeAssistantMessage, 2*time.Second, "I will split the tokenizer into two functions.")}},
		{"tool output, word split at the underscore", "zebra crossing", checkpoint.SearchOptions{Namespace: "ws1"},
			[]checkpoint.Hit{hit("s-alpha", 5, session.TypeToolFinished, 4*time.Second, "ok: 12 tests passed, zebra_crossing fixed")}},
		{"a title", "documentation", checkpoint.SearchOptions{Namespace: "ws1"},
			[]checkpoint.Hit{hit("s-beta", 4, session.TypeSessionTitled, 13*time.Second, "Tokenizer documentation")}},
		{"newest first, one namespace, case folded", "TOKENIZER", checkpoint.SearchOptions{Namespace: "ws1"},
			[]checkpoint.Hit{
				hit("s-beta", 4, session.TypeSessionTitled, 13*time.Second, "Tokenizer documentation"),
				hit("s-beta", 2, session.TypeUserPrompt, 11*time.Second, "Write docs for the tokenizer"),
				hit("s-alpha", 3, session.TypeAssistantMessage, 2*time.Second, "I will split the tokenizer into two functions."),
				hit("s-alpha", 2, session.TypeUserPrompt, time.Second, "Refactor the Tokenizer in parser.go"),
			}},
		{"every namespace, with a limit", "tokenizer", checkpoint.SearchOptions{Limit: 2},
			[]checkpoint.Hit{
				hit("s-gamma", 2, session.TypeUserPrompt, 21*time.Second, "Éclair recipe: why does the tokenizer crash on ÜMLAUTS?"),
				hit("s-beta", 4, session.TypeSessionTitled, 13*time.Second, "Tokenizer documentation"),
			}},
		{"every word must match", "docs tokenizer", checkpoint.SearchOptions{},
			[]checkpoint.Hit{hit("s-beta", 2, session.TypeUserPrompt, 11*time.Second, "Write docs for the tokenizer")}},
		{"the last word is a prefix", "split tokeni", checkpoint.SearchOptions{},
			[]checkpoint.Hit{hit("s-alpha", 3, session.TypeAssistantMessage, 2*time.Second, "I will split the tokenizer into two functions.")}},
		{"only the last word is a prefix", "tokeni split", checkpoint.SearchOptions{}, nil},
		{"non-ASCII words, case folded", "éCLAIR ümlauts", checkpoint.SearchOptions{},
			[]checkpoint.Hit{hit("s-gamma", 2, session.TypeUserPrompt, 21*time.Second, "Éclair recipe: why does the tokenizer crash on ÜMLAUTS?")}},
		{"accents are not folded away", "eclair", checkpoint.SearchOptions{}, nil},
		{"no such word", "nonexistentword", checkpoint.SearchOptions{}, nil},
		{"tool input and call ids are not text", "ls c1", checkpoint.SearchOptions{}, nil},
		{"another namespace", "parser", checkpoint.SearchOptions{Namespace: "ws2"}, nil},
	}
	for _, tc := range cases {
		got, err := checkpoint.Search(t.Context(), c, tc.query, tc.opts)
		if err != nil {
			t.Fatalf("%s: search %q: %v", tc.name, tc.query, err)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s: search %q %+v: hits differ (-want +got):\n%s", tc.name, tc.query, tc.opts, diff)
		}
	}
	for _, q := range []string{"", "  ...  ", strings.Repeat("x", checkpoint.MaxWordBytes+1)} {
		if _, err := checkpoint.Search(t.Context(), c, q, checkpoint.SearchOptions{}); err == nil {
			t.Errorf("search %q: no error, want ErrInvalid", q)
		} else {
			wantErr(t, "search "+q, err, checkpoint.ErrInvalid)
		}
	}
}

// testSearchFollowsChanges checks that appends, truncates and deletes show
// in search at once, and that a store opened again finds the same.
func testSearchFollowsChanges(t *testing.T, b Backend) {
	loc := b.NewLocation(t)
	c := open(t, b, loc)
	searchFixture(t, c)
	search := func(c checkpoint.Checkpointer, q string) []string {
		t.Helper()
		hits, err := checkpoint.Search(t.Context(), c, q, checkpoint.SearchOptions{})
		if err != nil {
			t.Fatalf("search %q: %v", q, err)
		}
		var out []string
		for _, h := range hits {
			out = append(out, fmt.Sprintf("%s/%d", h.Session, h.Seq))
		}
		return out
	}
	check := func(c checkpoint.Checkpointer, q string, want ...string) {
		t.Helper()
		if diff := cmp.Diff(want, search(c, q)); diff != "" {
			t.Errorf("search %q (-want +got):\n%s", q, diff)
		}
	}
	mustAppend(t, c, "s-alpha", 6, prompt("now the quokka"), reply("quokka done"))
	check(c, "quokka", "s-alpha/8", "s-alpha/7")
	if _, err := c.Truncate(t.Context(), "s-alpha", 7, 8); err != nil {
		t.Fatal(err)
	}
	check(c, "quokka", "s-alpha/7")
	if _, err := c.Truncate(t.Context(), "s-alpha", 6, 7); err != nil {
		t.Fatal(err)
	}
	check(c, "quokka")
	// A new log under a deleted one's id finds only its own events.
	if err := c.Delete(t.Context(), "s-beta"); err != nil {
		t.Fatal(err)
	}
	check(c, "docs")
	mustAppend(t, c, "s-beta", 0, started("s-beta", "ws1"), prompt("a fresh start"))
	check(c, "docs")
	check(c, "fresh", "s-beta/2")
	if b.Persistent {
		c.Close()
		c2 := open(t, b, loc)
		check(c2, "fresh", "s-beta/2")
		check(c2, "tokenizer", "s-gamma/2", "s-alpha/3", "s-alpha/2")
	}
}

// testSearchMatchesScan checks a backend's index against the scan over
// its own logs, on many sessions with shared words.
func testSearchMatchesScan(t *testing.T, b Backend) {
	c := fresh(t, b)
	words := []string{"alpha", "beta", "gamma", "delta", "epsilon"}
	base := session.Now().Add(-time.Hour)
	for i := range 30 {
		id := fmt.Sprintf("m-%02d", i)
		ns := fmt.Sprintf("ns%d", i%3)
		mustAppend(t, c, id, 0,
			at(started(id, ns), base, time.Duration(i)*time.Second),
			at(prompt(fmt.Sprintf("%s %s task %d", words[i%5], words[(i+1)%5], i)), base, time.Duration(i)*time.Second+time.Millisecond),
			at(reply(fmt.Sprintf("answer with %s", words[(i+2)%5])), base, time.Duration(i)*time.Second+2*time.Millisecond),
		)
	}
	compareWithScan(t, c)
	// A rebuilt index answers exactly as the one kept up on every append.
	if r, ok := c.(checkpoint.Reindexer); ok {
		if err := r.Reindex(t.Context()); err != nil {
			t.Fatalf("reindex: %v", err)
		}
		if err := r.Reindex(t.Context()); err != nil {
			t.Fatalf("reindex again: %v", err)
		}
		compareWithScan(t, c)
	}
}

// compareWithScan checks c's Search against a scan of its logs.
func compareWithScan(t *testing.T, c checkpoint.Checkpointer) {
	t.Helper()
	for _, q := range []string{"alpha", "beta gamma", "task", "answer delta", "eps", "task 1"} {
		for _, opts := range []checkpoint.SearchOptions{{}, {Namespace: "ns1"}, {Limit: 5}, {Namespace: "ns2", Limit: 3}} {
			query, err := checkpoint.ParseQuery(q)
			if err != nil {
				t.Fatal(err)
			}
			want, err := checkpoint.Scan(t.Context(), c, query, opts)
			if err != nil {
				t.Fatal(err)
			}
			got, err := checkpoint.Search(t.Context(), c, q, opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(want) == 0 {
				t.Fatalf("scan for %q %+v found nothing: the fixture is wrong", q, opts)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("search %q %+v differs from a scan of the logs (-scan +search):\n%s", q, opts, diff)
			}
		}
	}
}
