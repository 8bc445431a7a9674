package tool

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestStrayTempOf(t *testing.T) {
	for name, want := range map[string]string{
		".a.txt.lite-agent-abcdefgh27.tmp":          "a.txt",
		"..env.lite-agent-zzzzzzzzzz.tmp":           ".env",
		".x.lite-agent-y.lite-agent-abcdefghij.tmp": "x.lite-agent-y",
		".a.txt.lite-agent-abcdefgh2.tmp":           "", // nine characters
		".a.txt.lite-agent-abcdefgh18.tmp":          "", // 1 and 8 are not base32
		".a.txt.lite-agent-ABCDEFGHIJ.tmp":          "",
		"a.txt.lite-agent-abcdefghij.tmp":           "",
		".lite-agent-abcdefghij.tmp":                "",
		".a.txt.lite-agent-abcdefghij.tmp~":         "",
		"notes.tmp":                                 "",
	} {
		base, ok := StrayTempOf(name)
		if base != want || ok != (want != "") {
			t.Errorf("StrayTempOf(%q) = %q, %v; want %q", name, base, ok, want)
		}
	}
	// The names WriteFile makes are recognised.
	for range 100 {
		if base, ok := StrayTempOf(tempName("f.go", strings.ToLower(rand.Text()[:tempRandom]))); !ok || base != "f.go" {
			t.Fatalf("a WriteFile temporary name is not recognised: %q %v", base, ok)
		}
	}
}

// TestFindStrayTemps: the strays beside the given files are found and
// removed; other files, symlinks and a completed write's leftovers (none)
// are not.
func TestFindStrayTemps(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"a/.x.go.lite-agent-abcdefghij.tmp", ".top.lite-agent-abcdefghij.tmp", "a/.y.go.lite-agent-abcdefghij.tmp", "a/user.tmp"} {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, p), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Symlink("user.tmp", filepath.Join(dir, "a", ".x.go.lite-agent-linkedlink.tmp"))
	r, err := OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	l, err := r.Locate("a/new.txt")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.WriteFile([]byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	paths := []string{"a/x.go", "a/x.go", "top", "a/new.txt", "gone/dir/f"}
	got, err := r.FindStrayTemps(paths)
	want := []string{filepath.Join("a", ".x.go.lite-agent-abcdefghij.tmp"), ".top.lite-agent-abcdefghij.tmp"}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("FindStrayTemps = %q, %v; want %q", got, err, want)
	}
	removed, err := r.RemoveStrayTemps(paths)
	if err != nil || !slices.Equal(removed, want) {
		t.Fatalf("RemoveStrayTemps = %q, %v", removed, err)
	}
	if got, _ := r.FindStrayTemps(paths); len(got) != 0 {
		t.Fatalf("after the removal: %q", got)
	}
	for _, p := range []string{"a/.y.go.lite-agent-abcdefghij.tmp", "a/user.tmp", "a/new.txt"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Errorf("%s went: %v", p, err)
		}
	}
}
