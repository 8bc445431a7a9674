package liteagent

import (
	"context"

	"github.com/lite-agent/lite-agent/checkpoint"
)

// SearchOptions narrows SearchSessions. A nil *SearchOptions means
// defaults: the agent's namespace, checkpoint.DefaultSearchLimit hits.
type SearchOptions struct {
	// AllNamespaces searches the sessions of every namespace (workspace).
	AllNamespaces bool
	// Limit caps the hits; 0 means checkpoint.DefaultSearchLimit.
	Limit int
}

// SearchSessions finds the events of stored sessions whose text (prompts,
// answers, tool output, titles) holds every word of query, newest first.
// Words are compared without case; the last may be the start of a word. It
// reads the store's search index where it has one (SQLite, PostgreSQL) and
// scans the newest logs otherwise; it never writes. A query with no words
// is an error matching checkpoint.ErrInvalid.
func (a *Agent) SearchSessions(ctx context.Context, query string, opts *SearchOptions) ([]checkpoint.Hit, error) {
	if err := a.requirePersistent(); err != nil {
		return nil, err
	}
	var o SearchOptions
	if opts != nil {
		o = *opts
	}
	so := checkpoint.SearchOptions{Namespace: a.namespace, Limit: o.Limit}
	if o.AllNamespaces {
		so.Namespace = ""
	}
	return checkpoint.Search(ctx, a.store, query, so)
}
