package projectctx

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func write(t testing.TB, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// tree makes a git repository with instruction files at several levels and
// returns its root, the workdir inside it and the user file.
func tree(t testing.TB) (root, work, user string) {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root = filepath.Join(base, "repo")
	work = filepath.Join(root, "svc", "api")
	user = filepath.Join(base, "config", "lite-agent", "AGENTS.md")
	write(t, user, "MARKER-USER\n")
	write(t, filepath.Join(root, "AGENTS.md"), "MARKER-ROOT\n")
	write(t, filepath.Join(root, "svc", "CLAUDE.md"), "MARKER-CLAUDE\n")
	write(t, filepath.Join(work, "AGENTS.md"), "MARKER-NEAR\n")
	write(t, filepath.Join(work, "CLAUDE.md"), "MARKER-SHADOWED\n")
	write(t, filepath.Join(base, "AGENTS.md"), "MARKER-OUTSIDE\n")
	cmd := exec.Command("git", "init", "-q", "-b", "trunk", root)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	return root, work, user
}

func TestBuildOrderAndEnvironment(t *testing.T) {
	root, work, user := tree(t)
	day := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	c, err := Build(t.Context(), work, &Options{UserFile: user, Now: func() time.Time { return day }})
	if err != nil {
		t.Fatal(err)
	}
	order := []string{"MARKER-USER", "MARKER-ROOT", "MARKER-CLAUDE", "MARKER-NEAR"}
	last := -1
	for _, m := range order {
		i := strings.Index(c.Text, m)
		if i < 0 || i < last {
			t.Fatalf("%s missing or out of order in:\n%s", m, c.Text)
		}
		last = i
	}
	for _, m := range []string{"MARKER-SHADOWED", "MARKER-OUTSIDE"} {
		if strings.Contains(c.Text, m) {
			t.Fatalf("%s should not be read (a CLAUDE.md beside an AGENTS.md; a file above the repository):\n%s", m, c.Text)
		}
	}
	for _, want := range []string{"Working directory: " + work, "Today's date: 2026-12-01", "Git repository: yes, rooted at " + root, "Git branch: trunk", "Git status"} {
		if !strings.Contains(c.Text, want) {
			t.Fatalf("environment lacks %q:\n%s", want, c.Text)
		}
	}
	var paths []string
	for _, f := range c.Files {
		paths = append(paths, f.Path+" "+f.Scope)
	}
	want := []string{user + " user", filepath.Join(root, "AGENTS.md") + " project", filepath.Join(root, "svc", "CLAUDE.md") + " project", filepath.Join(work, "AGENTS.md") + " project"}
	if strings.Join(paths, "\n") != strings.Join(want, "\n") {
		t.Fatalf("files:\n%s\nwant:\n%s", strings.Join(paths, "\n"), strings.Join(want, "\n"))
	}
}

func TestBuildOutsideARepository(t *testing.T) {
	base, _ := filepath.EvalSymlinks(t.TempDir())
	work := filepath.Join(base, "w")
	write(t, filepath.Join(base, "AGENTS.md"), "MARKER-PARENT\n")
	write(t, filepath.Join(work, "CLAUDE.md"), "MARKER-HERE\n")
	c, err := Build(t.Context(), work, &Options{UserFile: "-"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(c.Text, "Git repository: no") || !strings.Contains(c.Text, "MARKER-HERE") || strings.Contains(c.Text, "MARKER-PARENT") {
		t.Fatalf("outside a repository only the workdir's file is read:\n%s", c.Text)
	}
}

// TestBuildCutsLargeFile: a 1 MiB AGENTS.md is cut at the cap, on a
// character boundary, with a note.
func TestBuildCutsLargeFile(t *testing.T) {
	base, _ := filepath.EvalSymlinks(t.TempDir())
	big := "MARKER-START\n" + strings.Repeat("é", 1<<19) // 1 MiB + the marker
	write(t, filepath.Join(base, "AGENTS.md"), big)
	c, err := Build(t.Context(), base, &Options{UserFile: "-", MaxFileBytes: 1001})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Files) != 1 || !c.Files[0].Cut || c.Files[0].Bytes != int64(len(big)) {
		t.Fatalf("files %+v; want one, cut, with its full size", c.Files)
	}
	if len(c.Text) > 4000 || !strings.Contains(c.Text, "MARKER-START") || !strings.Contains(c.Text, "only its first 1001 bytes are shown") {
		t.Fatalf("text of %d bytes, want the start and a note:\n%.600s", len(c.Text), c.Text)
	}
	if strings.ContainsRune(c.Text, '\uFFFD') {
		t.Fatal("the cut split a character")
	}
	d, _ := Build(t.Context(), base, &Options{UserFile: "-"})
	if len(d.Text) > DefaultMaxFileBytes+2000 {
		t.Fatalf("default cap: %d bytes of context", len(d.Text))
	}
}

func TestBuildCancelled(t *testing.T) {
	_, work, _ := tree(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := Build(ctx, work, nil); err == nil {
		t.Fatal("a cancelled context gave no error")
	}
}
