package cli

import (
	"context"
	"strings"
)

// renameSession is --title ID TEXT.
func renameSession(ctx context.Context, c *config, std IO) error {
	return withSession(ctx, c, c.title, func(e *env, id string) error {
		title := strings.TrimSpace(c.prompt)
		if err := e.agent.RenameSession(ctx, id, title); err != nil {
			return err
		}
		info, err := e.agent.SessionInfo(ctx, id)
		if err != nil {
			return err
		}
		return writeJSON(std.Stdout, map[string]any{"id": id, "title": info.Summary.Title})
	})
}
