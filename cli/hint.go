package cli

import (
	"errors"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/provider"
)

// describe returns err on one line, with its hint.
func describe(err error) string {
	msg := oneLine(err.Error())
	if h := hint(err); h != "" {
		msg += "; " + h
	}
	return msg
}

// hint returns what to run about err, in this command's flags, or "". The
// SDK's errors say what happened in its own terms; the command adds how to
// go on from the command line.
func hint(err error) string {
	var he *liteagent.HazardError
	var le *liteagent.LookupError
	switch {
	case errors.As(err, &he):
		return "review them with --recovery-info " + he.Session + ", then go on with --resume " + he.Session + " --acknowledge TOKEN"
	case errors.As(err, &le) && len(le.Candidates) == 0:
		return "list them with --sessions"
	case checkpoint.IsConflict(err):
		return "resume the session again (--resume ID) to go on from what the other writer recorded"
	case errors.Is(err, provider.ErrAuth):
		return "or try the offline demo (lite-agent --demo), which needs no key"
	}
	return ""
}
