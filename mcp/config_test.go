package mcp_test

import (
	"regexp"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/lite-agent/lite-agent/mcp"
)

// The names are checked and cleaned by loops, not regexps (a package-level
// regexp is compiled at every process start); these regexps are the rules
// the loops must keep.
var (
	validServerName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,40}$`)
	notToolNameChar = regexp.MustCompile(`[^A-Za-z0-9_-]`)
)

// nameString draws strings near the rules' edges: mostly allowed bytes,
// some punctuation, multi-byte runes and invalid UTF-8, lengths around 40.
func nameString() *rapid.Generator[string] {
	pieces := []string{"a", "Z", "0", "9", "_", "-", ".", " ", "/", "__", "é", "日本", "\xff", "\x00"}
	return rapid.Custom(func(t *rapid.T) string {
		var b strings.Builder
		for range rapid.IntRange(0, 45).Draw(t, "len") {
			b.WriteString(rapid.SampledFrom(pieces).Draw(t, "piece"))
		}
		return b.String()
	})
}

func TestServerNameCheckIsTheRule(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		name := nameString().Draw(t, "name")
		err := mcp.ServerConfig{Name: name, Command: "x"}.Check()
		want := validServerName.MatchString(name) && !strings.Contains(name, "__")
		if (err == nil) != want {
			t.Fatalf("Check of name %q: %v, want valid=%v", name, err, want)
		}
	})
}

func TestToolNameIsTheRule(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		server, tool := nameString().Draw(t, "server"), nameString().Draw(t, "tool")
		want := "mcp__" + server + "__" + notToolNameChar.ReplaceAllString(tool, "_")
		if len(want) > 64 {
			want = want[:64]
		}
		if got := mcp.ToolName(server, tool); got != want {
			t.Fatalf("ToolName(%q, %q) = %q, want %q", server, tool, got, want)
		}
	})
}
