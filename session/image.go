package session

import "bytes"

// Image is an image a tool returned (an MCP server's image content), kept
// with its tool result and passed to the model as image input where the
// provider takes it. Data is the image's bytes (base64 in the log's JSON).
type Image struct {
	MediaType string `json:"media_type"` // image/png, image/jpeg, image/gif or image/webp
	Data      []byte `json:"data"`
}

// attachImages gives the tool result of callID that the last message
// holds, the answer just added from the tool_finished event e, the images
// e carries. Replay's fast decoder skips them, so e is decoded again, only
// when its payload may hold images.
func (s *State) attachImages(e Event, callID string) {
	if len(s.messages) == 0 || !bytes.Contains(e.Data, []byte(`"images"`)) {
		return
	}
	var p ToolFinished
	if e.Decode(&p) != nil || len(p.Images) == 0 {
		return
	}
	images := p.Images
	m := &s.messages[len(s.messages)-1]
	for i := len(m.Blocks) - 1; i >= 0; i-- {
		if b := &m.Blocks[i]; b.Type == BlockToolResult && b.ToolUseID == callID {
			b.Images = images
			return
		}
	}
}
