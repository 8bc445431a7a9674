package tui

import (
	"context"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/session"
)

// TestThinkingShownDimmed: streamed thinking shows as its own entry,
// before the answer, in the dim colour; a loaded message's thinking too.
func TestThinkingShownDimmed(t *testing.T) {
	a, _ := newTestAgent(t, nil, nil)
	m := newModel(context.Background(), a, Options{Env: []string{"NO_COLOR="}}, nil)
	m.Update(teaSize(80, 24))
	l := &logBuilder{session: sid}
	think := liteagent.Update{Session: sid, Delta: &provider.Delta{Kind: provider.DeltaThinking, Text: "weighing the options"}}
	feed(m, l.start(), l.prompt("decide"), think, l.delta("Pick B."),
		l.message(session.Block{Type: session.BlockThinking, Text: "weighing the options", Signature: "s"}, text("Pick B.")), l.completed())
	var kinds []kind
	for _, e := range m.tr.entries {
		kinds = append(kinds, e.kind)
	}
	if len(kinds) != 3 || kinds[1] != kindThinking || kinds[2] != kindAssistant {
		t.Fatalf("entries %v; want prompt, thinking, answer", kinds)
	}
	view := m.View().Content
	plain := ansi.Strip(view)
	if !strings.Contains(plain, "∴ weighing the options") || strings.Index(plain, "weighing") > strings.Index(plain, "Pick B.") {
		t.Fatalf("thinking not shown before the answer:\n%s", plain)
	}
	dim := m.theme.dim.Render("weighing the options")
	if !strings.Contains(view, dim) || dim == "weighing the options" {
		t.Fatalf("the thinking is not in the dim style %q", dim)
	}

	loaded := newTranscript()
	loaded.apply(*l.message(session.Block{Type: session.BlockThinking, Text: "from the log"}, text("answer")).Event)
	if len(loaded.entries) != 2 || loaded.entries[0].kind != kindThinking || loaded.entries[0].text != "from the log" {
		t.Fatal("a loaded message's thinking is not shown")
	}
}
