package session

import (
	"bytes"
	"testing"
)

// A tool result's images come back from the log with it, through the
// fast decoder's fallback; a result without images has none, even when
// its output mentions "images".
func TestReplayKeepsToolImages(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\nrest")
	events := []Event{
		MustNew(TypeSessionStarted, SessionStarted{ID: "s"}),
		MustNew(TypeUserPrompt, UserPrompt{Text: "show me"}),
		MustNew(TypeAssistantMessage, AssistantMessage{Blocks: []Block{{Type: BlockToolUse, ID: "c1", Name: "mcp__x__img"}, {Type: BlockToolUse, ID: "c2", Name: "read"}}}),
		MustNew(TypeToolStarted, ToolStarted{CallID: "c1", Tool: "mcp__x__img"}),
		MustNew(TypeToolFinished, ToolFinished{CallID: "c1", Tool: "mcp__x__img", Output: "[image 1, image/png, 12 bytes: attached]", Images: []Image{{MediaType: "image/png", Data: png}}}),
		MustNew(TypeToolStarted, ToolStarted{CallID: "c2", Tool: "read"}),
		MustNew(TypeToolFinished, ToolFinished{CallID: "c2", Tool: "read", Output: `{"images": []}`}),
	}
	for i := range events {
		events[i].Seq = int64(i + 1)
	}
	msgs := Replay(events).Transcript()
	last := msgs[len(msgs)-1]
	if len(last.Blocks) != 2 {
		t.Fatalf("the last message: %+v", last)
	}
	if im := last.Blocks[0].Images; len(im) != 1 || im[0].MediaType != "image/png" || !bytes.Equal(im[0].Data, png) {
		t.Fatalf("c1's result lost its image: %+v", last.Blocks[0])
	}
	if im := last.Blocks[1].Images; im != nil {
		t.Fatalf("c2's result has images: %+v", im)
	}
}
