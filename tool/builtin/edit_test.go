package builtin

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReplace(t *testing.T) {
	const src = "func main() {\n\tfmt.Println(\"hi\")\n\treturn\n}\n"
	tests := []struct {
		name, content, old, new string
		all                     bool
		want                    string
		wantCount               int
		wantCRLF                bool
		wantErr                 string // substring of the error
	}{
		{name: "unique", content: src, old: "\"hi\"", new: "\"bye\"", want: strings.Replace(src, "hi", "bye", 1), wantCount: 1},
		{name: "delete", content: "a\nb\nc\n", old: "b\n", new: "", want: "a\nc\n", wantCount: 1},
		{name: "all", content: "x = x + x", old: "x", new: "y", all: true, want: "y = y + y", wantCount: 3},
		{name: "all with a single match", content: "abc", old: "b", new: "B", all: true, want: "aBc", wantCount: 1},
		{name: "crlf file", content: "a\r\nb\r\nc\r\n", old: "a\nb\n", new: "A\nB\n", want: "A\r\nB\r\nc\r\n", wantCount: 1, wantCRLF: true},
		{name: "crlf old given exactly", content: "a\r\nb\r\n", old: "a\r\n", new: "z\r\n", want: "z\r\nb\r\n", wantCount: 1},
		{name: "not unique", content: "x\ny\nx\ny\nx\n", old: "x", new: "z", wantErr: "matches 3 places (at lines 1, 3, 5); include more"},
		{name: "overlapping is ambiguous", content: "aaa", old: "aa", new: "b", wantErr: "matches 2 places"},
		{name: "many matches listed briefly", content: strings.Repeat("x\n", 9), old: "x", new: "y", wantErr: "(at lines 1, 2, 3, 4, 5, …)"},
		{name: "same", content: src, old: "return", new: "return", wantErr: "the same"},
		{name: "empty old", content: src, old: "", new: "x", wantErr: "old_string is empty"},
		{name: "indentation differs", content: src, old: "    fmt.Println(\"hi\")\n    return", new: "x", wantErr: "matches lines 2-3 if whitespace"},
		{name: "later line differs", content: src, old: "func main() {\n\tfmt.Println(\"hello\")", new: "x", wantErr: "first 1 line match at line 1, but then the file has \"\\tfmt.Println(\\\"hi\\\")\" where old_string has"},
		{name: "closest line", content: src, old: "fmt.Printn(\"hi\")", new: "x", wantErr: "most similar line is 2: \"\\tfmt.Println(\\\"hi\\\")\""},
		{name: "line numbers pasted", content: src, old: "     2\tfmt.Println(\"hi\")\n     3\treturn", new: "x", wantErr: "line numbers that read shows"},
		{name: "nothing close", content: src, old: "zzzzzzzzzzzz", new: "x", wantErr: "Nothing in the file resembles it"},
		{name: "whitespace only", content: "a b", old: "\n\n", new: "x", wantErr: "only whitespace"},
	}
	for _, tt := range tests {
		got, err := replace(tt.content, tt.old, tt.new, tt.all)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: error = %v; want one containing %q", tt.name, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if got.out != tt.want || got.count != tt.wantCount || got.crlf != tt.wantCRLF {
			t.Errorf("%s: got %q (count %d, crlf %v), want %q (count %d, crlf %v)", tt.name, got.out, got.count, got.crlf, tt.want, tt.wantCount, tt.wantCRLF)
		}
	}
}

// FuzzReplace checks the matcher's contract on arbitrary input: a success
// is exactly the documented replacement, a failure is one of the documented
// errors and is right about whether and how often old occurs.
func FuzzReplace(f *testing.F) {
	seeds := []struct {
		content, old, new string
		all               bool
	}{
		{"hello world", "world", "there", false},
		{"aaaa", "aa", "b", false},
		{"aaaa", "aa", "b", true},
		{"a\r\nb\r\n", "a\nb", "c\nd", false},
		{"a\r\nb\r\n", "a\nb", "a\r\nb", false},
		{"x\ny\nx", "x", "", true},
		{"\tfoo()\n", "  foo()", "bar()", false},
		{"", "a", "b", false},
		{"日本語", "本", "x", false},
		{"abc", "", "x", false},
		{"abc", "abc", "abc", true},
	}
	for _, s := range seeds {
		f.Add(s.content, s.old, s.new, s.all)
	}
	f.Fuzz(func(t *testing.T, content, old, new string, all bool) {
		got, err := replace(content, old, new, all)
		var nf *notFoundError
		var nu *notUniqueError
		switch {
		case err == nil:
			o, n := old, new
			if got.crlf {
				o = strings.ReplaceAll(old, "\n", "\r\n")
				if !strings.Contains(new, "\r") {
					n = strings.ReplaceAll(new, "\n", "\r\n")
				}
			}
			i := strings.Index(content, o)
			if i < 0 {
				t.Fatalf("replaced %q, which is not in the content", o)
			}
			want := content[:i] + n + content[i+len(o):]
			if all {
				want = strings.ReplaceAll(content, o, n)
			} else if countOverlapping(content, o) != 1 {
				t.Fatalf("replaced one of several occurrences without replace_all")
			}
			if got.out != want {
				t.Fatalf("out = %q, want %q", got.out, want)
			}
			if got.start != i || got.size != len(n) || got.out[got.start:got.start+got.size] != n {
				t.Fatalf("start/size %d/%d do not point at the new text", got.start, got.size)
			}
		case errors.Is(err, errEmptyOld):
			if old != "" {
				t.Fatalf("errEmptyOld for %q", old)
			}
		case errors.Is(err, errNoChange):
			if old != new && strings.ReplaceAll(old, "\n", "\r\n") != new {
				t.Fatalf("errNoChange for %q -> %q", old, new)
			}
		case errors.As(err, &nf):
			if strings.Contains(content, old) {
				t.Fatalf("not found, but %q is in the content", old)
			}
			if nf.hint == "" {
				t.Fatal("not found without a hint")
			}
		case errors.As(err, &nu):
			if all || nu.count < 2 || len(nu.lines) == 0 {
				t.Fatalf("bad notUniqueError %+v (all %v)", nu, all)
			}
		default:
			t.Fatalf("undocumented error %v", err)
		}
	})
}

func TestEdit(t *testing.T) {
	w := newWorkdir(t)
	writeFiles(t, w.dir, map[string]string{
		"a.go":    "package a\n\nfunc A() int {\n\treturn 1\n}\n",
		"dup.txt": "x\nx\n",
		"bin":     "a\x00b",
		"dir/":    "",
	})
	os.Chmod(filepath.Join(w.dir, "a.go"), 0o750)
	tests := []struct {
		name, input string
		wantErr     bool
		want        []string
		file        string
		content     string
	}{
		{name: "edit", input: `{"path": "a.go", "old_string": "return 1", "new_string": "return 2"}`,
			want: []string{"edited a.go: replaced 1 occurrence\n--- a.go\n+++ a.go\n@@ -1,5 +1,5 @@\n package a\n \n func A() int {\n-\treturn 1\n+\treturn 2\n }"},
			file: "a.go", content: "package a\n\nfunc A() int {\n\treturn 2\n}\n"},
		{name: "not unique leaves the file", input: `{"path": "dup.txt", "old_string": "x", "new_string": "y"}`, wantErr: true,
			want: []string{"dup.txt: old_string matches 2 places", "Nothing was changed"}, file: "dup.txt", content: "x\nx\n"},
		{name: "replace all", input: `{"path": "dup.txt", "old_string": "x", "new_string": "y", "replace_all": true}`,
			want: []string{"replaced 2 occurrences"}, file: "dup.txt", content: "y\ny\n"},
		{name: "not found", input: `{"path": "a.go", "old_string": "return 3", "new_string": "x"}`, wantErr: true, want: []string{"old_string was not found", "similar line is 4"}},
		{name: "missing file", input: `{"path": "nope.go", "old_string": "a", "new_string": "b"}`, wantErr: true, want: []string{"nope.go does not exist", "use write"}},
		{name: "directory", input: `{"path": "dir", "old_string": "a", "new_string": "b"}`, wantErr: true, want: []string{"is a directory"}},
		{name: "binary", input: `{"path": "bin", "old_string": "a", "new_string": "b"}`, wantErr: true, want: []string{"binary"}},
		{name: "no new_string", input: `{"path": "a.go", "old_string": "a"}`, wantErr: true, want: []string{"new_string is required"}},
		{name: "string bool", input: `{"path": "dup.txt", "old_string": "y", "new_string": "z", "replace_all": "true"}`, want: []string{"replaced 2"}},
	}
	for _, tt := range tests {
		got := w.call(t, Edit{}, tt.input)
		check(t, tt.name, got, tt.wantErr, tt.want)
		if tt.file != "" {
			if c := readFile(t, filepath.Join(w.dir, tt.file)); c != tt.content {
				t.Errorf("%s: content %q, want %q", tt.name, c, tt.content)
			}
		}
	}
	if fi, _ := os.Stat(filepath.Join(w.dir, "a.go")); fi.Mode().Perm() != 0o750 {
		t.Errorf("a.go mode %v, want 0750 kept", fi.Mode().Perm())
	}
	assertNoTempFiles(t, w.dir)
}
