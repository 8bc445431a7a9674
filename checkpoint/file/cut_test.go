package file_test

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/file"
	"github.com/lite-agent/lite-agent/session"
)

// writeTurns creates session s1 with a session_started event and 20
// prompts, one Append each (so one frame each), and returns its log's path.
func writeTurns(t *testing.T, root string) string {
	t.Helper()
	s := openStore(t, root, nil)
	head := appendOK(t, s, "s1", 0, started("s1", "ns"))
	for i := range 20 {
		head = appendOK(t, s, "s1", head, prompt(fmt.Sprintf("prompt %d", i+1)))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return logPath(t, root, "s1")
}

// frameStart returns the offset of the frame holding seq in the log at path.
func frameStart(t *testing.T, path string, seq int64) int64 {
	t.Helper()
	_, off, _ := frames(t, path)
	o, ok := off[seq]
	if !ok {
		t.Fatalf("no frame starts with seq %d", seq)
	}
	return o
}

// TestCutLog cuts a 21-event log (in half, in the middle of a frame, and at
// a frame boundary) and checks that what a fresh store (read-only or not)
// makes of it is corruption, never a shorter log: Read yields the events
// before the cut and then a *checkpoint.CorruptError at the first missing
// seq, Append and Truncate are refused with it, and no file changes.
func TestCutLog(t *testing.T) {
	cases := []struct {
		name string
		cut  func(t *testing.T, path string) int64 // the size to cut the log to
	}{
		{"in half", func(t *testing.T, path string) int64 { return sizeOf(t, path) / 2 }},
		{"mid-frame", func(t *testing.T, path string) int64 { return frameStart(t, path, 15) + 20 }},
		{"at a frame boundary", func(t *testing.T, path string) int64 { return frameStart(t, path, 10) }},
		{"before the last frame", func(t *testing.T, path string) int64 { return frameStart(t, path, 21) }},
	}
	for _, tc := range cases {
		for _, readOnly := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/read-only=%v", tc.name, readOnly), func(t *testing.T) {
				root := t.TempDir()
				path := writeTurns(t, root)
				size := tc.cut(t, path)
				if err := os.Truncate(path, size); err != nil {
					t.Fatal(err)
				}
				// The events whose frames end before the cut survive.
				_, off, sz := frames(t, path)
				var kept int64
				for seq := int64(1); seq <= 21; seq++ {
					if o, ok := off[seq]; ok && o+sz[seq] <= size {
						kept = seq
					}
				}
				before := snapshot(t, root)
				s := openStore(t, root, &file.Options{ReadOnly: readOnly})
				ctx := t.Context()
				log, err := checkpoint.ReadAll(ctx, s, "s1")
				ce, ok := checkpoint.IsCorrupt(err)
				if !ok || ce.Session != "s1" || ce.Seq != kept+1 || int64(len(log)) != kept {
					t.Fatalf("read of the cut log: %d events, error %v; want %d events and a *checkpoint.CorruptError at seq %d", len(log), err, kept, kept+1)
				}
				wantErrText(t, "read", err, checkpoint.ErrCorrupt, path, "recorded head 21", "cut short")
				if !readOnly {
					_, err = s.Append(ctx, "s1", 21, []session.Event{prompt("after the cut")})
					wantErrText(t, "append at the recorded head", err, checkpoint.ErrCorrupt, "cut short")
					_, err = s.Append(ctx, "s1", kept, []session.Event{prompt("after the cut")})
					wantErrText(t, "append at the cut", err, checkpoint.ErrCorrupt, "cut short")
					_, err = s.Truncate(ctx, "s1", 1, 21)
					wantErrText(t, "truncate", err, checkpoint.ErrCorrupt, "cut short")
				}
				sameTree(t, root, before)
			})
		}
	}
}

// TestCutLogNotSeenAsConflict checks the error a caller branches on: a cut
// log is corruption, not a conflict another writer caused.
func TestCutLogNotSeenAsConflict(t *testing.T) {
	root := t.TempDir()
	path := writeTurns(t, root)
	if err := os.Truncate(path, frameStart(t, path, 5)); err != nil {
		t.Fatal(err)
	}
	s := openStore(t, root, nil)
	_, err := s.Append(t.Context(), "s1", 4, []session.Event{prompt("x")})
	var conflict *checkpoint.ConflictError
	if errors.As(err, &conflict) || !errors.Is(err, checkpoint.ErrCorrupt) {
		t.Fatalf("append after a cut: %v, want corruption and no conflict", err)
	}
}
