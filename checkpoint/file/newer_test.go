package file_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/lite-agent/lite-agent/checkpoint/checkpointtest"
	"github.com/lite-agent/lite-agent/checkpoint/file"
	"github.com/lite-agent/lite-agent/session"
)

// TestNewerFormats plants what a newer lite-agent could write in a file
// store, an index of the next index format and a log of the next log
// format, and checks that writable and read-only stores refuse them in
// words that say to upgrade (checkpointtest.CheckNewer), never as damage,
// while a session of another namespace goes on; nothing of the planted
// namespace's folder is changed.
func TestNewerFormats(t *testing.T) {
	for _, tc := range []struct {
		name  string
		plant func(t *testing.T, root string)
		whole bool // Head, List and the doctor refuse the namespace
	}{
		{"index format", func(t *testing.T, root string) { setVersion(t, indexPath(t, root, "a"), 2) }, true},
		{"log format", func(t *testing.T, root string) { setVersion(t, logPath(t, root, "a"), 2) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "store")
			s, err := file.Open(root, nil)
			if err != nil {
				t.Fatal(err)
			}
			for id, ns := range map[string]string{"a": "ns", "b": "other"} {
				start := session.MustNew(session.TypeSessionStarted, session.SessionStarted{ID: id, Namespace: ns})
				if _, err := s.Append(t.Context(), id, 0, []session.Event{start, session.MustNew(session.TypeUserPrompt, session.UserPrompt{Text: "hi"})}); err != nil {
					t.Fatal(err)
				}
			}
			s.Close()
			tc.plant(t, root)
			folder := filepath.Dir(logPath(t, root, "a"))
			before := snapshot(t, folder)
			bHead := int64(2)
			for _, ro := range []bool{false, true} {
				s, err := file.Open(root, &file.Options{ReadOnly: ro})
				if err != nil {
					t.Fatal(err)
				}
				if tc.whole {
					checkpointtest.CheckRefusesNewer(t, s, "a", "ns", 2, "b", &bHead, ro)
				} else {
					for _, err := range s.Read(t.Context(), "a", 1) {
						checkpointtest.CheckNewer(t, "Read", err)
						break
					}
					if !ro {
						_, err := s.Append(t.Context(), "a", 2, []session.Event{session.MustNew(session.TypeUserPrompt, session.UserPrompt{Text: "from an older build"})})
						checkpointtest.CheckNewer(t, "Append", err)
					}
				}
				s.Close()
			}
			sameTree(t, folder, before)
		})
	}
}

// setVersion sets the 2-byte format version after the 14-byte name that
// opens an index or a log file.
func setVersion(t *testing.T, path string, v uint16) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte{byte(v >> 8), byte(v)}, 14); err != nil {
		t.Fatal(err)
	}
}
