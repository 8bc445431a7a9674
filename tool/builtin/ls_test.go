package builtin

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

func TestLS(t *testing.T) {
	w := newWorkdir(t)
	writeFiles(t, w.dir, map[string]string{
		"b.txt": strings.Repeat("x", 2048), "a.go": "abc", "sub/x": "", "empty/": "",
	})
	symlink(t, "a.go", filepath.Join(w.dir, "link"))
	symlink(t, w.outside, filepath.Join(w.dir, "outlink"))
	writeFiles(t, w.dir, map[string]string{"big/": ""})
	for i := range lsMaxEntries + 3 {
		writeFiles(t, w.dir, map[string]string{fmt.Sprintf("big/f%04d", i): ""})
	}
	tests := []struct {
		name, input string
		wantErr     bool
		exact       string
		want        []string
		notWant     []string
	}{
		{name: "workdir", input: `{}`, exact: strings.Join([]string{
			"./ (7 entries)",
			"      3  a.go",
			"   2.0K  b.txt",
			"         big/",
			"         empty/",
			"         link -> a.go",
			"         outlink -> " + w.outside,
			"         sub/",
		}, "\n")},
		{name: "subdir", input: `{"path": "sub"}`, exact: "sub/ (1 entry)\n      0  x"},
		{name: "empty", input: `{"path": "empty/"}`, exact: "empty/ (0 entries)\n(empty)"},
		{name: "cap", input: `{"path": "big"}`, want: []string{"big/ (1003 entries)", "f0999", "[showing 1000 of 1003 entries"}, notWant: []string{"f1000"}},
		{name: "file", input: `{"path": "a.go"}`, wantErr: true, want: []string{"a.go is a file", "use read"}},
		{name: "missing", input: `{"path": "nope"}`, wantErr: true, want: []string{"nope does not exist"}},
		{name: "escape", input: `{"path": ".."}`, wantErr: true, want: []string{"outside the workdir"}},
		{name: "escape by link", input: `{"path": "outlink"}`, wantErr: true, want: []string{"through a symlink"}},
	}
	for _, tt := range tests {
		got := w.call(t, LS{}, tt.input)
		check(t, tt.name, got, tt.wantErr, tt.want, tt.notWant...)
		if tt.exact != "" && got.Output != tt.exact {
			t.Errorf("%s: output\n%s\nwant\n%s", tt.name, clipOutput(got.Output), tt.exact)
		}
	}
}
