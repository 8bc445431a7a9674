// Command fakemodel serves a scripted fake model on 127.0.0.1, speaking the
// Anthropic Messages and OpenAI Chat Completions streaming formats, for
// demos, manual tests and tests of other programs.
//
// Usage:
//
//	fakemodel -script FILE [-addr 127.0.0.1:0] [-log FILE] [-stdin]
//	fakemodel -demo [-addr …] [-log …] [-stdin]
//
// The first line it prints is the base URL, such as
// "http://127.0.0.1:41234": use it as ANTHROPIC_BASE_URL, or with "/v1"
// added as OPENAI_BASE_URL. It serves until SIGINT or SIGTERM, or, with
// -stdin, until its standard input closes (so a parent process can tie the
// server's life to its own). On exit it prints a summary on standard
// error, and exits with status 1 if any request failed an expectation of
// the script. The script format is described in package
// internal/fakemodel.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/lite-agent/lite-agent/internal/fakemodel"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	switch {
	case err == nil:
	case errors.Is(err, flag.ErrHelp):
		os.Exit(2)
	case errors.Is(err, errFailures):
		fmt.Fprintln(os.Stderr, "fakemodel:", err)
		os.Exit(1)
	default:
		fmt.Fprintln(os.Stderr, "fakemodel:", err)
		os.Exit(2)
	}
}

// errFailures means the server ran, but requests failed the script's
// expectations.
var errFailures = errors.New("requests failed the script's expectations")

// run is the whole command: it serves until ctx is done (or stdin closes,
// with -stdin).
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("fakemodel", flag.ContinueOnError)
	fs.SetOutput(stderr)
	scriptPath := fs.String("script", "", "the script `FILE` to follow (JSON)")
	demo := fs.Bool("demo", false, "follow the bundled demo script instead of a file")
	addr := fs.String("addr", "127.0.0.1:0", "the `address` to listen on")
	logPath := fs.String("log", "", "append every request to `FILE` as JSON Lines")
	watchStdin := fs.Bool("stdin", false, "stop when standard input closes")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: fakemodel -script FILE | -demo [-addr ADDR] [-log FILE] [-stdin]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q; pass the script with -script FILE", fs.Arg(0))
	}

	var script *fakemodel.Script
	switch {
	case *scriptPath != "" && *demo:
		return errors.New("pass either -script FILE or -demo, not both")
	case *scriptPath != "":
		s, err := fakemodel.LoadScript(*scriptPath)
		if err != nil {
			return err
		}
		script = s
	case *demo:
		script = fakemodel.DemoScript()
	default:
		return errors.New("no script: pass -script FILE, or -demo for the bundled demo script")
	}

	opts := &fakemodel.Options{Addr: *addr}
	if *logPath != "" {
		f, err := os.OpenFile(*logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("open log: %w", err)
		}
		defer f.Close()
		opts.Log = f
	}
	srv, err := fakemodel.StartWithOptions(script, opts)
	if err != nil {
		return err
	}
	defer srv.Close()
	if _, err := fmt.Fprintln(stdout, srv.URL()); err != nil {
		return err
	}

	stdinClosed := make(chan struct{})
	if *watchStdin {
		go func() {
			defer close(stdinClosed)
			_, _ = io.Copy(io.Discard, bufio.NewReader(stdin))
		}()
	}
	select {
	case <-ctx.Done():
	case <-stdinClosed:
	}
	if err := srv.Close(); err != nil {
		return err
	}
	reqs, fails := srv.Requests(), srv.Failures()
	fmt.Fprintf(stderr, "fakemodel: served %d requests, %d replies unused\n", len(reqs), srv.Remaining())
	for _, f := range fails {
		fmt.Fprintln(stderr, "fakemodel:", f)
	}
	if len(fails) > 0 {
		return fmt.Errorf("%w: %d", errFailures, len(fails))
	}
	return nil
}
