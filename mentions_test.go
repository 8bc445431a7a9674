package liteagent_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/checkpoint/memory"
)

func TestExpandMentions(t *testing.T) {
	work := t.TempDir()
	outside := t.TempDir()
	for name, content := range map[string]string{
		"main.go": "package main\n", "docs/a.md": "# A\n", "docs/b.md": "# B", "docs/.hidden": "x",
		"docs/gen/x.md": "", "docs/.gitignore": "ignored.md\n", "docs/ignored.md": "", "bin.dat": "a\x00b",
	} {
		p := filepath.Join(work, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("secret"), 0o644)
	os.WriteFile(filepath.Join(work, "big.txt"), []byte(strings.Repeat("y", 300<<10)), 0o644)
	store := memory.New()
	a, err := liteagent.New(&liteagent.Options{Provider: echoProvider{}, Workdir: work, Checkpointer: store})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	defer store.Close()

	got, notes := a.ExpandMentions(t.Context(), "explain @main.go and @docs, mail @someone, not @../"+filepath.Base(outside)+"/secret.txt or @bin.dat.")
	want := "explain @main.go and @docs, mail @someone, not @../" + filepath.Base(outside) + "/secret.txt or @bin.dat.\n\n" +
		"<file path=\"main.go\">\npackage main\n</file>\n\n" +
		"<directory path=\"docs\">\na.md\nb.md\ngen/\n</directory>"
	if got != want {
		t.Errorf("expanded =\n%s\nwant\n%s", got, want)
	}
	if len(notes) != 2 || !strings.Contains(notes[0], "outside the workdir") || !strings.Contains(notes[1], "@bin.dat not attached: a binary file") {
		t.Errorf("notes = %q", notes)
	}
	got, notes = a.ExpandMentions(t.Context(), "@big.txt")
	if !strings.HasSuffix(got, strings.Repeat("y", 100)+"\n</file>") || len(got) > 257<<10 || len(notes) != 1 || !strings.Contains(notes[0], "first 256 KiB of 300") {
		t.Errorf("a big file: %d bytes, notes %q", len(got), notes)
	}
	if got, notes := a.ExpandMentions(t.Context(), "no mentions here"); got != "no mentions here" || notes != nil {
		t.Errorf("no mentions: %q %q", got, notes)
	}
}
