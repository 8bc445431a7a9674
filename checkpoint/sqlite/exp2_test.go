package sqlite_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/checkpoint/sqlite"
	"github.com/lite-agent/lite-agent/session"
)

func BenchmarkExpAppendCPU(b *testing.B) {
	dir := b.TempDir()
	s, err := sqlite.Open(filepath.Join(dir, "s.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	head, _ := s.Append(b.Context(), "bench", 0, []session.Event{startedIn("bench", "bench")})
	text := strings.Repeat("lorem ipsum ", 100)[:1024]
	e := session.MustNew(session.TypeAssistantMessage, session.AssistantMessage{Blocks: []session.Block{{Type: "text", Text: text}}})
	for b.Loop() {
		head, err = s.Append(b.Context(), "bench", head, []session.Event{e})
		if err != nil {
			b.Fatal(err)
		}
	}
}
