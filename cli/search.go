package cli

import (
	"context"
	"encoding/json"
	"io"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/checkpoint"
)

// searchSessions is --search QUERY: the hits as a JSON array, one object
// per line, newest first. It only reads.
func searchSessions(ctx context.Context, c *config, std IO) error {
	return inspect(ctx, c, func(e *env) error {
		hits, err := e.agent.SearchSessions(ctx, c.search, &liteagent.SearchOptions{AllNamespaces: c.allWorkspaces, Limit: c.limit})
		if err != nil {
			return err
		}
		return writeHits(std.Stdout, hits)
	})
}

// writeHits prints hits as a JSON array with one hit per line.
func writeHits(w io.Writer, hits []checkpoint.Hit) error {
	buf := []byte("[")
	for i, h := range hits {
		if i > 0 {
			buf = append(buf, ',')
		}
		one, err := json.Marshal(h)
		if err != nil {
			return err
		}
		buf = append(append(buf, "\n  "...), one...)
	}
	if len(hits) > 0 {
		buf = append(buf, '\n')
	}
	buf = append(buf, "]\n"...)
	_, err := w.Write(buf)
	return err
}
