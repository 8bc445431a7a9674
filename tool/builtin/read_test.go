package builtin

import (
	"fmt"
	"strings"
	"testing"
)

func numbered(from int, lines ...string) string {
	var b strings.Builder
	for i, l := range lines {
		fmt.Fprintf(&b, "%6d\t%s\n", from+i, l)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func TestRead(t *testing.T) {
	w := newWorkdir(t)
	manyLines := strings.Repeat("line\n", 2500)
	longLines := strings.Repeat(strings.Repeat("y", 1500)+"\n", 300)
	boundary := strings.Repeat("a\n", (sniffLen-2)/2) + "bé and more\n" // é crosses the sniff boundary
	writeFiles(t, w.dir, map[string]string{
		"abc.txt":      "a\nb\nc\n",
		"five.txt":     "1\n2\n3\n4\n5",
		"crlf.txt":     "x\r\ny\r\n",
		"empty.txt":    "",
		"nul.bin":      "ab\x00cd",
		"latin1.txt":   "caf\xe9\n",
		"boundary.txt": boundary,
		"long.txt":     strings.Repeat("x", 3000) + "\nshort\n",
		"many.txt":     manyLines,
		"wide.txt":     longLines,
		"dir/":         "",
	})
	tests := []struct {
		name, input string
		wantErr     bool
		want        []string
		notWant     []string
		exact       string
	}{
		{name: "whole", input: `{"path": "abc.txt"}`, exact: numbered(1, "a", "b", "c")},
		{name: "absolute", input: fmt.Sprintf(`{"path": %q}`, w.dir+"/abc.txt"), exact: numbered(1, "a", "b", "c")},
		{name: "offset limit", input: `{"path": "five.txt", "offset": 2, "limit": 2}`,
			exact: numbered(2, "2", "3") + "\n[showing lines 2-3 of 5; read on with offset=4]"},
		{name: "string numbers", input: `{"path": "five.txt", "offset": "4", "limit": "9"}`, exact: numbered(4, "4", "5")},
		{name: "last line without newline", input: `{"path": "five.txt", "offset": 5}`, exact: numbered(5, "5")},
		{name: "crlf", input: `{"path": "crlf.txt"}`, exact: numbered(1, "x", "y")},
		{name: "empty", input: `{"path": "empty.txt"}`, exact: "[empty.txt is empty]"},
		{name: "multibyte at sniff boundary", input: `{"path": "boundary.txt", "offset": 4096}`, want: []string{"é and more"}},
		{name: "long line cut", input: `{"path": "long.txt"}`, want: []string{"line cut: 2000 of 3000 bytes", "     2\tshort", "1 line longer than 2000 bytes cut"}},
		{name: "line cap", input: `{"path": "many.txt"}`, want: []string{"  2000\tline", "[showing lines 1-2000 of 2500; read on with offset=2001]"}, notWant: []string{"  2001\t"}},
		{name: "limit above cap", input: `{"path": "many.txt", "offset": 2001, "limit": 5000}`, want: []string{"  2500\tline"}, notWant: []string{"showing"}},
		{name: "byte cap", input: `{"path": "wide.txt"}`, want: []string{"output capped at 256 KiB", "of 300 (output capped at 256 KiB); read on with offset="}},
		{name: "offset past end", input: `{"path": "abc.txt", "offset": 9}`, wantErr: true, want: []string{"offset 9 is past the end of abc.txt, which has 3 lines"}},
		{name: "negative offset", input: `{"path": "abc.txt", "offset": -1}`, wantErr: true, want: []string{"must be positive"}},
		{name: "missing", input: `{"path": "nope.txt"}`, wantErr: true, want: []string{"nope.txt does not exist"}},
		{name: "directory", input: `{"path": "dir"}`, wantErr: true, want: []string{"dir is a directory; use ls"}},
		{name: "nul", input: `{"path": "nul.bin"}`, wantErr: true, want: []string{"binary file (it contains NUL bytes)", "xxd"}},
		{name: "not utf8", input: `{"path": "latin1.txt"}`, wantErr: true, want: []string{"binary file (it is not valid UTF-8 text)"}},
		{name: "no path", input: `{}`, wantErr: true, want: []string{"path is required"}},
		{name: "bad type", input: `{"path": 3}`, wantErr: true, want: []string{`field "path" must be a string`}},
	}
	for _, tt := range tests {
		got := w.call(t, Read{}, tt.input)
		check(t, tt.name, got, tt.wantErr, tt.want, tt.notWant...)
		if tt.exact != "" && got.Output != tt.exact {
			t.Errorf("%s: output\n%s\nwant\n%s", tt.name, clipOutput(got.Output), tt.exact)
		}
	}
}

func TestReadCancelled(t *testing.T) {
	w := newWorkdir(t)
	writeFiles(t, w.dir, map[string]string{"a.txt": strings.Repeat("x\n", 5000)})
	ctx, cancel := contextWithCancel(t)
	cancel()
	got := Read{}.Run(ctx, callFor(w, `{"path": "a.txt"}`))
	check(t, "cancelled", got, true, []string{"cancelled"})
}

func TestBinaryReason(t *testing.T) {
	tests := []struct {
		head     string
		complete bool
		want     string
	}{
		{"plain text\n", true, ""},
		{"", true, ""},
		{"a\x00b", true, "NUL"},
		{"caf\xc3", false, ""},     // a partial é at the end of a head
		{"caf\xc3", true, "UTF-8"}, // the same at the end of the file
		{"\xff\xfe", false, "UTF-8"},
		{"日本語", true, ""},
	}
	for _, tt := range tests {
		got := binaryReason([]byte(tt.head), tt.complete)
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("binaryReason(%q, %v) = %q, want %q", tt.head, tt.complete, got, tt.want)
		}
	}
}

func TestLineReader(t *testing.T) {
	in := "short\r\n" + strings.Repeat("é", 10) + "\nlast"
	lr := newLineReader(strings.NewReader(in), 5)
	type line struct {
		text string
		full int
	}
	var got []line
	for {
		l, full, err := lr.next()
		if err != nil {
			break
		}
		got = append(got, line{string(l), full})
	}
	want := []line{{"short", 5}, {"éé", 20}, {"last", 4}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("lines = %v, want %v", got, want)
	}
}
