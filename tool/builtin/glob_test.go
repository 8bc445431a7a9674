package builtin

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

func TestGlobMayContain(t *testing.T) {
	tests := []struct {
		pattern, dir string
		want         bool
	}{
		{"src/*.go", "src", true},
		{"src/*.go", "lib", false},
		{"src/*.go", "src/sub", false},
		{"**/*.go", "any/depth", true},
		{"a/**/z", "a/b/c", true},
		{"a/*/z", "a/b", true},
		{"a/*/z", "b", false},
		{"*.go", "sub", false},
		{"{a,b}/z", "c", true}, // groups may hold slashes: not pruned
	}
	for _, tt := range tests {
		if got := mayContain(tt.pattern, tt.dir); got != tt.want {
			t.Errorf("glob %q mayContain %q = %v, want %v", tt.pattern, tt.dir, got, tt.want)
		}
	}
}

func TestCompilePatternErrors(t *testing.T) {
	tests := []struct{ pattern, want string }{
		{"", "empty glob pattern"},
		{"[", "bad glob pattern"},
		{"a/[b/c", "bad glob pattern"},
		{"a{b", "bad glob pattern"},
	}
	for _, tt := range tests {
		if err := compilePattern(tt.pattern); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("compilePattern(%q) error = %v, want %q", tt.pattern, err, tt.want)
		}
	}
}

func TestGlob(t *testing.T) {
	w := newWorkdir(t)
	writeFiles(t, w.dir, map[string]string{
		"main.go": "", "go.mod": "", "a.txt": "",
		"cmd/tool/main.go": "", "cmd/tool/main_test.go": "",
		"internal/x/x.go": "", "internal/x/x.txt": "",
		".git/config": "", ".git/hooks/pre.go": "",
		".github/ci.yml": "",
		"many/":          "",
	})
	symlink(t, w.outside, filepath.Join(w.dir, "outlink"))
	symlink(t, "internal", filepath.Join(w.dir, "inlink"))
	for i := range globMaxResults + 5 {
		writeFiles(t, w.dir, map[string]string{fmt.Sprintf("many/f%04d.log", i): ""})
	}
	sameTime(t, w.dir)
	tests := []struct {
		name, input string
		wantErr     bool
		exact       string
		want        []string
		notWant     []string
	}{
		{name: "recursive", input: `{"pattern": "**/*.go"}`, exact: "cmd/tool/main.go\ncmd/tool/main_test.go\ninternal/x/x.go\nmain.go"},
		{name: "top level", input: `{"pattern": "*.{go,mod}"}`, exact: "go.mod\nmain.go"},
		{name: "under path", input: `{"pattern": "*.go", "path": "cmd/tool"}`, exact: "cmd/tool/main.go\ncmd/tool/main_test.go"},
		{name: "literal prefix", input: `{"pattern": "internal/**/*"}`, exact: "internal/x/\ninternal/x/x.go\ninternal/x/x.txt"},
		{name: "directories", input: `{"pattern": "cmd/*"}`, exact: "cmd/tool/"},
		{name: "hidden skipped", input: `{"pattern": "**/*.yml"}`, exact: `no files match "**/*.yml" in .`},
		{name: "hidden asked for, but not .git", input: `{"pattern": "**/*", "hidden": true}`, want: []string{".github/ci.yml", ".github/\n"}, notWant: []string{".git/"}},
		{name: "hidden directory named", input: `{"pattern": ".github/*.yml"}`, exact: ".github/ci.yml"},
		{name: "links listed, not followed", input: `{"pattern": "*link*"}`, exact: "inlink\noutlink"},
		{name: "absolute pattern", input: fmt.Sprintf(`{"pattern": %q}`, filepath.Join(w.dir, "cmd", "**", "*_test.go")), exact: "cmd/tool/main_test.go"},
		{name: "no match", input: `{"pattern": "**/*.rs"}`, exact: `no files match "**/*.rs" in .`},
		{name: "no match below a missing prefix", input: `{"pattern": "nope/*.go"}`, want: []string{"no files match", "nope does not exist"}},
		{name: "cap", input: `{"pattern": "many/*.log"}`, want: []string{"many/f0000.log", "[showing the 1000 most recently modified of 1005 matches; narrow the pattern or the path]"}, notWant: []string{"f1004"}},
		{name: "bad pattern", input: `{"pattern": "[x"}`, wantErr: true, want: []string{"bad glob pattern"}},
		{name: "missing path", input: `{"pattern": "*", "path": "nope"}`, wantErr: true, want: []string{"directory nope does not exist"}},
		{name: "file as path", input: `{"pattern": "*", "path": "main.go"}`, wantErr: true, want: []string{"is a file, not a directory"}},
		{name: "escape", input: `{"pattern": "../outside/*"}`, wantErr: true, want: []string{"outside the workdir"}},
		{name: "escape by path", input: `{"pattern": "*", "path": "outlink"}`, wantErr: true, want: []string{"through a symlink"}},
		{name: "empty pattern", input: `{}`, wantErr: true, want: []string{"empty glob pattern"}},
	}
	for _, tt := range tests {
		got := w.call(t, Glob{}, tt.input)
		check(t, tt.name, got, tt.wantErr, tt.want, tt.notWant...)
		if tt.exact != "" && got.Output != tt.exact {
			t.Errorf("%s: output\n%s\nwant\n%s", tt.name, clipOutput(got.Output), tt.exact)
		}
	}
}

func TestGlobCancelled(t *testing.T) {
	w := newWorkdir(t)
	writeFiles(t, w.dir, map[string]string{"a/b.go": ""})
	ctx, cancel := contextWithCancel(t)
	cancel()
	got := Glob{}.Run(ctx, callFor(w, `{"pattern": "**"}`))
	check(t, "cancelled", got, true, []string{"cancelled"})
}
