package liteagent

import (
	"context"

	"github.com/lite-agent/lite-agent/session"
)

// Durable appends of a turn. Every append is a transaction with an fsync
// (two with the file store's index), so a turn writes an event in its own
// append only where a guarantee needs it there; the others are held and
// ride along with the next append. For a turn with one tool call that is
// four appends instead of seven:
//
//	append                                   why it is its own append
//	session_started, context, user_prompt    the prompt is durable before anything the model sends is seen
//	assistant_message, tool_started, snaps   the intent and the snapshots are durable before the tool runs
//	tool_finished                            the receipt is durable before the next model call (or tool)
//	assistant_message, session_titled,       the turn's end; nothing waits on it
//	turn_completed
//
// The turn's first model call is sent while the prompt's append is made
// (early.go): its deltas are published, and its answer used, only once
// the append is durable; if the append fails, the call is cancelled
// unseen.
//
// A permission rule's decision about a call (permission_decided) rides
// with the append after it: the intent, the receipt of a denied call, or
// the answer written before a person is asked. Before this, a turn whose
// call a rule allowed made five appends (`--allow edit` on one write).
//
// An assistant message with tool calls is held until the first call's
// intent is written, or written alone before a person is asked to approve
// a call (the answer may take minutes). A crash before that append loses
// only the model's answer, as a crash while it streamed would: the log
// still ends in the prompt, and the next turn closes it as interrupted.
// turn_interrupted carries whatever is held, so an interrupted turn keeps
// the answer it got.

// hold queues events for the session's next durable append. Only the
// goroutine holding the turn calls it.
func (s *Session) hold(events ...session.Event) {
	s.held = append(s.held, events...)
}

// flush writes the held events, if any, in one durable append.
func (s *Session) flush(ctx context.Context) error {
	if len(s.held) == 0 {
		return nil
	}
	return s.append(ctx)
}
