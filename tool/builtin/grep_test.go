package builtin

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

func TestGrep(t *testing.T) {
	w := newWorkdir(t)
	writeFiles(t, w.dir, map[string]string{
		"main.go":          "package main\n\nfunc main() {\n\tTODO()\n}\n",
		"lib/a.go":         "package lib\n// todo: fix\n",
		"lib/b.ts":         "// TODO ts\n",
		"lib/deep/c.tsx":   "// TODO tsx\n",
		"notes.txt":        "nothing\n",
		"image.bin":        "TODO\x00\x01",
		".git/COMMIT":      "TODO in git\n",
		"wide.txt":         "TODO " + strings.Repeat("w", 1000) + "\n",
		"crlf.txt":         "TODO crlf\r\n",
		"many/m.txt":       strings.Repeat("hit\n", grepMaxMatches+10),
		"nested/x/y/z.txt": "TODO nested\n",
	})
	symlink(t, w.outside, filepath.Join(w.dir, "outlink"))
	symlink(t, filepath.Join(w.outside, "secret.txt"), filepath.Join(w.dir, "secret-link"))
	sameTime(t, w.dir)
	tests := []struct {
		name, input string
		wantErr     bool
		exact       string
		rgExact     string // where ripgrep's output differs
		want        []string
		notWant     []string
	}{
		{name: "case sensitive", input: `{"pattern": "TODO", "path": "lib"}`, exact: "lib/b.ts:1: // TODO ts\nlib/deep/c.tsx:1: // TODO tsx"},
		{name: "case insensitive", input: `{"pattern": "todo", "path": "lib", "case_insensitive": true}`, exact: "lib/a.go:2: // todo: fix\nlib/b.ts:1: // TODO ts\nlib/deep/c.tsx:1: // TODO tsx"},
		{name: "include by name", input: `{"pattern": "TODO", "include": "*.{go,tsx}"}`, exact: "lib/deep/c.tsx:1: // TODO tsx\nmain.go:4: \tTODO()"},
		{name: "include by path", input: `{"pattern": "TODO", "include": "lib/**/*.tsx"}`, exact: "lib/deep/c.tsx:1: // TODO tsx"},
		{name: "single file", input: `{"pattern": "func \\w+\\(", "path": "main.go"}`, exact: "main.go:3: func main() {"},
		{name: "regexp", input: `{"pattern": "^package (main|lib)$"}`, exact: "lib/a.go:1: package lib\nmain.go:1: package main"},
		{name: "crlf stripped", input: `{"pattern": "crlf$"}`, exact: "crlf.txt:1: TODO crlf"},
		{name: "skips binary, .git and links", input: `{"pattern": "TODO|secret|outside"}`,
			want:    []string{"main.go:4:", "nested/x/y/z.txt:1: TODO nested"},
			notWant: []string{"image.bin:", ".git", "secret", "outside"}},
		{name: "long line cut", input: `{"pattern": "TODO w", "path": "wide.txt"}`, want: []string{"wide.txt:1: TODO www", "w …"}, notWant: []string{strings.Repeat("w", 400)}},
		{name: "match cap", input: `{"pattern": "hit", "path": "many"}`, want: []string{fmt.Sprintf("many/m.txt:%d: hit", grepMaxMatches), "[output stopped after 500 matches; narrow"}, notWant: []string{fmt.Sprintf("m.txt:%d:", grepMaxMatches+1)}},
		{name: "only in binary", input: `{"pattern": "\\x01"}`, exact: "no matches for \"\\\\x01\" in .\n[binary files skipped: 1]",
			rgExact: "no matches for \"\\\\x01\" in ."}, // rg does not count the binary files it skips
		{name: "no match", input: `{"pattern": "absent", "include": "*.go"}`, exact: `no matches for "absent" in . (files matching "*.go")`},
		{name: "bad regexp", input: `{"pattern": "(?<=x)y"}`, wantErr: true, want: []string{"invalid regular expression", "lookaround"}},
		{name: "unbalanced", input: `{"pattern": "foo("}`, wantErr: true, want: []string{"missing closing )", "need a backslash"}},
		{name: "bad include", input: `{"pattern": "x", "include": "[a"}`, wantErr: true, want: []string{"include: bad glob pattern"}},
		{name: "no pattern", input: `{}`, wantErr: true, want: []string{"pattern is required"}},
		{name: "missing path", input: `{"pattern": "x", "path": "nope"}`, wantErr: true, want: []string{"nope does not exist"}},
		{name: "escape", input: `{"pattern": "secret", "path": "../outside"}`, wantErr: true, want: []string{"outside the workdir"}},
		{name: "escape by link", input: `{"pattern": "secret", "path": "secret-link"}`, wantErr: true, want: []string{"through a symlink"}},
	}
	for _, g := range greps(t) {
		for _, tt := range tests {
			name := g.name + ": " + tt.name
			got := w.call(t, g.tool, tt.input)
			check(t, name, got, tt.wantErr, tt.want, tt.notWant...)
			exact := tt.exact
			if g.rg && tt.rgExact != "" {
				exact = tt.rgExact
			}
			if exact != "" && got.Output != exact {
				t.Errorf("%s: output\n%s\nwant\n%s", name, clipOutput(got.Output), exact)
			}
		}
	}
}

func TestGrepAllowedDir(t *testing.T) {
	w := newWorkdir(t, true)
	got := w.call(t, Grep{}, fmt.Sprintf(`{"pattern": "secret", "path": %q}`, w.outside))
	want := filepath.Join(w.outside, "secret.txt") + ":1: secret"
	if got.IsError || got.Output != want {
		t.Errorf("grep in an allowed dir = %q (error %v), want %q", got.Output, got.IsError, want)
	}
}
