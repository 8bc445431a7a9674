package session

import (
	"encoding/json"
	"testing"
)

func TestSearchText(t *testing.T) {
	cases := []struct {
		name string
		e    Event
		want string
	}{
		{"prompt", MustNew(TypeUserPrompt, UserPrompt{Text: "fix the parser"}), "fix the parser"},
		{"answer text blocks, not tool calls", MustNew(TypeAssistantMessage, AssistantMessage{Blocks: []Block{
			{Type: BlockText, Text: "first"}, {Type: BlockToolUse, ID: "c1", Name: "bash", Input: json.RawMessage(`{"command":"secretword"}`)}, {Type: BlockText, Text: "second"},
		}}), "first\nsecond"},
		{"tool output", MustNew(TypeToolFinished, ToolFinished{CallID: "c1", Output: "3 tests passed"}), "3 tests passed"},
		{"title", MustNew(TypeSessionTitled, SessionTitled{Title: "Parser fix"}), "Parser fix"},
		{"tool intent has none", MustNew(TypeToolStarted, ToolStarted{CallID: "c1", Tool: "bash"}), ""},
		{"a payload that does not decode", Event{Type: TypeUserPrompt, Data: []byte(`{"text":`)}, ""},
	}
	for _, tc := range cases {
		if got := SearchText(tc.e); got != tc.want {
			t.Errorf("%s: SearchText = %q, want %q", tc.name, got, tc.want)
		}
		if tc.want != "" && !Searchable(tc.e.Type) {
			t.Errorf("%s: %s has text but is not Searchable", tc.name, tc.e.Type)
		}
	}
}

func TestTitleEventNamesTheSession(t *testing.T) {
	log := []Event{
		MustNew(TypeSessionStarted, SessionStarted{ID: "s1", Namespace: "ns"}),
		MustNew(TypeUserPrompt, UserPrompt{Text: "please refactor\nthe whole tokenizer"}),
	}
	if got := Summarize("s1", log).Title; got != "please refactor the whole tokenizer" {
		t.Fatalf("title before any title event = %q, want the first prompt", got)
	}
	log = append(log, MustNew(TypeSessionTitled, SessionTitled{Title: "Tokenizer refactor", By: TitleByModel}))
	log = append(log, MustNew(TypeUserPrompt, UserPrompt{Text: "and the docs"}))
	if got := Summarize("s1", log).Title; got != "Tokenizer refactor" {
		t.Fatalf("title after the model's = %q", got)
	}
	log = append(log, MustNew(TypeSessionTitled, SessionTitled{Title: "  My\nname ", By: TitleByUser}))
	if got := Replay(log).Summary.Title; got != "My name" {
		t.Fatalf("title after a rename = %q, want %q (replay and summary agree)", got, "My name")
	}
	log = append(log, MustNew(TypeSessionTitled, SessionTitled{Title: "   "}))
	if got := Summarize("s1", log).Title; got != "My name" {
		t.Fatalf("an empty title replaced %q with %q", "My name", got)
	}
}
