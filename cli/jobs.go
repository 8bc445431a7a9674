package cli

import (
	"context"
	"fmt"
	"slices"
	"sync"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/session"
)

// checkJobFlags checks --task-list and --no-wait.
func checkJobFlags(c *config) error {
	if c.taskList != "" {
		if err := liteagent.CheckTaskListName(c.taskList); err != nil {
			return usagef("--task-list: %v", err)
		}
	}
	if c.noWait && c.prompt == "" {
		return usagef("--no-wait goes with a one-shot PROMPT: interactive modes keep background jobs while they run")
	}
	return nil
}

// runOneShot sends the prompt and prints the turn. Unless --no-wait, it
// then waits for the background jobs the turn started and for the
// completion turns their ends start (printed like the first turn; with
// --output json or stream-json each ends with a result object marked
// "background": true). With --no-wait, or when the wait is cancelled, the
// agent's Close stops the jobs still running and records that it did.
func runOneShot(ctx context.Context, e *env, c *config, std IO) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-std.Interrupt:
			fmt.Fprintln(std.Stderr, "\ncancelling… (Ctrl-C again to quit)")
			cancel()
		case <-ctx.Done():
		}
	}()
	prompt, err := withStdin(expandPrompt(ctx, e, c.prompt, std.Stderr), std)
	if err != nil {
		return err
	}
	p := &printer{out: std.Stdout, errw: std.Stderr, format: c.output}
	// The prompt's turn prints from this goroutine; completion turns print
	// from the agent's, one at a time, after it.
	var mu sync.Mutex
	show := func(u Update) {
		mu.Lock()
		defer mu.Unlock()
		p.show(u)
	}
	e.onBackground(show)
	res, err := e.send(ctx, prompt, show)
	err = checkAnswer(res, err)
	var bg []*liteagent.Result
	var bgErr error
	if err == nil && !c.noWait {
		if slices.ContainsFunc(e.sess.Jobs(), func(j liteagent.JobInfo) bool { return j.Running }) {
			fmt.Fprintln(std.Stderr, "waiting for background jobs to finish (--no-wait exits at once; Ctrl-C stops them)")
		}
		bg, bgErr = e.sess.WaitJobs(ctx)
	}
	mu.Lock()
	defer mu.Unlock()
	p.finish(res, err)
	for _, r := range bg {
		printBackground(p, r)
	}
	if err != nil {
		return err
	}
	return bgErr
}

// jobEnd describes how a job ended.
func jobEnd(f session.JobFinished) string {
	switch {
	case f.Stopped != "":
		return "stopped (" + f.Stopped + ")"
	case f.Signal != "":
		return "killed by signal " + f.Signal
	}
	return fmt.Sprintf("exit code %d", f.ExitCode)
}

// printBackground prints a completion turn's result object (json and
// stream-json only).
func printBackground(p *printer, r *liteagent.Result) {
	if p.format == "text" {
		return
	}
	line := newResultLine(r, nil)
	line.Background = true
	writeLine(p.out, line)
}
