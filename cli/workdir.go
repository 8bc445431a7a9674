package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
)

// retargetIfAsked moves session id to this run's workdir when --retarget
// was given, saying so; the move is recorded in the session's log. Without
// the flag it does nothing: Resume and Restore then refuse a session of
// another workdir.
func retargetIfAsked(ctx context.Context, c *config, e *env, id string, stderr io.Writer) error {
	if !c.retarget {
		return nil
	}
	from, err := e.agent.Retarget(ctx, id)
	if err != nil {
		return err
	}
	if from != e.agent.Workdir() {
		fmt.Fprintf(stderr, "re-targeted session %s from %s to %s (recorded in its log)\n", id, orNone(from), e.agent.Workdir())
	}
	return nil
}

func orNone(dir string) string {
	if dir == "" {
		return "no recorded workdir"
	}
	return dir
}

// workdirHint adds the flags that resolve a workdir mismatch to its error.
func workdirHint(err error) error {
	var we *liteagent.WorkdirError
	if !errors.As(err, &we) {
		return err
	}
	return usagef("%v (run from %s or with --workdir %s, or add --retarget to move the session to %s)", err, we.Recorded, we.Recorded, we.Workdir)
}

// refuseRunning stops a --resume of a session a live process is running a
// turn in: its open calls are running, not interrupted, so they are never
// offered for acknowledgement. It asks the store for the lease alone:
// SessionInfo would read the session again, and its whole log for the
// blob sizes (at 500 turns, a third of the resuming process's CPU).
func refuseRunning(ctx context.Context, e *env, id string) error {
	if h := e.agent.Running(ctx, id); h != nil {
		return &checkpoint.LeaseHeldError{Session: id, Holder: *h}
	}
	return nil
}

// liveCalls is the running calls of a live session, as inspection shows them.
func liveCalls(hz []session.Hazard) []hazardJSON {
	if len(hz) == 0 {
		return nil
	}
	return toHazards(hz)
}
