package checkpoint

import (
	"context"
	"errors"
	"fmt"
)

// ProblemMailOrphaned is a session mailbox (see Mailbox) whose session is
// gone: its delete was cut short, or a post raced it.
const ProblemMailOrphaned = "mailbox_orphaned"

// mailProblems reports the mailboxes of sessions c no longer holds; with
// repair it removes them. heads lists the sessions the doctor saw; one
// not among them is looked up, since it may have been created since.
func mailProblems(ctx context.Context, c Checkpointer, heads map[string]int64, repair bool) ([]Problem, error) {
	mb, ok := c.(Mailbox)
	if !ok {
		return nil, nil
	}
	ids, err := mb.Mailboxes(ctx)
	if err != nil {
		return nil, fmt.Errorf("doctor: list mailboxes: %w", err)
	}
	var out []Problem
	for _, id := range ids {
		if _, ok := heads[id]; ok {
			continue
		}
		if _, err := c.Head(ctx, id); !errors.Is(err, ErrNotFound) {
			continue // there after all, or not known to be gone
		}
		mail, err := mb.Mail(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("doctor: read the mailbox of %s: %w", id, err)
		}
		p := Problem{Session: id, Kind: ProblemMailOrphaned,
			Detail: fmt.Sprintf("%d mailbox entries (waiting approvals or questions) of a session this store no longer holds", len(mail)),
			Fix:    "run --doctor --repair to remove them; nothing reads them"}
		if repair {
			if err := mb.Unpost(ctx, id, ""); err != nil {
				return nil, fmt.Errorf("doctor: remove the mailbox of %s: %w", id, err)
			}
			p.Repaired = true
		}
		out = append(out, p)
	}
	return out, nil
}
