package session

import "strings"

// SearchText returns the text of e that search across sessions finds: a
// prompt's text, the text blocks of an answer, a tool's output and a
// session's title. Other events, and events whose payload does not decode,
// have none (""). It is what every store indexes, so that every store finds
// the same events.
func SearchText(e Event) string {
	switch e.Type {
	case TypeUserPrompt:
		var p UserPrompt
		if e.Decode(&p) == nil {
			return p.Text
		}
	case TypeAssistantMessage:
		var p AssistantMessage
		if e.Decode(&p) != nil {
			return ""
		}
		var b strings.Builder
		for _, bl := range p.Blocks {
			if bl.Type == BlockText && bl.Text != "" {
				if b.Len() > 0 {
					b.WriteByte('\n')
				}
				b.WriteString(bl.Text)
			}
		}
		return b.String()
	case TypeToolFinished:
		var p ToolFinished
		if e.Decode(&p) == nil {
			return p.Output
		}
	case TypeSessionTitled:
		var p SessionTitled
		if e.Decode(&p) == nil {
			return p.Title
		}
	}
	return ""
}

// Searchable reports whether events of type t can have search text.
func Searchable(t Type) bool {
	switch t {
	case TypeUserPrompt, TypeAssistantMessage, TypeToolFinished, TypeSessionTitled:
		return true
	}
	return false
}
