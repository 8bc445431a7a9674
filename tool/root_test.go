package tool

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// layout is a workdir and a directory outside it, both canonical.
type layout struct {
	work, outside string
}

func newLayout(t testing.TB) layout {
	t.Helper()
	base, err := Canonical(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	l := layout{work: filepath.Join(base, "work"), outside: filepath.Join(base, "outside")}
	for _, d := range []string{l.work, l.outside, filepath.Join(l.work, "sub")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mustWrite(t, filepath.Join(l.work, "sub", "in.txt"), "inside")
	mustWrite(t, filepath.Join(l.outside, "secret.txt"), "secret")
	return l
}

func mustWrite(t testing.TB, p, content string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustSymlink(t testing.TB, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func openRoot(t testing.TB, dir string, allow ...string) *Root {
	t.Helper()
	r, err := OpenRoot(dir, allow...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func TestRel(t *testing.T) {
	l := newLayout(t)
	w := l.work
	mustSymlink(t, l.outside, filepath.Join(w, "out-dir"))
	mustSymlink(t, filepath.Join(l.outside, "secret.txt"), filepath.Join(w, "out-file"))
	mustSymlink(t, filepath.Join(l.outside, "missing.txt"), filepath.Join(w, "out-dangling"))
	mustSymlink(t, "../outside/secret.txt", filepath.Join(w, "out-relative"))
	mustSymlink(t, "sub/in.txt", filepath.Join(w, "in-relative"))
	mustSymlink(t, filepath.Join(w, "sub"), filepath.Join(w, "in-absolute"))
	mustSymlink(t, "loop", filepath.Join(w, "loop"))
	mustSymlink(t, w, filepath.Join(l.outside, "work-alias"))
	r := openRoot(t, w)

	tests := []struct {
		in      string
		want    string
		wantErr string // substring; "" means success
	}{
		{in: "a.txt", want: "a.txt"},
		{in: "./sub/../sub/in.txt", want: "sub/in.txt"},
		{in: "sub/new/deeper.txt", want: "sub/new/deeper.txt"},
		{in: ".", want: "."},
		{in: w, want: "."},
		{in: filepath.Join(w, "sub", "in.txt"), want: "sub/in.txt"},
		{in: "in-relative", want: "in-relative"},
		{in: "in-absolute/in.txt", want: "in-absolute/in.txt"},
		{in: filepath.Join(l.outside, "work-alias", "sub", "in.txt"), want: "sub/in.txt"},
		{in: "", wantErr: "empty path"},
		{in: "  ", wantErr: "empty path"},
		{in: "a\x00b", wantErr: "NUL"},
		{in: "..", wantErr: "outside the workdir"},
		{in: "../outside/secret.txt", wantErr: "outside the workdir"},
		{in: "sub/../../outside", wantErr: "outside the workdir"},
		{in: "/etc/passwd", wantErr: "outside the workdir"},
		{in: filepath.Join(l.outside, "secret.txt"), wantErr: "outside the workdir"},
		{in: "out-dir/secret.txt", wantErr: "through a symlink"},
		{in: "out-dir/new.txt", wantErr: "through a symlink"},
		{in: "out-file", wantErr: "through a symlink"},
		{in: "out-dangling", wantErr: "through a symlink"},
		{in: "out-relative", wantErr: "through a symlink"},
		{in: "loop", wantErr: "too many levels"},
	}
	for _, tt := range tests {
		got, err := r.Rel(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Rel(%q) = %q, %v; want error containing %q", tt.in, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Rel(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestLocateResolvesLinksInside(t *testing.T) {
	l := newLayout(t)
	// os.Root refuses absolute links even when they stay inside; Locate
	// hands it the resolved name so such links still work.
	mustSymlink(t, filepath.Join(l.work, "sub"), filepath.Join(l.work, "abs-link"))
	r := openRoot(t, l.work)
	loc, err := r.Locate("abs-link/in.txt")
	if err != nil {
		t.Fatal(err)
	}
	if loc.Path != "abs-link/in.txt" || loc.Name != filepath.Join("sub", "in.txt") || loc.FS != r.FS() {
		t.Fatalf("Locate = %+v", loc)
	}
	got, err := loc.FS.ReadFile(loc.Name)
	if err != nil || string(got) != "inside" {
		t.Fatalf("ReadFile = %q, %v", got, err)
	}
}

func TestAllowedDirectories(t *testing.T) {
	l := newLayout(t)
	mustSymlink(t, l.outside, filepath.Join(l.work, "to-allowed"))
	r := openRoot(t, l.work, l.outside)

	abs := filepath.Join(l.outside, "secret.txt")
	rel, err := r.Rel(abs)
	if err != nil || rel != abs {
		t.Fatalf("Rel(%q) = %q, %v; want it back absolute", abs, rel, err)
	}
	if r.Abs(rel) != abs {
		t.Fatalf("Abs(%q) = %q", rel, r.Abs(rel))
	}

	for _, p := range []string{abs, "to-allowed/secret.txt"} {
		loc, err := r.Locate(p)
		if err != nil {
			t.Fatalf("Locate(%q): %v", p, err)
		}
		if loc.FS == r.FS() || loc.Name != "secret.txt" {
			t.Fatalf("Locate(%q) = %+v; want the allowed root", p, loc)
		}
		if b, err := loc.FS.ReadFile(loc.Name); err != nil || string(b) != "secret" {
			t.Fatalf("read %q = %q, %v", p, b, err)
		}
	}

	loc, err := r.Locate(filepath.Join(l.outside, "new", "file.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := loc.FS.MkdirAll(filepath.Dir(loc.Name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := loc.FS.WriteFile(loc.Name, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(l.outside, "new", "file.txt")); err != nil || string(b) != "x" {
		t.Fatalf("written file = %q, %v", b, err)
	}

	// Still nothing beyond the allowed directory.
	if _, err := r.Rel(filepath.Dir(l.outside)); err == nil {
		t.Fatalf("Rel of the allowed directory's parent succeeded")
	}
}

func TestWorkdirInsideAllowedStaysRelative(t *testing.T) {
	l := newLayout(t)
	parent := filepath.Dir(l.work)
	r := openRoot(t, l.work, parent)
	got, err := r.Rel(filepath.Join(l.work, "sub", "in.txt"))
	if err != nil || got != "sub/in.txt" {
		t.Fatalf("Rel = %q, %v; want the workdir-relative path", got, err)
	}
	loc, err := r.Locate("sub/in.txt")
	if err != nil || loc.FS != r.FS() {
		t.Fatalf("Locate = %+v, %v; want the workdir root", loc, err)
	}
}

func TestOpenRootErrors(t *testing.T) {
	l := newLayout(t)
	if _, err := OpenRoot(filepath.Join(l.work, "missing")); err == nil {
		t.Error("OpenRoot of a missing workdir succeeded")
	}
	if _, err := OpenRoot(l.work, filepath.Join(l.outside, "missing")); err == nil {
		t.Error("OpenRoot with a missing allowed directory succeeded")
	}
}

// TestSwapAfterCheck simulates a race: the path is checked, then its parent
// directory is replaced by a symlink to outside before the write. The write
// through os.Root must fail and leave nothing outside.
func TestSwapAfterCheck(t *testing.T) {
	l := newLayout(t)
	r := openRoot(t, l.work)
	loc, err := r.Locate("sub/in.txt")
	if err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(l.work, "sub")
	if err := os.Rename(sub, filepath.Join(l.work, "moved")); err != nil {
		t.Fatal(err)
	}
	mustSymlink(t, l.outside, sub)

	if err := loc.FS.WriteFile(loc.Name, []byte("pwned"), 0o644); err == nil {
		t.Error("WriteFile through a swapped-in symlink succeeded")
	}
	if f, err := loc.FS.OpenFile(filepath.Join("sub", "secret.txt"), os.O_WRONLY|os.O_TRUNC, 0); err == nil {
		f.Close()
		t.Error("OpenFile through a swapped-in symlink succeeded")
	}
	if err := loc.FS.MkdirAll(filepath.Join("sub", "d"), 0o755); err == nil {
		t.Error("MkdirAll through a swapped-in symlink succeeded")
	}
	if _, err := os.Stat(filepath.Join(l.outside, "in.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a file appeared outside: %v", err)
	}
	if _, err := os.Stat(filepath.Join(l.outside, "d")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a directory appeared outside: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(l.outside, "secret.txt")); string(b) != "secret" {
		t.Errorf("outside file changed to %q", b)
	}
	// A fresh check sees the link and refuses.
	if _, err := r.Locate("sub/in.txt"); err == nil {
		t.Error("Locate after the swap succeeded")
	}
}

// TestDanglingLinkOutWrite checks that os.Root, the guard at use time,
// refuses to create a file through a dangling link that points outside.
func TestDanglingLinkOutWrite(t *testing.T) {
	l := newLayout(t)
	mustSymlink(t, filepath.Join(l.outside, "new.txt"), filepath.Join(l.work, "dangling"))
	r := openRoot(t, l.work)
	if err := r.FS().WriteFile("dangling", []byte("x"), 0o644); err == nil {
		t.Error("WriteFile through a dangling link out succeeded")
	}
	if _, err := os.Stat(filepath.Join(l.outside, "new.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a file appeared outside: %v", err)
	}
}

func TestWithin(t *testing.T) {
	tests := []struct {
		dir, p string
		want   bool
	}{
		{"/a/b", "/a/b", true},
		{"/a/b", "/a/b/c", true},
		{"/a/b", "/a/bc", false},
		{"/a/b", "/a", false},
		{"/", "/x", true},
		{"/", "/", true},
	}
	for _, tt := range tests {
		if got := within(tt.dir, tt.p); got != tt.want {
			t.Errorf("within(%q, %q) = %v; want %v", tt.dir, tt.p, got, tt.want)
		}
	}
}

func TestLocWriteFile(t *testing.T) {
	l := newLayout(t)
	mustSymlink(t, "sub/in.txt", filepath.Join(l.work, "link"))
	r := openRoot(t, l.work)
	tests := []struct {
		path, file string // file: where the bytes land
		perm       os.FileMode
	}{
		{path: "new/deep/file.txt", file: "new/deep/file.txt", perm: 0o640},
		{path: "sub/in.txt", file: "sub/in.txt", perm: 0o755},
		{path: "link", file: "sub/in.txt", perm: 0o600},
	}
	for _, tt := range tests {
		loc, err := r.Locate(tt.path)
		if err != nil {
			t.Fatal(err)
		}
		if err := loc.WriteFile([]byte(tt.path), tt.perm); err != nil {
			t.Fatalf("WriteFile(%s): %v", tt.path, err)
		}
		p := filepath.Join(l.work, filepath.FromSlash(tt.file))
		b, err := os.ReadFile(p)
		if err != nil || string(b) != tt.path {
			t.Errorf("%s: content %q, %v", tt.path, b, err)
		}
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != tt.perm {
			t.Errorf("%s: mode %v, %v; want %v", tt.path, fi.Mode(), err, tt.perm)
		}
	}
	if fi, err := os.Lstat(filepath.Join(l.work, "link")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v", err)
	}
	filepath.WalkDir(l.work, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".lite-agent-") {
			t.Errorf("temporary file left: %s", p)
		}
		return nil
	})

	// After a swap, nothing lands outside.
	loc, err := r.Locate("sub/other/new.txt")
	if err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(l.work, "sub")
	if err := os.Rename(sub, filepath.Join(l.work, "moved")); err != nil {
		t.Fatal(err)
	}
	mustSymlink(t, l.outside, sub)
	if err := loc.WriteFile([]byte("pwned"), 0o644); err == nil {
		t.Error("WriteFile through a swapped-in symlink succeeded")
	}
	if _, err := os.Stat(filepath.Join(l.outside, "other")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a directory appeared outside: %v", err)
	}
}
