//go:build unix

package main

import (
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/lite-agent/lite-agent/internal/fakemodel"
)

func stallAfter(n int) *fakemodel.Fault {
	return &fakemodel.Fault{Kind: fakemodel.FaultStall, AfterDeltas: &n}
}

// TestStalledStreamEndsTheRun: a model stream that sends a few deltas and
// then nothing ends a one-shot run with a clear error once --idle-timeout
// passes, instead of hanging; a stream silent from the start is retried.
func TestStalledStreamEndsTheRun(t *testing.T) {
	srv := startModel(t,
		fakemodel.Reply{Text: "never arrives", Fault: stallAfter(0)},
		fakemodel.Reply{Text: "the retry answers"},
		fakemodel.Reply{Text: "a few words and then nothing at all", Fault: stallAfter(2)},
	)
	work := t.TempDir()
	code, out, errs := run(t, srv, work, "--idle-timeout", "300ms", "first")
	if code != 0 || !strings.Contains(out, "the retry answers") {
		t.Fatalf("a stream silent from the start: exit %d, %q, %q; want the retry's answer", code, out, errs)
	}
	code, _, errs = run(t, srv, work, "--idle-timeout", "300ms", "second")
	if code != 1 || !strings.Contains(errs, "stalled") || !strings.Contains(errs, "300ms") {
		t.Fatalf("a stream that stalls mid-answer: exit %d, %q; want 1 saying it stalled for 300ms", code, errs)
	}
	if code, _, errs := run(t, nil, work, "--idle-timeout", "-1s", "x"); code != 2 {
		t.Fatalf("--idle-timeout -1s: exit %d %q, want 2", code, errs)
	}
}

// TestSignalsStopAStalledRun: with no idle timeout, SIGTERM, or one Ctrl-C
// (SIGINT), stops a run whose model stream hangs; the log records the
// interruption.
func TestSignalsStopAStalledRun(t *testing.T) {
	for _, sig := range []os.Signal{syscall.SIGTERM, os.Interrupt} {
		t.Run(sig.String(), func(t *testing.T) {
			srv := startModel(t, fakemodel.Reply{Text: "a few words and then nothing", Fault: stallAfter(1)})
			work := t.TempDir()
			db := work + "/s.db"
			p := start(t, srv, work, "--session-db", db, "--idle-timeout", "0", "hang")
			waitFor(t, "the model request", func() bool { return len(srv.Requests()) >= 1 })
			if err := p.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			if code := exitOf(t, p); code != 130 {
				t.Fatalf("exit %d after %v, want 130: %s", code, sig, p.stderr)
			}
			if in := sessionInfo(t, work, db, onlySession(t, work, db)); in.Status != "interrupted" {
				t.Fatalf("status %q after %v, want interrupted", in.Status, sig)
			}
		})
	}
}
