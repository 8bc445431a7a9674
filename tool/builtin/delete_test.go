package builtin

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/tool"
)

func TestDelete(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "f.txt"), []byte("x"), 0o644)
	os.Mkdir(filepath.Join(dir, "d"), 0o755)
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o644)
	os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dir, "link"))
	root, err := tool.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	tests := []struct {
		path    string
		isErr   bool
		message string
	}{
		{"f.txt", false, "deleted f.txt"},
		{"f.txt", true, "does not exist"},
		{"d", true, "is a directory"},
		{"../x", true, "outside the workdir"},
		{"link", true, "outside"},
		{"", true, "path is required"},
	}
	for _, tt := range tests {
		in, _ := json.Marshal(map[string]string{"path": tt.path})
		res := Delete{}.Run(t.Context(), tool.Call{ID: "c", Input: in, Root: root})
		if res.IsError != tt.isErr || !strings.Contains(res.Output, tt.message) {
			t.Errorf("delete %q = %+v, want error=%v containing %q", tt.path, res, tt.isErr, tt.message)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "secret")); err != nil {
		t.Fatal("a file outside the workdir was deleted")
	}
	paths, err := Delete{}.Paths(root, json.RawMessage(`{"path":"./sub/../f.txt"}`))
	if err != nil || len(paths) != 1 || paths[0] != "f.txt" {
		t.Fatalf("Paths = %v, %v", paths, err)
	}
}
