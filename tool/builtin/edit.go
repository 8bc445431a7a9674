package builtin

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/lite-agent/lite-agent/tool"
)

//go:embed edit.md
var editDescription string

const editSchema = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "File to edit, relative to the workdir."},
    "old_string": {"type": "string", "description": "Exact text to replace, as it is in the file."},
    "new_string": {"type": "string", "description": "Text to put in its place."},
    "replace_all": {"type": "boolean", "description": "Replace every occurrence instead of exactly one. Default false."}
  },
  "required": ["path", "old_string", "new_string"],
  "additionalProperties": false
}`

// editMaxSize is the largest file edit loads.
const editMaxSize = 16 << 20

// Edit replaces exact text in a file.
type Edit struct{}

var _ tool.Mutator = Edit{}

type editInput struct {
	Path       string   `json:"path"`
	OldString  *string  `json:"old_string"`
	NewString  *string  `json:"new_string"`
	ReplaceAll flexBool `json:"replace_all"`
}

// Spec implements tool.Tool.
func (Edit) Spec() tool.Spec {
	return tool.Spec{Name: "edit", Description: editDescription, InputSchema: json.RawMessage(editSchema), Kind: tool.KindEdit}
}

// Paths implements tool.Mutator: the one file the call edits.
func (Edit) Paths(root *tool.Root, input json.RawMessage) ([]string, error) {
	in, err := parseEdit(input)
	return onePath(root, in.Path, err)
}

func parseEdit(input json.RawMessage) (editInput, error) {
	var in editInput
	if err := decode(input, &in); err != nil {
		return in, err
	}
	switch {
	case in.Path == "":
		return in, errors.New("path is required: the file to edit, relative to the workdir")
	case in.OldString == nil:
		return in, errors.New("old_string is required: the exact text to replace")
	case in.NewString == nil:
		return in, errors.New("new_string is required: the text to put in place of old_string (\"\" to delete it)")
	}
	return in, nil
}

// Run implements tool.Tool.
func (Edit) Run(ctx context.Context, call tool.Call) tool.Result {
	in, err := parseEdit(call.Input)
	if err != nil {
		return tool.Errorf("%s", err)
	}
	if ctx.Err() != nil {
		return tool.Errorf("edit cancelled; nothing was changed")
	}
	loc, err := locate(call.Root, in.Path)
	if err != nil {
		return tool.Errorf("%s", err)
	}
	fi, err := loc.FS.Stat(loc.Name)
	switch {
	case err != nil:
		r := statError(loc.Path, err)
		if strings.Contains(r.Output, "does not exist") {
			r.Output += "; to create a new file, use write"
		}
		return r
	case fi.IsDir():
		return tool.Errorf("%s is a directory; give the path of a file", loc.Path)
	case !fi.Mode().IsRegular():
		return tool.Errorf("%s is not a regular file (%s); edit only changes regular text files", loc.Path, fi.Mode().Type())
	case fi.Size() > editMaxSize:
		return tool.Errorf("%s is too large for edit (%s, the limit is %s); use bash (e.g. sed) for it", loc.Path, humanSize(fi.Size()), humanSize(editMaxSize))
	}
	data, _, err := loc.ReadRegular() // never blocks: a FIFO swapped in since the stat is refused
	if err != nil {
		return tool.Errorf("cannot read %s: %v", loc.Path, err)
	}
	if why := binaryReason(data, true); why != "" {
		return tool.Errorf("%s is a binary file (%s); edit only changes text", loc.Path, why)
	}
	rep, err := replace(string(data), *in.OldString, *in.NewString, bool(in.ReplaceAll))
	if err != nil {
		return tool.Errorf("%s: %s Nothing was changed.", loc.Path, err)
	}
	if err := loc.WriteFile([]byte(rep.out), keptMode(fi)); err != nil {
		return tool.Errorf("cannot write %s: %v", loc.Path, err)
	}
	var out strings.Builder
	fmt.Fprintf(&out, "edited %s: replaced %s", loc.Path, plural(rep.count, "occurrence"))
	if rep.crlf {
		out.WriteString(" (old_string and new_string were converted to the file's CRLF line endings)")
	}
	out.WriteString("\n")
	out.WriteString(resultDiff(loc.Path, string(data), rep.out))
	return tool.Result{Output: out.String()}
}
