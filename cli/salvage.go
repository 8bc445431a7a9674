package cli

import (
	"context"
	"fmt"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/jsonl"
)

// salvageSession is --export ID --salvage: the events of session id that
// verify go to stdout, and what was left out is said on stderr.
func salvageSession(ctx context.Context, c *config, e *env, id string, std IO) error {
	sv, err := jsonl.Salvage(ctx, e.store, id, std.Stdout)
	if err != nil {
		return err
	}
	if sv.Damage != nil {
		fmt.Fprintf(std.Stderr, "lite-agent: salvaged events 1 to %d of session %s (its head is %d; the rest is damaged: %s). The stream is marked as salvaged; import it into another database with: lite-agent --session-db NEW.db --import FILE\n",
			sv.Events, id, sv.Head, oneLine(sv.Damage.Reason))
	}
	return nil
}

// withHint adds what to do to errors that need a command of their own:
// damage in the session database points at --salvage.
func withHint(err error, c *config) error {
	ce, ok := checkpoint.IsCorrupt(err)
	if !ok || c.salvage {
		return err
	}
	db := c.sessionDB
	if isPostgresURL(db) {
		db = "URL" // never the password
	}
	return fmt.Errorf("%w. To copy out the events that verify: lite-agent --session-db %s --export %s --salvage > %s.jsonl, then import that file into another database (--session-db NEW.db --import %s.jsonl)",
		err, db, ce.Session, ce.Session, ce.Session)
}
