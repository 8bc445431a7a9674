package cli

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/charmbracelet/x/term"
	"github.com/lite-agent/lite-agent/sandbox"
)

// Linked is what a command links in beyond lite-agent itself. Each part
// left nil is handed to the command beside it that holds it
// (lite-agent-tui, lite-agent-serve), so lite-agent stays small.
type Linked struct {
	FullScreen func() FullScreen // the full-screen client (package tui)
	Serving    func() Serving    // serve's HTTP server (package server)
}

// Command runs the command line on the process's arguments and standard
// streams and returns the exit status: what a command's main calls.
// SIGTERM cancels everything; the first Ctrl-C (SIGINT) cancels the running
// turn and a second within three seconds quits. linked names what the
// command links in beyond lite-agent itself; nil is none.
func Command(linked *Linked) int {
	if linked == nil {
		linked = &Linked{}
	}
	sandbox.Launch() // a sandboxed shell command starts here, as this binary re-executed
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt)
	defer signal.Stop(sigs)
	interrupts := make(chan struct{}, 1)
	go func() {
		var last time.Time
		for range sigs {
			if time.Since(last) < 3*time.Second {
				os.Exit(ExitInterrupted)
			}
			last = time.Now()
			select {
			case interrupts <- struct{}{}:
			default: // the last one was not taken yet: nothing listens, so quit
				os.Exit(ExitInterrupted)
			}
		}
	}()
	return Main(ctx, os.Args[1:], IO{
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		Interactive: term.IsTerminal(os.Stdin.Fd()),
		Interrupt:   interrupts,
		FullScreen:  linked.FullScreen,
		Serving:     linked.Serving,
	})
}
