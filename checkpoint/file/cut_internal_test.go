package file

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
)

// TestCutLogAfterReboot checks that a log cut short is still caught when
// the index was written before the machine last booted (so that it is
// checked against the logs): the recorded head is kept, not refolded from
// the shorter log, and the index rewritten for this boot keeps it too.
func TestCutLogAfterReboot(t *testing.T) {
	root := t.TempDir()
	s := newStore(t, root)
	head := mustAppend(t, s, "s1", 0, startedEv("s1", "ns"))
	var cut int64
	for i := range 6 {
		if i == 3 {
			fi, err := os.Stat(s.logPath(folderFor("ns"), "s1"))
			if err != nil {
				t.Fatal(err)
			}
			cut = fi.Size()
		}
		head = mustAppend(t, s, "s1", head, promptEv("p"))
	}
	path := s.logPath(folderFor("ns"), "s1")
	idx := filepath.Join(s.nsPath(folderFor("ns")), indexName)
	s.Close()
	old, err := os.ReadFile(idx)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(idx, replaceBoot(t, old, "an-earlier-boot"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, cut); err != nil {
		t.Fatal(err)
	}
	for range 2 { // checking the index, then with the index rewritten for this boot
		s = newStore(t, root)
		log, err := checkpoint.ReadAll(t.Context(), s, "s1")
		if ce, ok := checkpoint.IsCorrupt(err); !ok || ce.Seq != 5 || len(log) != 4 {
			t.Fatalf("read of a cut log after a reboot: %d events, %v; want 4 and corruption at seq 5", len(log), err)
		}
		if _, err := s.Append(t.Context(), "s1", 4, []session.Event{promptEv("x")}); !checkpointCorrupt(err) {
			t.Fatalf("append after the cut: %v, want corruption", err)
		}
		if h, err := s.Head(t.Context(), "s1"); err != nil || h.Head != 7 {
			t.Fatalf("head after the cut: %+v, %v; want the recorded head 7", h, err)
		}
		s.Close()
	}
}

func checkpointCorrupt(err error) bool {
	_, ok := checkpoint.IsCorrupt(err)
	return ok
}
