package diff

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s (-want +got):\n%s", name, diff)
	}
}

const goFile = "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"helo, world\")\n\tif true {\n\t\tfmt.Println(\"nested\")\n\t}\n}\n\nfunc other() {\n\treturn\n}\n"

func TestGolden(t *testing.T) {
	tests := []struct{ name, old, new string }{
		{"edit", goFile, strings.Replace(goFile, "helo", "hello", 1)},
		{"two-hunks", goFile, strings.Replace(strings.Replace(goFile, "package main", "package app", 1), "\treturn\n", "\treturn // done\n", 1)},
		{"new-file", "", "line one\n\tline two\n"},
		{"no-final-newline", "a\nb", "a\nc"},
		{"emptied", "a\nb\n", ""},
	}
	for _, tt := range tests {
		u := Unified("main.go", tt.old, tt.new)
		golden(t, tt.name+".diff", u)
		golden(t, tt.name+".numbered", Numbered(u, 0))
	}
}

func TestUnifiedEqual(t *testing.T) {
	if u := Unified("x", "same\n", "same\n"); u != "" {
		t.Errorf("Unified of equal texts = %q, want \"\"", u)
	}
}

func TestParseNumbers(t *testing.T) {
	u := Unified("main.go", goFile, strings.Replace(goFile, "helo", "hello", 1))
	var got []Line
	for _, l := range Parse(u) {
		if l.Kind == Added || l.Kind == Removed {
			got = append(got, l)
		}
	}
	want := []Line{
		{Kind: Removed, Old: 6, Text: "\tfmt.Println(\"helo, world\")"},
		{Kind: Added, New: 6, Text: "\tfmt.Println(\"hello, world\")"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("changed lines (-want +got):\n%s", diff)
	}
	if a, r := Stat(u); a != 1 || r != 1 {
		t.Errorf("Stat = +%d -%d, want +1 -1", a, r)
	}
}

func TestNumberedCap(t *testing.T) {
	u := Unified("f", "", strings.Repeat("x\n", 10))
	got := Numbered(u, 3)
	want := " 1 + x\n 2 + x\n 3 + x\n… 7 more diff lines\n"
	if got != want {
		t.Errorf("Numbered capped =\n%q\nwant\n%q", got, want)
	}
}

func TestParseKeepsOtherText(t *testing.T) {
	got := Parse("not a diff\n@@ broken\n")
	want := []Line{{Kind: Note, Text: "not a diff"}, {Kind: Hunk, Text: "@@ broken"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Parse of other text (-want +got):\n%s", diff)
	}
}
