package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/checkpoint/jsonl"
)

// withSession opens a writable agent in this run's workdir (never the one
// the session recorded), resolves the handle and runs fn.
func withSession(ctx context.Context, c *config, handle string, fn func(e *env, id string) error) error {
	e, err := newAgent(ctx, c, "", false, false)
	if err != nil {
		return err
	}
	defer e.close()
	id, err := e.agent.FindSession(ctx, handle)
	if err != nil {
		return err
	}
	return fn(e, id)
}

func restoreSession(ctx context.Context, c *config, std IO) error {
	return withSession(ctx, c, c.restore, func(e *env, id string) error {
		if err := retargetIfAsked(ctx, c, e, id, std.Stderr); err != nil {
			return err
		}
		res, err := e.agent.Restore(ctx, id, c.to, &liteagent.RestoreOptions{Force: c.force})
		if res != nil {
			describePlan(std.Stderr, res)
		}
		if err != nil {
			return workdirHint(err)
		}
		if res.UndoSession != "" {
			fmt.Fprintf(std.Stderr, "to undo: lite-agent --session-db %s --restore %s --to %d\n", c.sessionDB, res.UndoSession, res.UndoSeq)
		}
		return writeJSON(std.Stdout, res)
	})
}

// compactSession runs --compact: it loads the session (as --resume does,
// hazards included) and has the model summarise it.
func compactSession(ctx context.Context, c *config, std IO) error {
	resume := *c
	resume.resume = c.compact
	e, err := openSession(ctx, &resume, std)
	if err != nil {
		return err
	}
	defer e.close()
	res, err := e.agent.Compact(ctx, c.prompt)
	if err != nil {
		return err
	}
	fmt.Fprintln(std.Stderr, compactNote(res))
	return writeJSON(std.Stdout, res)
}

func forkSession(ctx context.Context, c *config, std IO) error {
	return withSession(ctx, c, c.fork, func(e *env, id string) error {
		fork, err := e.agent.Fork(ctx, id, c.to)
		if err != nil {
			return err
		}
		return writeJSON(std.Stdout, map[string]any{"id": fork, "parent": id, "seq": c.to})
	})
}

func deleteSession(ctx context.Context, c *config, std IO) error {
	return withSession(ctx, c, c.deleteSession, func(e *env, id string) error {
		if err := e.agent.DeleteSession(ctx, id); err != nil {
			return err
		}
		return writeJSON(std.Stdout, map[string]any{"deleted": id})
	})
}

func importSession(ctx context.Context, c *config, std IO) error {
	var r io.Reader = std.Stdin
	opts := &jsonl.ImportOptions{}
	if c.importFile != "-" {
		if abs, err := filepath.Abs(c.importFile); err == nil {
			opts.From = abs
		}
		f, err := os.Open(c.importFile)
		if err != nil {
			return fmt.Errorf("import: %w", err)
		}
		defer f.Close()
		r = f
	}
	store, err := openStore(ctx, c.sessionDB, false)
	if err != nil {
		return err
	}
	defer store.Close()
	all, err := jsonl.ImportArchive(ctx, store, r, opts)
	if len(all) > 1 || err != nil && len(all) > 0 {
		ids := make([]string, len(all))
		for i, im := range all {
			ids[i] = im.Session
		}
		if werr := writeJSON(std.Stdout, map[string]any{"imported": ids}); werr != nil {
			return werr
		}
		return err
	}
	if err != nil {
		return err
	}
	im := all[0]
	out := map[string]any{"imported": im.Session, "events": im.Events}
	if im.Salvaged {
		out["salvaged"], out["damage"] = true, im.Damage
	}
	return writeJSON(std.Stdout, out)
}
