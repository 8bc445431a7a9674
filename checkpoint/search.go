package checkpoint

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/lite-agent/lite-agent/session"
)

// Search across sessions finds events by the words of their text
// (session.SearchText): prompts, answers, tool output and titles. Every
// store finds the same events for the same query, because every store splits
// text into words with Words and matches with Query.Match: a store's index
// holds the words of each event, and is derived data, rebuilt from the logs
// when missing or stale, never the only copy of anything.

// Limits of the words search sees.
const (
	// MaxWordBytes is the longest word indexed; longer runs of letters
	// (base64, hashes) are skipped.
	MaxWordBytes = 64
	// MaxEventWords caps the distinct words indexed per event: the first
	// MaxEventWords distinct words of its text.
	MaxEventWords = 4096
	// DefaultSearchLimit is the number of hits Search returns when
	// SearchOptions.Limit is 0.
	DefaultSearchLimit = 50
	// DefaultScanSessions is how many sessions, newest first, the scan
	// behind Search reads at most when SearchOptions.ScanSessions is 0.
	DefaultScanSessions = 2000
	// SearchVersion numbers the way text becomes words. A store's index
	// built by another version is stale and is rebuilt.
	SearchVersion = 1
)

// Hit is one event that matched a search.
type Hit struct {
	Session string       `json:"session"`
	Seq     int64        `json:"seq"`
	Type    session.Type `json:"type"`
	// Snippet is the part of the event's text around the first match, on
	// one line.
	Snippet string    `json:"snippet"`
	Time    time.Time `json:"time"`
}

// SearchOptions narrows a search.
type SearchOptions struct {
	// Namespace limits the search to one namespace; "" searches every one.
	Namespace string
	// Limit caps the hits returned (newest first); 0 means
	// DefaultSearchLimit.
	Limit int
	// ScanSessions bounds the scan stores without an index fall back to: at
	// most this many sessions, most recently updated first, are read; 0
	// means DefaultScanSessions. Stores with an index ignore it.
	ScanSessions int
}

func (o SearchOptions) limit() int {
	if o.Limit > 0 {
		return o.Limit
	}
	return DefaultSearchLimit
}

// Searcher is the optional ability of a store to search its logs through an
// index of its own. Stores without it are searched by Scan, which reads the
// newest logs one by one; Search picks whichever applies.
type Searcher interface {
	// Search returns the events of conversations (sessions of kind "")
	// whose text matches q, newest first (by event time, then seq
	// descending, then session id), at most opts.Limit of them. It never
	// writes: an index found stale or missing is made up for by reading the
	// logs it does not cover. Safe to call concurrently with writers.
	Search(ctx context.Context, q Query, opts SearchOptions) ([]Hit, error)
}

// Search searches c's sessions for query: through c's own index if c is a
// Searcher, else by Scan. An empty query (no words) is ErrInvalid.
func Search(ctx context.Context, c Checkpointer, query string, opts SearchOptions) ([]Hit, error) {
	q, err := ParseQuery(query)
	if err != nil {
		return nil, err
	}
	if s, ok := c.(Searcher); ok {
		return s.Search(ctx, q, opts)
	}
	return Scan(ctx, c, q, opts)
}

// Query is a parsed search: every term must be a word of the event's text,
// compared without case; the last term may also be the start of a word (so
// that a query typed letter by letter finds as it goes).
type Query struct {
	terms []string
}

// ParseQuery splits s into terms the way Words splits text. A query with no
// word, or a word longer than MaxWordBytes, is ErrInvalid.
func ParseQuery(s string) (Query, error) {
	var q Query
	var long bool
	eachWord(s, func(w string, _ int) bool {
		if len(w) > MaxWordBytes {
			long = true
			return false
		}
		if !slices.Contains(q.terms, w) {
			q.terms = append(q.terms, w)
		}
		return true
	})
	switch {
	case long:
		return Query{}, fmt.Errorf("search: %w: a word of %q is longer than %d bytes; search for a shorter part of it", ErrInvalid, s, MaxWordBytes)
	case len(q.terms) == 0:
		return Query{}, fmt.Errorf("search: %w: the query %q has no words to look for; give one or more words", ErrInvalid, s)
	}
	// The prefix term goes last even if it was repeated earlier.
	if last := lastWord(s); last != "" && q.terms[len(q.terms)-1] != last {
		q.terms = append(slices.DeleteFunc(q.terms, func(t string) bool { return t == last }), last)
	}
	return q, nil
}

// lastWord is the last word of s, lower-cased.
func lastWord(s string) string {
	var last string
	eachWord(s, func(w string, _ int) bool { last = w; return true })
	return last
}

// Terms returns the query's words, lower-cased; the last is also matched as
// a prefix. The slice is the caller's.
func (q Query) Terms() []string { return slices.Clone(q.terms) }

// String gives the query back as its words.
func (q Query) String() string { return strings.Join(q.terms, " ") }

// Match reports whether words (an event's, from Words) satisfy the query.
func (q Query) Match(words []string) bool {
	if len(q.terms) == 0 {
		return false
	}
	for i, t := range q.terms {
		prefix := i == len(q.terms)-1
		if !slices.ContainsFunc(words, func(w string) bool { return w == t || prefix && strings.HasPrefix(w, t) }) {
			return false
		}
	}
	return true
}

// MatchText reports whether text satisfies the query.
func (q Query) MatchText(text string) bool { return q.Match(Words(text)) }

// Words returns the distinct words of text in order of first appearance,
// lower-cased: runs of letters and digits of at most MaxWordBytes bytes, at
// most MaxEventWords of them. This is what a store indexes for an event.
func Words(text string) []string {
	var out []string
	seen := map[string]struct{}{}
	eachWord(text, func(w string, _ int) bool {
		if len(w) > MaxWordBytes {
			return true
		}
		if _, ok := seen[w]; !ok {
			seen[w] = struct{}{}
			out = append(out, w)
		}
		return len(out) < MaxEventWords
	})
	return out
}

// HasWords reports whether Words(text) holds any word, without building
// the list: what the doctor needs to know of every event.
func HasWords(text string) bool {
	found := false
	eachWord(text, func(w string, _ int) bool {
		found = len(w) <= MaxWordBytes
		return !found
	})
	return found
}

// eachWord calls fn with each lower-cased word of s and its byte offset
// until fn returns false.
func eachWord(s string, fn func(w string, at int) bool) {
	start := -1
	flush := func(end int) bool {
		if start < 0 {
			return true
		}
		w := s[start:end]
		at := start
		start = -1
		return fn(lower(w), at)
	}
	for i, r := range s {
		if unicode.IsLetter(r) || unicode.IsNumber(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if !flush(i) {
			return
		}
	}
	flush(len(s))
}

// lower lower-cases w, without copying when it is lower-case ASCII already.
func lower(w string) string {
	for i := 0; i < len(w); i++ {
		if c := w[i]; c >= utf8.RuneSelf || 'A' <= c && c <= 'Z' {
			return strings.ToLower(w)
		}
	}
	return w
}

// Snippet lengths, in bytes of text before and after the first match.
const (
	snippetBefore = 60
	snippetAfter  = 120
)

// Snippet returns the part of text around the first word that matches one
// of the query's terms, on one line, with "…" where it was cut.
func (q Query) Snippet(text string) string {
	at := -1
	eachWord(text, func(w string, i int) bool {
		for j, t := range q.terms {
			if w == t || j == len(q.terms)-1 && strings.HasPrefix(w, t) {
				at = i
				return false
			}
		}
		return true
	})
	if at < 0 {
		at = 0
	}
	from, to := max(at-snippetBefore, 0), min(at+snippetAfter, len(text))
	for from > 0 && !utf8.RuneStart(text[from]) {
		from--
	}
	for to < len(text) && !utf8.RuneStart(text[to]) {
		to++
	}
	out := strings.Join(strings.Fields(text[from:to]), " ")
	if from > 0 {
		out = "…" + out
	}
	if to < len(text) {
		out += "…"
	}
	return out
}

// NewHit makes the hit of event e of session id for q, or reports false if
// e does not match.
func NewHit(q Query, id string, e session.Event) (Hit, bool) {
	text := session.SearchText(e)
	if text == "" || !q.MatchText(text) {
		return Hit{}, false
	}
	return Hit{Session: id, Seq: e.Seq, Type: e.Type, Snippet: q.Snippet(text), Time: e.Time}, true
}

// CompareHits orders hits newest first: by time, then seq descending, then
// session id.
func CompareHits(a, b Hit) int {
	if c := b.Time.Compare(a.Time); c != 0 {
		return c
	}
	if c := cmp.Compare(b.Seq, a.Seq); c != 0 {
		return c
	}
	return strings.Compare(a.Session, b.Session)
}

// Scan searches c by reading logs: the namespace's conversations, most
// recently updated first, at most opts.ScanSessions of them. It stops early
// once it holds opts.Limit hits newer than anything the sessions left could
// hold. It is the fallback for stores that are not Searchers, and what
// Searchers use for logs their index does not cover.
func Scan(ctx context.Context, c Checkpointer, q Query, opts SearchOptions) ([]Hit, error) {
	list, err := c.List(ctx, opts.Namespace, ListOptions{})
	if err != nil {
		return nil, err
	}
	bound := opts.ScanSessions
	if bound <= 0 {
		bound = DefaultScanSessions
	}
	if len(list) > bound {
		list = list[:bound]
	}
	var hits []Hit
	limit := opts.limit()
	for _, s := range list {
		if len(hits) >= limit && hits[len(hits)-1].Time.After(s.Updated) {
			break
		}
		found, err := ScanSession(ctx, c, q, s.ID, 1)
		if errors.Is(err, ErrNotFound) {
			continue // deleted since List
		}
		if err != nil {
			return nil, err
		}
		hits = append(hits, found...)
		slices.SortFunc(hits, CompareHits)
		if len(hits) > limit {
			hits = hits[:limit]
		}
	}
	return hits, nil
}

// ScanSession reads session id from seq from and returns its hits for q.
func ScanSession(ctx context.Context, c Checkpointer, q Query, id string, from int64) ([]Hit, error) {
	var hits []Hit
	for e, err := range c.Read(ctx, id, from) {
		if err != nil {
			return nil, err
		}
		if !session.Searchable(e.Type) {
			continue
		}
		if h, ok := NewHit(q, id, e); ok {
			hits = append(hits, h)
		}
	}
	return hits, nil
}

// Reindexer is the optional ability of a store with a search index to
// rebuild it from the logs (lite-agent --doctor --repair). The index is
// derived data: Reindex never changes a log, is idempotent and is safe
// while other processes use the store.
type Reindexer interface {
	Reindex(ctx context.Context) error
}

// IndexRowsDiffer reports whether indexed, the seqs (ascending) of the
// index rows a store holds for one session of kind kind, differ from the
// rows its events (verified, in seq order) give: one per searchable event
// with words, and only for conversations (kind ""). It decodes only the
// searchable events without a row, to see that they have no words:
// decoding every event was a third of the doctor's time on SQLite
// (BenchmarkSearch10kx100/Doctor). A row of an event whose payload lacks
// the field its text comes from (an answer of tool calls only) is found;
// a row of an event whose text is there but has no words is not: stores
// write events and their rows in one transaction, and checksums keep the
// events as they were indexed.
func IndexRowsDiffer(kind string, events []session.Event, indexed []int64) bool {
	if kind != "" {
		return len(indexed) > 0
	}
	for _, e := range events {
		if len(indexed) > 0 && indexed[0] < e.Seq {
			return true // a row of no verified event
		}
		row := len(indexed) > 0 && indexed[0] == e.Seq
		if row {
			indexed = indexed[1:]
		}
		switch {
		case !session.Searchable(e.Type):
			if row {
				return true
			}
		case row:
			if !mayHaveText(e) {
				return true
			}
		case HasWords(session.SearchText(e)):
			return true
		}
	}
	return len(indexed) > 0
}

// mayHaveText is false when e's payload lacks the field session.SearchText
// reads, so that it surely has no words; it reads the raw JSON only.
func mayHaveText(e session.Event) bool {
	field := `"text"`
	switch e.Type {
	case session.TypeToolFinished:
		field = `"output"`
	case session.TypeSessionTitled:
		field = `"title"`
	}
	return bytes.Contains(e.Data, []byte(field))
}
