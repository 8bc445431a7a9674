// Package tool defines the contract between the agent loop and the tools a
// model may call, and the workdir confinement every built-in tool uses. The
// built-in tools live in package tool/builtin, one file each.
//
// Failures the model should read (a missing file, an edit whose old text is
// not found, a path outside the workdir) are returned as a Result with
// IsError set, never as Go errors: the model sees them and can recover.
package tool

import (
	"context"
	"encoding/json"
	"fmt"
)

// Kind says what a tool may do, which decides whether it needs approval.
type Kind string

// Kinds of tools.
const (
	KindRead Kind = "read" // only reads: runs without approval
	KindEdit Kind = "edit" // changes files it names: needs approval ("edit")
	KindExec Kind = "exec" // runs commands, may change anything: needs approval ("bash")
	KindMCP  Kind = "mcp"  // a tool of an MCP server, which may do anything: needs approval ("mcp")
	// KindNetwork reaches a URL outside the machine (web_fetch): needs
	// approval ("network"); rules match its URL (web_fetch(domain:HOST)).
	KindNetwork Kind = "network"
)

// Spec describes a tool to the model and to the approval policy.
type Spec struct {
	Name        string
	Description string
	InputSchema json.RawMessage // a JSON Schema object
	Kind        Kind
	// Server names the MCP server that provides the tool; "" for the
	// agent's own tools.
	Server string
	// ReadOnly is set when the tool declares that it only reads (an MCP
	// read-only annotation). It is the server's claim: an approval rule may
	// allow such tools, nothing allows them by default.
	ReadOnly bool
}

// Call is one invocation of a tool.
type Call struct {
	ID    string
	Input json.RawMessage
	// Root confines every path the tool touches to the workdir.
	Root *Root
}

// Result is what a tool call returns to the model.
type Result struct {
	Output  string
	IsError bool
	// Images are images returned beside Output (an MCP tool's image
	// content), passed to the model as image input.
	Images []Image
	// Untracked is set when the call may have changed files it did not
	// declare (a shell command). Restore lists such calls as not undoable.
	Untracked bool
}

// Image is an image in a Result: its media type (image/png, image/jpeg,
// image/gif or image/webp) and its bytes.
type Image struct {
	MediaType string
	Data      []byte
}

// Errorf returns an error Result with a formatted message for the model.
func Errorf(format string, args ...any) Result {
	return Result{Output: fmt.Sprintf(format, args...), IsError: true}
}

// Tool is one tool the model may call.
type Tool interface {
	Spec() Spec
	// Run executes the call. It must stop promptly when ctx is cancelled and
	// must only change the files Paths declared for this input.
	Run(ctx context.Context, call Call) Result
}

// Mutator is implemented by tools that change files they can name before
// they run (write, edit). The agent snapshots those files, durably, before
// the tool runs, and records what the tool left there afterwards.
type Mutator interface {
	// Paths returns the workdir-relative, slash-separated paths the call will
	// change. An error means the input is unusable; the agent returns it to
	// the model as a tool error without running the tool.
	Paths(root *Root, input json.RawMessage) ([]string, error)
}
