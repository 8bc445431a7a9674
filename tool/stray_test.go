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

// TestStrayTemps: the walk finds strays anywhere below the directory but
// not in .git, and not symlinks; a WriteFile that completes leaves none.
func TestStrayTemps(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"a/.x.go.lite-agent-abcdefghij.tmp", ".top.lite-agent-abcdefghij.tmp", ".git/.y.lite-agent-abcdefghij.tmp", "a/user.tmp"} {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, p), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Symlink("a/user.tmp", filepath.Join(dir, ".link.lite-agent-abcdefghij.tmp"))
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
	got, err := StrayTemps(dir)
	want := []string{".top.lite-agent-abcdefghij.tmp", filepath.Join("a", ".x.go.lite-agent-abcdefghij.tmp")}
	slices.Sort(got)
	slices.Sort(want)
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("StrayTemps = %q, %v; want %q", got, err, want)
	}
	removed, err := r.RemoveStrayTemps([]string{"a/x.go", "a/x.go", "gone/dir/f"})
	if err != nil || !slices.Equal(removed, []string{filepath.Join("a", ".x.go.lite-agent-abcdefghij.tmp")}) {
		t.Fatalf("RemoveStrayTemps = %q, %v", removed, err)
	}
	if got, _ := StrayTemps(dir); !slices.Equal(got, []string{".top.lite-agent-abcdefghij.tmp"}) {
		t.Fatalf("after removing a/x.go's stray: %q", got)
	}
}
