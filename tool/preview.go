package tool

import "encoding/json"

// Previewer is implemented by tools that can say what a call would change
// before it runs (write and edit: a unified diff of the file). The agent
// puts the preview in the approval request, so the user approves the
// change itself rather than the raw input. Tools without it are approved
// on their input alone.
type Previewer interface {
	// Preview returns the change the call would make, as a unified diff,
	// or "" when it cannot tell (bad input, an unreadable file): the call
	// itself will then report the error. It must not change anything.
	Preview(root *Root, input json.RawMessage) string
}
