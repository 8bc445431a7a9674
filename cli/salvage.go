package cli

import (
	"context"
	"fmt"
	"strings"

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
		var lost []string
		for _, g := range sv.Lost {
			r := fmt.Sprintf("seq %d", g.From)
			if g.To > g.From {
				r = fmt.Sprintf("seqs %d to %d", g.From, g.To)
			}
			switch {
			case g.To <= sv.Events:
				r += " (written as event_lost in their place)"
			case g.From <= sv.Events:
				r += fmt.Sprintf(" (up to %d written as event_lost; the rest left out)", sv.Events)
			default:
				r += " (left out: nothing readable follows)"
			}
			lost = append(lost, r+": "+oneLine(g.Reason))
		}
		if sv.Reconstructed {
			fmt.Fprintf(std.Stderr, "lite-agent: the first event of session %s (session_started) is damaged: seq 1 of the stream is rebuilt from the database's summary of the session (id, workdir, model); its provider is lost. The header marks it as reconstructed.\n", id)
		}
		fmt.Fprintf(std.Stderr, "lite-agent: salvaged events 1 to %d of session %s: %d of its %d events verify; damaged: %s. The stream is marked as salvaged; import it into another database with: lite-agent --session-db NEW.db --import FILE\n",
			sv.Events, id, sv.Kept, sv.Head, strings.Join(lost, "; "))
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
