package builtin

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

func TestGlobMatch(t *testing.T) {
	tests := []struct {
		pattern, path string
		want          bool
	}{
		{"*.go", "main.go", true},
		{"*.go", "cmd/main.go", false},
		{"**/*.go", "main.go", true},
		{"**/*.go", "a/b/c/main.go", true},
		{"**/*.go", "a/b/c/main.txt", false},
		{"src/**/x.ts", "src/x.ts", true},
		{"src/**/x.ts", "src/a/b/x.ts", true},
		{"src/**/x.ts", "lib/a/x.ts", false},
		{"**", "anything/at/all", true},
		{"a/**/b/**/c", "a/b/c", true},
		{"a/**/b/**/c", "a/x/b/y/z/c", true},
		{"a/**/b/**/c", "a/x/y/c", false},
		{"*.{ts,tsx}", "app.tsx", true},
		{"*.{ts,tsx}", "app.js", false},
		{"{cmd,internal}/**/*.go", "internal/x/y.go", true},
		{"{a,{b,c}}.txt", "c.txt", true},
		{"file?.txt", "file1.txt", true},
		{"[a-c]*", "banana", true},
		{"[a-c]*", "date", false},
		{"./docs/*.md", "docs/readme.md", true},
		{"a/*/c", "a/b/c", true},
		{"a/*/c", "a/b/b/c", false},
		{`\*.go`, "*.go", true},
		{"{unclosed", "{unclosed", true},
	}
	for _, tt := range tests {
		g, err := compileGlob(tt.pattern)
		if err != nil {
			t.Errorf("compileGlob(%q): %v", tt.pattern, err)
			continue
		}
		if got := g.match(tt.path); got != tt.want {
			t.Errorf("glob %q match %q = %v, want %v", tt.pattern, tt.path, got, tt.want)
		}
	}
}

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
	}
	for _, tt := range tests {
		g, err := compileGlob(tt.pattern)
		if err != nil {
			t.Fatal(err)
		}
		if got := g.mayContain(tt.dir); got != tt.want {
			t.Errorf("glob %q mayContain %q = %v, want %v", tt.pattern, tt.dir, got, tt.want)
		}
	}
}

func TestCompileGlobErrors(t *testing.T) {
	tests := []struct{ pattern, want string }{
		{"", "empty glob pattern"},
		{"[", "malformed"},
		{"a/[b/c", "malformed"},
		{strings.Repeat("{a,b}", 10), "more than 256 alternatives"},
	}
	for _, tt := range tests {
		if _, err := compileGlob(tt.pattern); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("compileGlob(%q) error = %v, want %q", tt.pattern, err, tt.want)
		}
	}
}

func TestLiteralPrefix(t *testing.T) {
	tests := []struct{ in, prefix, rest string }{
		{"src/pkg/**/*.go", "src/pkg", "**/*.go"},
		{"*.go", "", "*.go"},
		{"a/b/c.go", "a/b", "c.go"},
		{"/abs/dir/*.go", "/abs/dir", "*.go"},
		{"a/{b,c}/d", "a", "{b,c}/d"},
	}
	for _, tt := range tests {
		if p, r := literalPrefix(tt.in); p != tt.prefix || r != tt.rest {
			t.Errorf("literalPrefix(%q) = %q, %q; want %q, %q", tt.in, p, r, tt.prefix, tt.rest)
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
		{name: "dotdirs but not .git", input: `{"pattern": "**/*.yml"}`, exact: ".github/ci.yml"},
		{name: "links listed, not followed", input: `{"pattern": "*link*"}`, exact: "inlink\noutlink"},
		{name: "absolute pattern", input: fmt.Sprintf(`{"pattern": %q}`, filepath.Join(w.dir, "cmd", "**", "*_test.go")), exact: "cmd/tool/main_test.go"},
		{name: "no match", input: `{"pattern": "**/*.rs"}`, exact: `no files match "**/*.rs" in .`},
		{name: "no match below a missing prefix", input: `{"pattern": "nope/*.go"}`, want: []string{"no files match", "nope does not exist"}},
		{name: "cap", input: `{"pattern": "many/*.log"}`, want: []string{"many/f0000.log", "[showing 1000 of 1005 matches; narrow the pattern or the path]"}, notWant: []string{"f1004"}},
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
