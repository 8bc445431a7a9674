package builtin

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

// benchTree makes a workdir of 10 packages × 40 files × 200 lines.
func benchTree(b *testing.B) *workdir {
	b.Helper()
	w := newWorkdir(b)
	line := "\tx := compute(a, b) // some ordinary line of code\n"
	body := "package p\n" + strings.Repeat(line, 198) + "func Needle() {}\n"
	files := map[string]string{}
	for p := range 10 {
		for f := range 40 {
			files[fmt.Sprintf("pkg%02d/file%02d.go", p, f)] = body
		}
	}
	writeFiles(b, w.dir, files)
	return w
}

func BenchmarkGrep(b *testing.B) {
	w := benchTree(b)
	for b.Loop() {
		if res := w.call(b, Grep{}, `{"pattern": "func Needle", "include": "*.go"}`); res.IsError || strings.Count(res.Output, "\n") != 399 {
			b.Fatalf("unexpected result: %.200s", res.Output)
		}
	}
}

func BenchmarkGlob(b *testing.B) {
	w := benchTree(b)
	for b.Loop() {
		if res := w.call(b, Glob{}, `{"pattern": "**/file1*.go"}`); res.IsError || strings.Count(res.Output, "\n") != 99 {
			b.Fatalf("unexpected result: %.200s", res.Output)
		}
	}
}

func BenchmarkRead(b *testing.B) {
	w := benchTree(b)
	for b.Loop() {
		if res := w.call(b, Read{}, `{"path": "pkg00/file00.go"}`); res.IsError {
			b.Fatal(res.Output)
		}
	}
}

func BenchmarkEdit(b *testing.B) {
	w := benchTree(b)
	inputs := []string{
		`{"path": "pkg00/file00.go", "old_string": "func Needle() {}", "new_string": "func Pin() {}"}`,
		`{"path": "pkg00/file00.go", "old_string": "func Pin() {}", "new_string": "func Needle() {}"}`,
	}
	i := 0
	for b.Loop() {
		if res := w.call(b, Edit{}, inputs[i%2]); res.IsError {
			b.Fatal(res.Output)
		}
		i++
	}
}

// BenchmarkReplaceNotFound measures the hint search of a failed edit on a
// 1 MiB file: lines unlike old_string (typical), and lines all alike (the
// worst case, bounded by the work budget).
func BenchmarkReplaceNotFound(b *testing.B) {
	var varied strings.Builder
	for i := range 20000 {
		fmt.Fprintf(&varied, "\tv%d := f%d(%d) // %x\n", i, i%7, i*31, i*7919)
	}
	for _, bc := range []struct{ name, content string }{
		{"varied", varied.String()},
		{"alike", strings.Repeat("\tx := compute(a, b) // some ordinary line of code\n", 20000)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := replace(bc.content, "\ty := compute(a, c) // a line that is not there\n", "z", false); err == nil {
					b.Fatal("found")
				}
			}
		})
	}
}

func BenchmarkBashEcho(b *testing.B) {
	w := newWorkdir(b)
	for b.Loop() {
		if res := w.call(b, Bash{}, `{"command": "echo hi"}`); res.Output != "hi\n[exit code 0]" {
			b.Fatal(res.Output)
		}
	}
}

// searchTree makes the search benchmark's workdir: 50,000 files, of which
// 40,000 sit in a node_modules/ that .gitignore excludes. 100 of the 10,000
// others define "func Needle", as do 400 files in node_modules.
func searchTree(b *testing.B) *workdir {
	b.Helper()
	w := newWorkdir(b)
	body := "package p\n" + strings.Repeat("\tx := compute(a, b) // some ordinary line of code\n", 18)
	files := map[string]string{".gitignore": "node_modules/\n"}
	for d := range 100 {
		for f := range 100 {
			content := body
			if f == 0 {
				content += "func Needle() {}\n"
			}
			files[fmt.Sprintf("src/pkg%03d/file%03d_test.go", d, f)] = content
		}
	}
	for d := range 400 {
		for f := range 100 {
			content := body
			if f == 0 {
				content += "func Needle() {}\n"
			}
			files[fmt.Sprintf("node_modules/mod%03d/file%03d_test.go", d, f)] = content
		}
	}
	writeFiles(b, w.dir, files)
	return w
}

// BenchmarkSearch50k compares grep and glob on a 50,000-file tree with
// ripgrep itself doing the same search (a whole rg process, as grep runs
// it). Both must find the 100 files outside node_modules.
func BenchmarkSearch50k(b *testing.B) {
	w := searchTree(b)
	grep := `{"pattern": "func Needle"}`
	glob := `{"pattern": "**/file000_test.go"}`
	want := func(b *testing.B, out string, lines int) {
		if n := strings.Count(out, "\n") + 1; n != lines {
			b.Fatalf("got %d lines, want %d: %.300s", n, lines, out)
		}
	}
	rg, err := exec.LookPath("rg")
	b.Run("grep", func(b *testing.B) {
		for b.Loop() {
			want(b, w.call(b, Grep{}, grep).Output, 100)
		}
	})
	b.Run("grep-go", func(b *testing.B) {
		for b.Loop() {
			want(b, w.call(b, Grep{NoRipgrep: true}, grep).Output, 100)
		}
	})
	b.Run("glob", func(b *testing.B) {
		for b.Loop() {
			want(b, w.call(b, Glob{}, glob).Output, 100)
		}
	})
	if err != nil {
		b.Log("rg is not on PATH: no ripgrep baseline")
		return
	}
	run := func(b *testing.B, args ...string) {
		cmd := exec.Command(rg, args...)
		cmd.Dir = w.dir
		out, err := cmd.Output()
		if err != nil {
			b.Fatal(err)
		}
		want(b, strings.TrimSuffix(string(out), "\n"), 100)
	}
	b.Run("rg", func(b *testing.B) {
		for b.Loop() {
			run(b, "--no-config", "--no-require-git", "-e", "func Needle")
		}
	})
	b.Run("rg-files", func(b *testing.B) {
		for b.Loop() {
			run(b, "--no-config", "--no-require-git", "--files", "--type-add", "t:file000_test.go", "-t", "t")
		}
	})
}
