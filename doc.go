// Package liteagent is the lite-agent SDK: a coding agent whose every turn is
// appended to a durable, event-sourced session log.
//
// Create an agent, then Send prompts; successive calls share one
// conversation, persisted by default under the user's state directory:
//
//	p, _ := anthropic.New(nil) // ANTHROPIC_API_KEY
//	agent, err := liteagent.New(&liteagent.Options{Provider: p, Model: "claude-sonnet-4-6"})
//	if err != nil { ... }
//	defer agent.Close()
//	res, err := agent.Send(ctx, "Refactor auth.go to use contexts.")
//	res, err = agent.Send(ctx, "Now add tests for it.") // same session, full context
//
// Sessions can be listed, resumed in a later process, inspected, forked and
// rewound to any earlier prompt with the files the tools changed:
//
//	sessions, _ := agent.ListSessions(ctx)
//	_ = agent.Resume(ctx, sessions[0].ID)
//	cps, _ := agent.ListCheckpoints(ctx, agent.SessionID())
//	_, _ = agent.Restore(ctx, agent.SessionID(), cps[0].Seq, nil)
//
// Storage is pluggable (Options.Checkpointer): checkpoint/memory,
// checkpoint/file (the default), checkpoint/sqlite and checkpoint/postgres.
// A tool that was running when the process died leaves a recovery hazard:
// it is never re-run; Send refuses to go on until the user acknowledges it.
//
// The model keeps a task list with the todo tool, private to the session or
// shared by name between sessions and processes (Options.TaskList); Tasks
// and UpdateTasks read and change it. Long shell commands run as background
// jobs (bash's background option, Jobs, WaitJobs); when one ends while the
// agent is idle, a background completion turn tells the model how it ended
// and the user's goal. Close stops turns and background jobs, then releases
// what the agent owns.
package liteagent
