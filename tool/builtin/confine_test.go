package builtin

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/lite-agent/lite-agent/tool"
)

// snapshotDir returns every file below dir with its content.
func snapshotDir(t testing.TB, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			files[rel+"/"] = ""
			return nil
		}
		b, err := os.ReadFile(p)
		files[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestToolsRefuseEscapes(t *testing.T) {
	w := newWorkdir(t)
	writeFiles(t, w.dir, map[string]string{"sub/in.txt": "inside"})
	symlink(t, w.outside, filepath.Join(w.dir, "outlink"))
	symlink(t, filepath.Join(w.outside, "secret.txt"), filepath.Join(w.dir, "secret-link"))
	symlink(t, filepath.Join(w.outside, "new.txt"), filepath.Join(w.dir, "dangling-link"))
	symlink(t, "../../outside/secret.txt", filepath.Join(w.dir, "sub", "relative-link"))
	before := snapshotDir(t, w.outside)

	paths := []string{
		"..",
		"../outside/secret.txt",
		"sub/../../outside/new.txt",
		filepath.Join(w.outside, "secret.txt"),
		filepath.Join(w.outside, "new.txt"),
		"/etc/passwd",
		"outlink",
		"outlink/secret.txt",
		"outlink/new/file.txt",
		"secret-link",
		"dangling-link",
		"sub/relative-link",
	}
	inputs := []struct {
		tl    tool.Tool
		input string // %s is the path, JSON-quoted
	}{
		{Read{}, `{"path": %s}`},
		{Write{}, `{"path": %s, "content": "pwned"}`},
		{Edit{}, `{"path": %s, "old_string": "secret", "new_string": "pwned"}`},
		{LS{}, `{"path": %s}`},
		{Glob{}, `{"pattern": "**", "path": %s}`},
		{Grep{}, `{"pattern": "secret", "path": %s}`},
	}
	for _, in := range inputs {
		for _, p := range paths {
			q, _ := json.Marshal(p)
			input := fmt.Sprintf(in.input, q)
			got := w.call(t, in.tl, input)
			name := in.tl.Spec().Name + " " + p
			check(t, name, got, true, []string{"outside the"})
			if m, ok := in.tl.(tool.Mutator); ok {
				if paths, err := m.Paths(w.root, json.RawMessage(input)); err == nil {
					t.Errorf("%s: Paths = %v, want an error", name, paths)
				}
			}
		}
	}
	if diff := cmp.Diff(before, snapshotDir(t, w.outside)); diff != "" {
		t.Errorf("the directory outside changed (-before +after):\n%s", diff)
	}
}

// TestSwapAfterLocate simulates a race: a path is checked, then a directory
// on it is replaced by a symlink to outside before the tool touches it. The
// os.Root-based access the tools use must fail and leave nothing outside.
func TestSwapAfterLocate(t *testing.T) {
	tests := []struct {
		name string
		path string
		use  func(loc tool.Loc) error
	}{
		{name: "overwrite", path: "sub/in.txt", use: func(loc tool.Loc) error {
			return loc.WriteFile([]byte("pwned"), newFileMode)
		}},
		{name: "create", path: "sub/new.txt", use: func(loc tool.Loc) error {
			return loc.WriteFile([]byte("pwned"), newFileMode)
		}},
		{name: "create with parents", path: "sub/deeper/new.txt", use: func(loc tool.Loc) error {
			return loc.WriteFile([]byte("pwned"), newFileMode)
		}},
		{name: "read", path: "sub/in.txt", use: func(loc tool.Loc) error {
			_, err := loc.FS.ReadFile(loc.Name)
			return err
		}},
		{name: "stat for mode", path: "sub/in.txt", use: func(loc tool.Loc) error {
			if _, _, res := existingMode(loc); res != nil {
				return fmt.Errorf("%s", res.Output)
			}
			return nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorkdir(t)
			writeFiles(t, w.dir, map[string]string{"sub/in.txt": "inside"})
			writeFiles(t, w.outside, map[string]string{"in.txt": "outside copy"})
			loc, err := w.root.Locate(tt.path)
			if err != nil {
				t.Fatal(err)
			}
			sub := filepath.Join(w.dir, "sub")
			if err := os.Rename(sub, filepath.Join(w.dir, "moved")); err != nil {
				t.Fatal(err)
			}
			symlink(t, w.outside, sub)
			before := snapshotDir(t, w.outside)
			if err := tt.use(loc); err == nil {
				t.Errorf("%s through a swapped-in symlink succeeded", tt.name)
			}
			if diff := cmp.Diff(before, snapshotDir(t, w.outside)); diff != "" {
				t.Errorf("the directory outside changed (-before +after):\n%s", diff)
			}
		})
	}
}

func TestToolsInAllowedDir(t *testing.T) {
	w := newWorkdir(t, true)
	abs := func(p string) string { q, _ := json.Marshal(filepath.Join(w.outside, p)); return string(q) }
	tests := []struct {
		tl    tool.Tool
		input string
		want  string
	}{
		{Read{}, `{"path": ` + abs("secret.txt") + `}`, "     1\tsecret"},
		{Write{}, `{"path": ` + abs("new/file.txt") + `, "content": "hi"}`, "created " + filepath.Join(w.outside, "new", "file.txt")},
		{Edit{}, `{"path": ` + abs("secret.txt") + `, "old_string": "secret", "new_string": "public"}`, "edited " + filepath.Join(w.outside, "secret.txt")},
		{LS{}, `{"path": ` + abs("src") + `}`, "x.go"},
		{Glob{}, `{"pattern": "**/*.go", "path": ` + abs(".") + `}`, filepath.Join(w.outside, "src", "x.go")},
	}
	for _, tt := range tests {
		got := w.call(t, tt.tl, tt.input)
		check(t, tt.tl.Spec().Name, got, false, []string{tt.want})
	}
	if c := readFile(t, filepath.Join(w.outside, "secret.txt")); c != "public\n" {
		t.Errorf("edit in the allowed dir left %q", c)
	}
	if c := readFile(t, filepath.Join(w.outside, "new", "file.txt")); c != "hi" {
		t.Errorf("write in the allowed dir left %q", c)
	}
}

func TestNoRoot(t *testing.T) {
	for _, tl := range All() {
		if tl.Spec().Kind == tool.KindNetwork {
			continue // web_fetch touches no file
		}
		got := tl.Run(t.Context(), tool.Call{Input: json.RawMessage(`{"path": "a", "content": "", "old_string": "a", "new_string": "b", "pattern": "a", "command": "true"}`)})
		check(t, tl.Spec().Name, got, true, []string{"no workdir"})
	}
}
