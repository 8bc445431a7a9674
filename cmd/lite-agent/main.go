// Command lite-agent is a coding agent with durable sessions. Run
// `lite-agent --help` for its flags, or `lite-agent --demo` for an offline
// demo against the bundled fake model server.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/charmbracelet/x/term"
	"github.com/lite-agent/lite-agent/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	// The first Ctrl-C cancels the running turn; the second quits.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt)
	interrupts := make(chan struct{}, 1)
	go func() {
		var last time.Time
		for range sigs {
			if time.Since(last) < 3*time.Second {
				os.Exit(cli.ExitInterrupted)
			}
			last = time.Now()
			select {
			case interrupts <- struct{}{}:
			default: // the last one was not taken yet: nothing listens, so quit
				os.Exit(cli.ExitInterrupted)
			}
		}
	}()
	code := cli.Main(ctx, os.Args[1:], cli.IO{
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		Interactive: term.IsTerminal(os.Stdin.Fd()),
		Interrupt:   interrupts,
	})
	stop()
	os.Exit(code)
}
