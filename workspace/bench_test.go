package workspace_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/lite-agent/lite-agent/workspace"
)

// tree10k makes 10,000 small files in 100 directories and lists them.
func tree10k(b *testing.B) (string, []string) {
	b.Helper()
	dir := b.TempDir()
	var paths []string
	for d := range 100 {
		sub := filepath.Join(dir, fmt.Sprintf("pkg%03d", d))
		if err := os.Mkdir(sub, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range 100 {
			p := filepath.Join(sub, fmt.Sprintf("file%03d.go", f))
			if err := os.WriteFile(p, []byte(fmt.Sprintf("package pkg%03d // %d\n", d, f)), 0o644); err != nil {
				b.Fatal(err)
			}
			paths = append(paths, p)
		}
	}
	return dir, paths
}

// BenchmarkManifest10k compares, in one run, a warm manifest of a
// 10,000-file tree where nothing changed with a bare lstat of every file
// (target: warm ≤ 1.5× bare) and with a cold manifest (everything read).
func BenchmarkManifest10k(b *testing.B) {
	dir, paths := tree10k(b)
	r := openRoot(b, dir)
	b.Run("BareStat", func(b *testing.B) {
		for b.Loop() {
			for _, p := range paths {
				if _, err := os.Lstat(p); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("Warm", func(b *testing.B) {
		prev, err := workspace.Scan(b.Context(), r, nil, &workspace.Options{Now: later})
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := workspace.Scan(b.Context(), r, prev, &workspace.Options{Now: later}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Cold", func(b *testing.B) {
		for b.Loop() {
			if _, err := workspace.Scan(b.Context(), r, nil, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}
