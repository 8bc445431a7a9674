// Package tui is lite-agent's full-screen interactive client, built with
// Bubble Tea on the public SDK (package liteagent) alone.
//
// The screen is a transcript (prompts, answers rendered as Markdown, one
// block per tool call with its arguments, a diff for edits and writes and
// its result folded to a few lines), the session's task list (the todo
// tool's; ctrl+t hides it), an activity line (spinner and elapsed time
// while the model works), a multi-line input with history and a status line
// (session, revision, model, tokens, running background jobs, workspace). Tool calls that need
// approval are asked inline; /sessions and /checkpoints open pickers.
//
// The UI never blocks the agent: Session.Send runs in a command goroutine,
// updates arrive through SendOptions.OnUpdate and SessionOptions.OnBackground (tui/updates.go), and approvals travel through
// [Approvals], whose Approve method runs on the agent's goroutine and waits
// for the user's answer (or for the turn to be cancelled).
//
// The transcript is drawn by rendering only the entries in view: rendered
// blocks are cached per entry and width (the cache is bounded), the view's
// position is an anchor (entry, line) rather than an offset into one long
// string, so frame time and memory do not grow with the transcript's
// length. Markdown of the answer being streamed is rendered off the UI
// goroutine, at most every 50 ms.
package tui
