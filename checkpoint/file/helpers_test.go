package file_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/file"
	"github.com/lite-agent/lite-agent/session"
)

// openStore opens a store at root and closes it when the test ends.
func openStore(tb testing.TB, root string, opts *file.Options) *file.Store {
	tb.Helper()
	s, err := file.Open(root, opts)
	if err != nil {
		tb.Fatalf("open %s: %v", root, err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("close %s: %v", root, err)
		}
	})
	return s
}

// appendOK appends and fails the test on error.
func appendOK(tb testing.TB, s *file.Store, id string, head int64, events ...session.Event) int64 {
	tb.Helper()
	got, err := s.Append(tb.Context(), id, head, events)
	if err != nil {
		tb.Fatalf("append %d events to %s at %d: %v", len(events), id, head, err)
	}
	return got
}

// started is a session_started event.
func started(id, ns string) session.Event {
	return session.MustNew(session.TypeSessionStarted, session.SessionStarted{ID: id, Namespace: ns, Workdir: ns})
}

// prompt is a user_prompt event.
func prompt(text string) session.Event {
	return session.MustNew(session.TypeUserPrompt, session.UserPrompt{Text: text})
}

// readLog reads a whole log, failing the test on error.
func readLog(tb testing.TB, s *file.Store, id string) []session.Event {
	tb.Helper()
	events, err := checkpoint.ReadAll(tb.Context(), s, id)
	if err != nil {
		tb.Fatalf("read %s: %v", id, err)
	}
	return events
}

// texts returns the prompt texts of a log (skipping other events).
func texts(tb testing.TB, events []session.Event) []string {
	tb.Helper()
	var out []string
	for _, e := range events {
		if e.Type != session.TypeUserPrompt {
			continue
		}
		var p session.UserPrompt
		if err := e.Decode(&p); err != nil {
			tb.Fatalf("event %d: %v", e.Seq, err)
		}
		out = append(out, p.Text)
	}
	return out
}

// folder is the folder name the store uses for a namespace (see doc.go).
func folder(base, ns string) string {
	sum := sha256.Sum256([]byte(ns))
	return base + "-" + hex.EncodeToString(sum[:6])
}

// logPath finds the log file of session id under root.
func logPath(tb testing.TB, root, id string) string {
	tb.Helper()
	m, err := filepath.Glob(filepath.Join(root, "ns", "*", id+".log"))
	if err != nil || len(m) != 1 {
		tb.Fatalf("log of %s under %s: %v %v", id, root, m, err)
	}
	return m[0]
}

// indexPath is the index file of the folder holding session id.
func indexPath(tb testing.TB, root, id string) string {
	tb.Helper()
	return filepath.Join(filepath.Dir(logPath(tb, root, id)), "index")
}

// tree is a snapshot of every file, directory and symlink under a root.
type tree map[string]string

// snapshot records what is under root (mode and content or link target).
func snapshot(tb testing.TB, root string) tree {
	tb.Helper()
	t := tree{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && p == root {
			return filepath.SkipDir
		}
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		desc := fi.Mode().String()
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			desc += " -> " + target
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			desc += " " + hex.EncodeToString(sum[:8])
		}
		t[rel] = desc
		return nil
	})
	if err != nil {
		tb.Fatalf("snapshot %s: %v", root, err)
	}
	return t
}

// sameTree fails if anything under root differs from before.
func sameTree(tb testing.TB, root string, before tree) {
	tb.Helper()
	if diff := cmp.Diff(before, snapshot(tb, root)); diff != "" {
		tb.Fatalf("files under %s changed (-before +after):\n%s", root, diff)
	}
}

// wantErrText fails unless err wraps target (if not nil) and its message
// holds every one of parts.
func wantErrText(tb testing.TB, what string, err, target error, parts ...string) {
	tb.Helper()
	if err == nil {
		tb.Fatalf("%s: no error", what)
	}
	if target != nil && !errors.Is(err, target) {
		tb.Fatalf("%s: error %v, want %v", what, err, target)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			tb.Fatalf("%s: error %q does not mention %q", what, err, p)
		}
	}
}

// flipByte changes one byte of a file in place.
func flipByte(tb testing.TB, path string, off int64) {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	b[off] ^= 0x5a
	if err := os.WriteFile(path, b, 0o600); err != nil {
		tb.Fatal(err)
	}
}

// appendBytes appends raw bytes to a file.
func appendBytes(tb testing.TB, path string, b []byte) {
	tb.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		tb.Fatal(err)
	}
}

// sizeOf returns a file's size.
func sizeOf(tb testing.TB, path string) int64 {
	tb.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		tb.Fatal(err)
	}
	return fi.Size()
}

// fileBytes returns a file's content.
func fileBytes(tb testing.TB, path string) []byte {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return bytes.Clone(b)
}
