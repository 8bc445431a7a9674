package builtin

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// grepVariant is one way grep searches a directory.
type grepVariant struct {
	name string
	tool Grep
	rg   bool
}

// greps returns the Go search and, when rg is installed, the ripgrep one.
func greps(t testing.TB) []grepVariant {
	t.Helper()
	vs := []grepVariant{{name: "go", tool: Grep{NoRipgrep: true}}}
	if _, err := exec.LookPath("rg"); err == nil {
		vs = append(vs, grepVariant{name: "rg", tool: Grep{}, rg: true})
	} else {
		t.Log("rg is not on PATH: only the Go search is tested")
	}
	return vs
}

// sameTime gives every file below dir one modification time, so results
// sorted newest first come out in name order.
func sameTime(t testing.TB, dir string) {
	t.Helper()
	stamp := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink != 0 {
			return err
		}
		return os.Chtimes(p, stamp, stamp)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// touch sets p's modification time to age before a fixed instant.
func touch(t testing.TB, p string, age time.Duration) {
	t.Helper()
	stamp := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC).Add(-age)
	if err := os.Chtimes(p, stamp, stamp); err != nil {
		t.Fatal(err)
	}
}

// ignoreTree is a workdir whose .gitignore, nested .gitignore, .ignore and
// .git/info/exclude files hide most of what holds "needle".
func ignoreTree(t testing.TB) *workdir {
	t.Helper()
	w := newWorkdir(t)
	writeFiles(t, w.dir, map[string]string{
		".gitignore":                 "node_modules/\ndist/\n*.log\n!keep.log\n",
		".ignore":                    "scratch/\n",
		".git/info/exclude":          "private.go\n",
		".env":                       "needle hidden\n",
		"main.go":                    "needle main\n",
		"keep.log":                   "needle kept by a negation\n",
		"debug.log":                  "needle ignored\n",
		"private.go":                 "needle excluded\n",
		"dist/app.js":                "needle built\n",
		"node_modules/pkg/index.js":  "needle dependency\n",
		"scratch/a.go":               "needle scratch\n",
		"src/.gitignore":             "gen/\n",
		"src/app.go":                 "needle app\n",
		"src/gen/code.go":            "needle generated\n",
		"src/lib/.gitignore":         "*.tmp\n!wanted.tmp\n",
		"src/lib/x.tmp":              "needle temporary\n",
		"src/lib/wanted.tmp":         "needle wanted\n",
		"src/lib/lib.go":             "needle lib\n",
		"other/gen/code.go":          "needle not src's gen\n",
		"other/node_modules_note.go": "needle a file, not the directory\n",
	})
	sameTime(t, w.dir)
	return w
}

func TestSearchHonoursIgnoreFiles(t *testing.T) {
	w := ignoreTree(t)
	visible := "keep.log:1: needle kept by a negation\nmain.go:1: needle main\nother/gen/code.go:1: needle not src's gen\n" +
		"other/node_modules_note.go:1: needle a file, not the directory\nsrc/app.go:1: needle app\n" +
		"src/lib/lib.go:1: needle lib\nsrc/lib/wanted.tmp:1: needle wanted"
	tests := []struct{ name, input, want string }{
		{"ignore files honoured", `{"pattern": "needle"}`, visible},
		{"from a subdirectory, the root's rules hold", `{"pattern": "needle", "path": "src/lib"}`, "src/lib/lib.go:1: needle lib\nsrc/lib/wanted.tmp:1: needle wanted"},
		{"an ignored directory named on purpose", `{"pattern": "needle", "path": "node_modules"}`, "node_modules/pkg/index.js:1: needle dependency"},
		{"hidden", `{"pattern": "hidden", "hidden": true}`, ".env:1: needle hidden"},
		{"no_ignore", `{"pattern": "needle (ignored|built|dependency|generated|temporary|scratch|excluded)", "no_ignore": true}`,
			"debug.log:1: needle ignored\ndist/app.js:1: needle built\nnode_modules/pkg/index.js:1: needle dependency\nprivate.go:1: needle excluded\n" +
				"scratch/a.go:1: needle scratch\nsrc/gen/code.go:1: needle generated\nsrc/lib/x.tmp:1: needle temporary"},
		{"include with ignore files", `{"pattern": "needle", "include": "*.tmp"}`, "src/lib/wanted.tmp:1: needle wanted"},
	}
	for _, g := range greps(t) {
		for _, tt := range tests {
			if got := w.call(t, g.tool, tt.input); got.IsError || got.Output != tt.want {
				t.Errorf("%s: %s: grep %s =\n%s\nwant\n%s", g.name, tt.name, tt.input, got.Output, tt.want)
			}
		}
	}
	globs := []struct{ name, input, want string }{
		{"ignore files honoured", `{"pattern": "**/*.go"}`, "main.go\nother/gen/code.go\nother/node_modules_note.go\nsrc/app.go\nsrc/lib/lib.go"},
		{"negations", `{"pattern": "**/*.{log,tmp}"}`, "keep.log\nsrc/lib/wanted.tmp"},
		{"an ignored directory named on purpose", `{"pattern": "node_modules/**/*.js"}`, "node_modules/pkg/index.js"},
		{"hidden", `{"pattern": "*", "hidden": true}`, ".env\n.gitignore\n.ignore\nkeep.log\nmain.go\nother/\nsrc/"},
	}
	for _, tt := range globs {
		if got := w.call(t, Glob{}, tt.input); got.IsError || got.Output != tt.want {
			t.Errorf("glob: %s: %s =\n%s\nwant\n%s", tt.name, tt.input, got.Output, tt.want)
		}
	}
}

func TestSearchNewestFirst(t *testing.T) {
	w := newWorkdir(t)
	writeFiles(t, w.dir, map[string]string{"a.go": "x\nx\n", "b.go": "x\n", "sub/c.go": "x\n"})
	touch(t, filepath.Join(w.dir, "a.go"), 3*time.Hour)
	touch(t, filepath.Join(w.dir, "b.go"), time.Hour)
	touch(t, filepath.Join(w.dir, "sub/c.go"), 2*time.Hour)
	for _, g := range greps(t) {
		want := "b.go:1: x\nsub/c.go:1: x\na.go:1: x\na.go:2: x"
		if got := w.call(t, g.tool, `{"pattern": "x"}`); got.Output != want {
			t.Errorf("%s: grep =\n%s\nwant (newest file first, lines in order)\n%s", g.name, got.Output, want)
		}
	}
	if got, want := w.call(t, Glob{}, `{"pattern": "**/*.go"}`).Output, "b.go\nsub/c.go\na.go"; got != want {
		t.Errorf("glob =\n%s\nwant (newest first)\n%s", got, want)
	}
}

func TestGrepRipgrepRejectsWhatGoAccepts(t *testing.T) {
	if _, err := exec.LookPath("rg"); err != nil {
		t.Skip("rg is not on PATH")
	}
	w := newWorkdir(t)
	writeFiles(t, w.dir, map[string]string{"a.txt": "a.b\n"})
	// \Q…\E (literal text) is RE2 syntax that Rust's regex rejects: grep
	// falls back to the Go search and still answers.
	got := w.call(t, Grep{}, `{"pattern": "\\Qa.b\\E"}`)
	if got.IsError || got.Output != "a.txt:1: a.b" {
		t.Errorf("grep with a pattern only Go accepts = %q (error %v)", got.Output, got.IsError)
	}
}
