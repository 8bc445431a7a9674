package builtin

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/tool"
)

func TestWrite(t *testing.T) {
	w := newWorkdir(t)
	writeFiles(t, w.dir, map[string]string{"exec.sh": "old", "private.txt": "old", "dir/": "", "target.txt": "old"})
	os.Chmod(filepath.Join(w.dir, "exec.sh"), 0o755)
	os.Chmod(filepath.Join(w.dir, "private.txt"), 0o600)
	symlink(t, "target.txt", filepath.Join(w.dir, "link.txt"))

	tests := []struct {
		name, input string
		wantErr     bool
		want        []string
		file        string // checked when set
		content     string
		mode        fs.FileMode
	}{
		{name: "new with parents", input: `{"path": "a/b/new.txt", "content": "x\ny\n"}`, want: []string{"created a/b/new.txt (4 bytes, 2 lines)"}, file: "a/b/new.txt", content: "x\ny\n", mode: 0o644},
		{name: "keeps exec mode", input: `{"path": "exec.sh", "content": "#!/bin/sh\n"}`, want: []string{"wrote exec.sh"}, file: "exec.sh", content: "#!/bin/sh\n", mode: 0o755},
		{name: "keeps private mode", input: `{"path": "./private.txt", "content": ""}`, want: []string{"wrote private.txt (0 bytes, 0 lines)"}, file: "private.txt", content: "", mode: 0o600},
		{name: "through a link inside", input: `{"path": "link.txt", "content": "via link"}`, want: []string{"wrote link.txt"}, file: "target.txt", content: "via link", mode: 0o644},
		{name: "directory", input: `{"path": "dir", "content": "x"}`, wantErr: true, want: []string{"dir is a directory"}},
		{name: "parent is a file", input: `{"path": "exec.sh/x", "content": "x"}`, wantErr: true, want: []string{"exec.sh/x"}},
		{name: "no content", input: `{"path": "c.txt"}`, wantErr: true, want: []string{"content is required"}},
		{name: "content not a string", input: `{"path": "c.txt", "content": 5}`, wantErr: true, want: []string{`field "content" must be a string, not a JSON number`}},
		{name: "no path", input: `{"content": "x"}`, wantErr: true, want: []string{"path is required"}},
	}
	for _, tt := range tests {
		got := w.call(t, Write{}, tt.input)
		check(t, tt.name, got, tt.wantErr, tt.want)
		if tt.file == "" {
			continue
		}
		p := filepath.Join(w.dir, tt.file)
		if c := readFile(t, p); c != tt.content {
			t.Errorf("%s: content %q, want %q", tt.name, c, tt.content)
		}
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != tt.mode {
			t.Errorf("%s: mode %v (%v), want %v", tt.name, fi.Mode(), err, tt.mode)
		}
	}
	if fi, err := os.Lstat(filepath.Join(w.dir, "link.txt")); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("link.txt is no longer a symlink: %v", err)
	}
	assertNoTempFiles(t, w.dir)
}

// assertNoTempFiles fails if a write left a temporary file behind.
func assertNoTempFiles(t testing.TB, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".lite-agent-") {
			t.Errorf("temporary file left behind: %s", p)
		}
		return nil
	})
}

func TestWriteReadOnlyDirFallsBackInPlace(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root ignores directory permissions")
	}
	w := newWorkdir(t)
	writeFiles(t, w.dir, map[string]string{"ro/f.txt": "old"})
	ro := filepath.Join(w.dir, "ro")
	os.Chmod(ro, 0o555)
	t.Cleanup(func() { os.Chmod(ro, 0o755) })
	got := w.call(t, Write{}, `{"path": "ro/f.txt", "content": "new"}`)
	check(t, "read-only dir", got, false, []string{"wrote ro/f.txt"})
	if c := readFile(t, filepath.Join(ro, "f.txt")); c != "new" {
		t.Errorf("content %q", c)
	}
}

func TestMutatorPaths(t *testing.T) {
	w := newWorkdir(t, true)
	tests := []struct {
		input   string
		want    []string
		wantErr string
	}{
		{input: `{"path": "./a/../b.txt", "content": "", "old_string": "x", "new_string": "y"}`, want: []string{"b.txt"}},
		{input: fmt.Sprintf(`{"path": %q, "content": "", "old_string": "x", "new_string": "y"}`, filepath.Join(w.dir, "sub", "c.txt")), want: []string{"sub/c.txt"}},
		{input: fmt.Sprintf(`{"path": %q, "content": "", "old_string": "x", "new_string": "y"}`, filepath.Join(w.outside, "secret.txt")), want: []string{filepath.Join(w.outside, "secret.txt")}},
		{input: `{"path": "../x", "content": "", "old_string": "x", "new_string": "y"}`, wantErr: "outside the workdir"},
		{input: `{"content": "", "old_string": "x", "new_string": "y"}`, wantErr: "path is required"},
		{input: `{"path": 1}`, wantErr: "must be a string"},
	}
	for _, m := range []interface {
		Paths(*tool.Root, json.RawMessage) ([]string, error)
	}{Write{}, Edit{}} {
		for _, tt := range tests {
			got, err := m.Paths(w.root, json.RawMessage(tt.input))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("%T.Paths(%s) = %v, %v; want error %q", m, tt.input, got, err, tt.wantErr)
				}
				continue
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("%T.Paths(%s) = %v, %v; want %v", m, tt.input, got, err, tt.want)
			}
		}
	}
	// Write needs content, edit needs old_string and new_string.
	if _, err := (Write{}).Paths(w.root, json.RawMessage(`{"path": "a"}`)); err == nil {
		t.Error("Write.Paths without content succeeded")
	}
	if _, err := (Edit{}).Paths(w.root, json.RawMessage(`{"path": "a", "old_string": "x"}`)); err == nil {
		t.Error("Edit.Paths without new_string succeeded")
	}
}
