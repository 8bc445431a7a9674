// Package shell starts bash command lines the way the agent's tools run
// them, and stops them with everything they started.
//
// A command runs in a session of its own (setsid), which makes it the
// leader of its own process group and detaches it from the terminal, so
// nothing it runs can read the user's keyboard. Its stdout and stderr go
// to one pipe copied to a writer. End stops the whole group: SIGTERM, then
// SIGKILL after a grace period. A process that leaves the group (setsid, a
// double fork into a new session) escapes this.
//
// The foreground bash tool (tool/builtin) and background jobs (package
// jobs) both start their commands here. It needs a Unix system.
package shell

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Launcher starts commands confined. Wrap rewrites a command not yet
// started so that it starts confined (it keeps Dir, Env, the files and
// SysProcAttr); Name is the confinement's name, recorded with each call.
// package sandbox's *Policy is one.
type Launcher interface {
	Wrap(cmd *exec.Cmd) error
	Name() string
}

// Command is a command line to start.
type Command struct {
	// Line is run with bash -c.
	Line string
	// Dir is the directory it runs in.
	Dir string
	// Env is its whole environment ("KEY=value" entries).
	Env []string
	// Sandbox confines it; nil runs it unconfined.
	Sandbox Launcher
}

// Process is a started command whose output is being copied to a writer.
type Process struct {
	cmd    *exec.Cmd
	pgid   int
	pr     *os.File
	copied chan struct{} // closed when the output copy ends
	waited chan error    // receives cmd.Wait's result once
}

// Start starts c with its stdout and stderr copied to out. out is written
// from one goroutine of the Process's own; it must not be read before End
// returns unless it is safe for concurrent use.
func Start(c Command, out io.Writer) (*Process, error) {
	cmd := exec.Command("bash", "-c", c.Line)
	cmd.Dir = c.Dir
	cmd.Env = c.Env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if c.Sandbox != nil {
		if err := c.Sandbox.Wrap(cmd); err != nil {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	err = cmd.Start()
	pw.Close()
	if err != nil {
		pr.Close()
		return nil, err
	}
	p := &Process{cmd: cmd, pgid: cmd.Process.Pid, pr: pr, copied: make(chan struct{}), waited: make(chan error, 1)}
	go func() {
		io.Copy(out, pr)
		close(p.copied)
	}()
	go func() { p.waited <- cmd.Wait() }()
	return p, nil
}

// PID returns the leader's process id, which is also the group's id.
func (p *Process) PID() int { return p.pgid }

// Exited receives the leader's wait result once, when it has exited.
func (p *Process) Exited() <-chan error { return p.waited }

// State returns the leader's exit state; nil until it was waited for.
func (p *Process) State() *os.ProcessState { return p.cmd.ProcessState }

// End stops the process group (all of it at once with now, else what the
// leader left behind) and stops reading the output. The caller must have
// received from Exited unless now is set. It reports whether processes
// other than the leader were left to stop, and whether a process that left
// the group still held the output open. After End, out is no longer
// written.
func (p *Process) End(now bool, grace time.Duration) (leftovers, detached bool) {
	leftovers = stopGroup(p.pgid, p.waited, now, grace)
	// Everything in the group is gone, so the pipe is closed unless a
	// process that left the group still holds it: stop reading then.
	t := time.NewTimer(grace)
	select {
	case <-p.copied:
	case <-t.C:
		detached = true
	}
	t.Stop()
	p.pr.Close()
	<-p.copied
	return leftovers, detached
}

// ExitNote describes how a command ended, as the model reads it:
// "[exit code 3]", "[killed by signal terminated]".
func ExitNote(ps *os.ProcessState) string {
	if ps == nil {
		return "[exit status unknown]"
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return fmt.Sprintf("[killed by signal %s]", ws.Signal())
	}
	return fmt.Sprintf("[exit code %d]", ps.ExitCode())
}

// stopGroup ends the command's process group. With now set (timeout or
// cancellation) the whole group gets SIGTERM at once; otherwise the leader
// has exited and only processes left behind, if any, get it. Whatever still
// lives after grace gets SIGKILL. It returns once the leader has been waited
// for and the group is gone (or, for zombies nobody reaps, after a bound),
// and reports whether processes other than the leader were left to stop.
func stopGroup(pgid int, waited <-chan error, now bool, grace time.Duration) (leftovers bool) {
	deadline := time.Now().Add(grace)
	if now {
		syscall.Kill(-pgid, syscall.SIGTERM)
		t := time.NewTimer(grace)
		select {
		case <-waited:
		case <-t.C:
			syscall.Kill(-pgid, syscall.SIGKILL)
			<-waited
		}
		t.Stop()
	}
	if !GroupAlive(pgid) {
		return false
	}
	if !now {
		syscall.Kill(-pgid, syscall.SIGTERM)
	}
	if !waitGroupGone(pgid, time.Until(deadline)) {
		syscall.Kill(-pgid, syscall.SIGKILL)
		waitGroupGone(pgid, grace)
	}
	return true
}

// waitGroupGone polls until the group has no live process or d has passed.
func waitGroupGone(pgid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for pause := time.Millisecond; ; pause = min(2*pause, 50*time.Millisecond) {
		if !GroupAlive(pgid) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pause)
	}
}

// errNoProcess is what kill(2) says about a group with no process left.
var errNoProcess = syscall.ESRCH
