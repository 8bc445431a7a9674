package builtin

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteDiffsAgainstTheOldFile(t *testing.T) {
	w := newWorkdir(t)
	writeFiles(t, w.dir, map[string]string{"main.go": "package main\n\nfunc main() {\n\tprintln(1)\n}\n"})
	input := `{"path": "main.go", "content": "package main\n\nfunc main() {\n\tprintln(2)\n}\n"}`
	wantDiff := "--- main.go\n+++ main.go\n@@ -1,5 +1,5 @@\n package main\n \n func main() {\n-\tprintln(1)\n+\tprintln(2)\n }\n"
	if got := (Write{}).Preview(w.root, json.RawMessage(input)); got != wantDiff {
		t.Errorf("write preview =\n%s\nwant\n%s", got, wantDiff)
	}
	got := w.call(t, Write{}, input)
	if want := "wrote main.go (42 bytes, 5 lines)\n" + strings.TrimSuffix(wantDiff, "\n"); got.Output != want {
		t.Errorf("write over an existing file =\n%s\nwant\n%s", got.Output, want)
	}
	// A new file: the preview shows every line added; the result stays short.
	input = `{"path": "new.txt", "content": "a\n\tb\n"}`
	if got, want := (Write{}).Preview(w.root, json.RawMessage(input)), "--- new.txt\n+++ new.txt\n@@ -0,0 +1,2 @@\n+a\n+\tb\n"; got != want {
		t.Errorf("write preview of a new file =\n%s\nwant\n%s", got, want)
	}
	if got := w.call(t, Write{}, input); got.Output != "created new.txt (5 bytes, 2 lines)" {
		t.Errorf("write of a new file = %q", got.Output)
	}
	if got := w.call(t, Write{}, input); got.Output != "wrote new.txt (5 bytes, 2 lines)\n(no change: the file already had this content)" {
		t.Errorf("write of the same content = %q", got.Output)
	}
}

func TestEditPreviewMatchesResult(t *testing.T) {
	w := newWorkdir(t)
	writeFiles(t, w.dir, map[string]string{"a.txt": "one\ntwo\nthree\n"})
	input := `{"path": "a.txt", "old_string": "two", "new_string": "2"}`
	preview := (Edit{}).Preview(w.root, json.RawMessage(input))
	got := w.call(t, Edit{}, input)
	if preview == "" || !strings.HasSuffix(got.Output, strings.TrimSuffix(preview, "\n")) {
		t.Errorf("edit preview\n%s\nis not the diff its result shows:\n%s", preview, got.Output)
	}
	if readFile(t, filepath.Join(w.dir, "a.txt")) != "one\n2\nthree\n" {
		t.Error("edit did not apply")
	}
	for _, bad := range []string{`{"path": "a.txt", "old_string": "absent", "new_string": "x"}`, `{"path": "../x", "old_string": "a", "new_string": "b"}`, `{}`} {
		if p := (Edit{}).Preview(w.root, json.RawMessage(bad)); p != "" {
			t.Errorf("preview of %s = %q, want none", bad, p)
		}
	}
}

func TestResultDiffCapped(t *testing.T) {
	old := strings.Repeat("line\n", 1000)
	got := resultDiff("big.txt", old, "")
	if n := strings.Count(got, "\n"); n != resultDiffLines {
		t.Errorf("capped diff has %d lines, want %d", n+1, resultDiffLines+1)
	}
	if !strings.HasSuffix(got, "[diff cut: 803 more lines; read the file to see the rest]") {
		t.Errorf("capped diff ends %q", got[max(0, len(got)-80):])
	}
}
