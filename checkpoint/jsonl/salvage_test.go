package jsonl_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/file"
	"github.com/lite-agent/lite-agent/checkpoint/jsonl"
	"github.com/lite-agent/lite-agent/session"
)

// TestImportCutStream checks that a stream cut at a line boundary (which
// leaves every line whole) is refused: the header's count tells it from a
// shorter session. So is a stream with lines added.
func TestImportCutStream(t *testing.T) {
	log := sampleLog("s1")
	out := string(export(t, store(t, "s1", log), "s1"))
	lines := strings.SplitAfter(out, "\n")
	for keep := 2; keep <= len(log); keep++ {
		cut := strings.Join(lines[:keep], "")
		dst := store(t, "", nil)
		_, err := jsonl.Import(t.Context(), dst, strings.NewReader(cut))
		want := fmt.Sprintf("ends after %d of the %d events", keep-1, len(log))
		if !errors.Is(err, jsonl.ErrFormat) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "cut short") {
			t.Fatalf("import of the first %d lines: %v, want ErrFormat saying it %s and was cut short", keep, err, want)
		}
		if list, _ := dst.List(t.Context(), "", checkpoint.ListOptions{AllKinds: true}); len(list) != 0 {
			t.Fatalf("a cut stream created %d sessions", len(list))
		}
	}
	extra := out + strings.Replace(lines[len(lines)-2], fmt.Sprintf(`"seq":%d`, len(log)), fmt.Sprintf(`"seq":%d`, len(log)+1), 1)
	if _, err := jsonl.Import(t.Context(), store(t, "", nil), strings.NewReader(extra)); !errors.Is(err, jsonl.ErrFormat) || !strings.Contains(err.Error(), "more events than") {
		t.Fatalf("import with an event past the header's count: %v", err)
	}
	other := strings.Replace(out, `"session":"s1"`, `"session":"s2"`, 1)
	if _, err := jsonl.Import(t.Context(), store(t, "", nil), strings.NewReader(other)); !errors.Is(err, jsonl.ErrFormat) || !strings.Contains(err.Error(), "header") {
		t.Fatalf("import with a header naming another session: %v", err)
	}
}

// TestImportWithoutHeader checks that a stream written before the header
// existed still imports.
func TestImportWithoutHeader(t *testing.T) {
	log := sampleLog("s1")
	out := export(t, store(t, "s1", log), "s1")
	old := out[bytes.IndexByte(out, '\n')+1:]
	dst := store(t, "", nil)
	if _, err := jsonl.Import(t.Context(), dst, bytes.NewReader(old)); err != nil {
		t.Fatalf("import of a stream without a header: %v", err)
	}
	got, _ := checkpoint.ReadAll(t.Context(), dst, "s1")
	sameImported(t, log, got, "stdin")
}

// cutFileStore writes a 21-event session s1 in a file store under root,
// one Append per event, then cuts its log file to the first keep events.
func cutFileStore(t *testing.T, root string, keep int) []session.Event {
	t.Helper()
	s, err := file.Open(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	events := []session.Event{session.MustNew(session.TypeSessionStarted, session.SessionStarted{ID: "s1", Namespace: "ns"})}
	var sizes []int64
	path := ""
	for i := range 21 {
		if i > 0 {
			events = append(events, session.MustNew(session.TypeUserPrompt, session.UserPrompt{Text: fmt.Sprint("prompt ", i)}))
		}
		if _, err := s.Append(t.Context(), "s1", int64(i), events[i:i+1]); err != nil {
			t.Fatal(err)
		}
		if path == "" {
			target, _ := os.Readlink(filepath.Join(root, "ids", "s1"))
			path = filepath.Join(root, "ids", target)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, fi.Size())
	}
	s.Close()
	if err := os.Truncate(path, sizes[keep-1]+7); err != nil { // into the next frame
		t.Fatal(err)
	}
	got, _ := checkpoint.ReadAll(t.Context(), store(t, "s1", events), "s1")
	return got[:keep]
}

// TestSalvage checks what salvage gives for a file-store log cut after
// event 9 of 21: the 9 events that verify, in a stream marked as salvaged
// that imports into a fresh store as a session of those events, while an
// ordinary export fails with the corruption and writes a stream that does
// not import.
func TestSalvage(t *testing.T) {
	root := filepath.Join(t.TempDir(), "store")
	want := cutFileStore(t, root, 9)
	src, err := file.Open(root, &file.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()

	var plain bytes.Buffer
	err = jsonl.Export(t.Context(), src, "s1", &plain)
	if ce, ok := checkpoint.IsCorrupt(err); !ok || ce.Seq != 10 {
		t.Fatalf("export of the cut log: %v, want corruption at seq 10", err)
	}
	if _, err := jsonl.Import(t.Context(), store(t, "", nil), &plain); !errors.Is(err, jsonl.ErrFormat) {
		t.Fatalf("import of the failed export: %v, want ErrFormat", err)
	}

	var out bytes.Buffer
	sv, err := jsonl.Salvage(t.Context(), src, "s1", &out)
	if err != nil {
		t.Fatalf("salvage: %v", err)
	}
	if sv.Events != 9 || sv.Head != 21 || sv.Damage == nil || sv.Damage.Seq != 10 {
		t.Fatalf("salvage: %+v, want 9 events of head 21, damage at seq 10", sv)
	}
	first, _, _ := strings.Cut(out.String(), "\n")
	if !strings.Contains(first, `"salvaged":true`) || !strings.Contains(first, `"events":9`) || !strings.Contains(first, "seq 10") {
		t.Fatalf("salvaged stream's header %s does not mark it salvaged with 9 events and the damage", first)
	}
	dst := store(t, "", nil)
	im, err := jsonl.ImportStream(t.Context(), dst, &out, nil)
	if err != nil {
		t.Fatalf("import of the salvaged stream: %v", err)
	}
	if im.Session != "s1" || im.Events != 9 || !im.Salvaged || !strings.Contains(im.Damage, "seq 10") {
		t.Fatalf("import of the salvaged stream: %+v", im)
	}
	got, err := checkpoint.ReadAll(t.Context(), dst, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if m := sameImported(t, want, got, "stdin"); !m.Salvaged || m.Head != 21 {
		t.Fatalf("the salvaged import's mark %+v; want salvaged from a log of head 21", m)
	}
}

// TestSalvageWholeLog checks that salvaging a log that verifies is an
// ordinary export, and that an unknown session is ErrNotFound.
func TestSalvageWholeLog(t *testing.T) {
	log := sampleLog("s1")
	c := store(t, "s1", log)
	var out bytes.Buffer
	sv, err := jsonl.Salvage(t.Context(), c, "s1", &out)
	if err != nil || sv.Damage != nil || sv.Events != int64(len(log)) {
		t.Fatalf("salvage of a whole log: %+v, %v", sv, err)
	}
	if !bytes.Equal(out.Bytes(), export(t, c, "s1")) {
		t.Fatalf("salvage of a whole log differs from its export:\n%s", out.Bytes())
	}
	if _, err := jsonl.Salvage(t.Context(), c, "nope", &out); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("salvage of an unknown session: %v", err)
	}
}
