package walk

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// tree is a workspace with nested ignore files of every kind.
var tree = map[string]string{
	".gitignore":            "node_modules/\n*.log\n/dist\n# a comment\n\n!keep.log\nbuild/\n",
	".git/info/exclude":     "secret.txt\n",
	".git/config":           "[core]\n",
	".ignore":               "scratch/\n",
	".env":                  "HIDDEN=1\n",
	".github/ci.yml":        "on: push\n",
	"main.go":               "package main\n",
	"keep.log":              "kept by a negation\n",
	"debug.log":             "ignored by *.log\n",
	"secret.txt":            "excluded by .git/info/exclude\n",
	"dist/app.js":           "ignored: /dist is anchored\n",
	"src/dist/ok.js":        "not ignored: /dist is anchored at the root\n",
	"node_modules/x/i.js":   "ignored\n",
	"scratch/notes.md":      "ignored by .ignore\n",
	"src/a.go":              "package src\n",
	"src/.gitignore":        "generated.go\n!important.log\n",
	"src/generated.go":      "ignored by the nested .gitignore\n",
	"src/important.log":     "re-included by the nested .gitignore\n",
	"src/deep/.gitignore":   "*.tmp\n",
	"src/deep/x.tmp":        "ignored two levels down\n",
	"src/deep/y.go":         "package deep\n",
	"src/deep/build/out.o":  "ignored: build/ matches at any depth\n",
	"other/generated.go":    "not ignored: the rule is src's\n",
	"other/node_modules.go": "a file, not the directory\n",
}

func writeTree(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func files(t *testing.T, fsys fs.FS, opts *Options) []string {
	t.Helper()
	var got []string
	for p, err := range Files(t.Context(), fsys, opts) {
		if err != nil {
			t.Fatalf("Files: %s: %v", p, err)
		}
		got = append(got, p)
	}
	return got
}

func TestFiles(t *testing.T) {
	fsys := os.DirFS(writeTree(t, tree))
	want := []string{
		"keep.log", "main.go",
		"other/generated.go", "other/node_modules.go",
		"src/a.go", "src/deep/y.go", "src/dist/ok.js", "src/important.log",
	}
	if diff := cmp.Diff(want, files(t, fsys, nil)); diff != "" {
		t.Errorf("Files (-want +got):\n%s", diff)
	}

	hidden := files(t, fsys, &Options{Hidden: true})
	for _, p := range []string{".env", ".github/ci.yml", ".gitignore", "src/.gitignore"} {
		if !slices.Contains(hidden, p) {
			t.Errorf("Files with Hidden misses %s: %v", p, hidden)
		}
	}
	for _, p := range hidden {
		if strings.HasPrefix(p, ".git/") {
			t.Errorf("Files with Hidden lists %s inside .git", p)
		}
	}

	all := files(t, fsys, &Options{NoIgnore: true})
	for _, p := range []string{"debug.log", "node_modules/x/i.js", "src/deep/x.tmp", "scratch/notes.md"} {
		if !slices.Contains(all, p) {
			t.Errorf("Files with NoIgnore misses %s", p)
		}
	}
}

// TestFilesAgreesWithGit checks the walk against git's own view of the same
// tree: the files git would track are exactly the files Files lists.
func TestFilesAgreesWithGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := writeTree(t, tree)
	for _, args := range [][]string{{"init", "-q"}, {"config", "user.email", "t@example.com"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	// git init rewrote .git: put the exclude list back.
	if err := os.WriteFile(filepath.Join(dir, ".git/info/exclude"), []byte(tree[".git/info/exclude"]), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("git", "-C", dir, "ls-files", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Fatal(err)
	}
	gitSees := strings.Fields(string(out))
	slices.Sort(gitSees)
	// git does not read .ignore files; drop what only .ignore excludes.
	got := files(t, os.DirFS(dir), &Options{Hidden: true})
	gitSees = slices.DeleteFunc(gitSees, func(p string) bool { return strings.HasPrefix(p, "scratch/") })
	if diff := cmp.Diff(gitSees, got); diff != "" {
		t.Errorf("git ls-files (-) vs Files (+):\n%s", diff)
	}
}

func TestWalkFromBelowTheRoot(t *testing.T) {
	fsys := os.DirFS(writeTree(t, tree))
	walked := func(start string) []string {
		var got []string
		err := Walk(t.Context(), fsys, start, nil, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() {
				got = append(got, p)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	// The root's and src's rules hold below src/deep.
	if diff := cmp.Diff([]string{"src/deep/y.go"}, walked("src/deep")); diff != "" {
		t.Errorf("walk of src/deep (-want +got):\n%s", diff)
	}
	// An ignored directory named on purpose is walked.
	if diff := cmp.Diff([]string{"node_modules/x/i.js"}, walked("node_modules")); diff != "" {
		t.Errorf("walk of node_modules (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"node_modules/x/i.js"}, walked("node_modules/x")); diff != "" {
		t.Errorf("walk of node_modules/x (-want +got):\n%s", diff)
	}
}

func TestWalkCancelled(t *testing.T) {
	fsys := os.DirFS(writeTree(t, tree))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var n int
	for _, err := range Files(ctx, fsys, nil) {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Files after cancel yielded %v, want context.Canceled", err)
		}
		n++
	}
	if n != 1 {
		t.Errorf("Files after cancel yielded %d values, want 1 (the error)", n)
	}
}

func TestFilesStopsEarly(t *testing.T) {
	fsys := os.DirFS(writeTree(t, tree))
	var got []string
	for p, err := range Files(t.Context(), fsys, nil) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, p)
		if len(got) == 2 {
			break
		}
	}
	if diff := cmp.Diff([]string{"keep.log", "main.go"}, got); diff != "" {
		t.Errorf("first two files (-want +got):\n%s", diff)
	}
}

func TestMissingStart(t *testing.T) {
	fsys := os.DirFS(t.TempDir())
	var n int
	for _, err := range Files(t.Context(), fsys, nil) {
		n++
		if err != nil {
			t.Errorf("Files of an empty tree: %v", err)
		}
	}
	if n != 0 {
		t.Errorf("Files of an empty tree yielded %d values", n)
	}
	err := Walk(t.Context(), fsys, "nope", nil, func(p string, d fs.DirEntry, err error) error { return err })
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Walk of a missing start = %v, want fs.ErrNotExist", err)
	}
}
