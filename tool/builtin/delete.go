package builtin

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"

	"github.com/lite-agent/lite-agent/tool"
)

//go:embed delete.md
var deleteDescription string

const deleteSchema = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "File to delete, relative to the workdir."}
  },
  "required": ["path"],
  "additionalProperties": false
}`

// Delete removes one file. Unlike rm in bash, it names the file, so the
// agent snapshots it and a restore can bring it back.
type Delete struct{}

var _ tool.Mutator = Delete{}

type deleteInput struct {
	Path string `json:"path"`
}

// Spec implements tool.Tool.
func (Delete) Spec() tool.Spec {
	return tool.Spec{Name: "delete", Description: deleteDescription, InputSchema: json.RawMessage(deleteSchema), Kind: tool.KindEdit}
}

func parseDelete(input json.RawMessage) (deleteInput, error) {
	var in deleteInput
	if err := decode(input, &in); err != nil {
		return in, err
	}
	if in.Path == "" {
		return in, errors.New("path is required: the file to delete, relative to the workdir")
	}
	return in, nil
}

// Paths implements tool.Mutator: the one file the call deletes.
func (Delete) Paths(root *tool.Root, input json.RawMessage) ([]string, error) {
	in, err := parseDelete(input)
	return onePath(root, in.Path, err)
}

// Run implements tool.Tool.
func (Delete) Run(ctx context.Context, call tool.Call) tool.Result {
	in, err := parseDelete(call.Input)
	if err != nil {
		return tool.Errorf("%s", err)
	}
	if ctx.Err() != nil {
		return tool.Errorf("delete cancelled; nothing was deleted")
	}
	loc, err := locate(call.Root, in.Path)
	if err != nil {
		return tool.Errorf("%s", err)
	}
	fi, err := loc.FS.Lstat(loc.Name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return tool.Errorf("%s does not exist; nothing to delete", loc.Path)
	case err != nil:
		return tool.Errorf("cannot stat %s: %v", loc.Path, err)
	case fi.IsDir():
		return tool.Errorf("%s is a directory; delete only removes files (use bash for directories, which cannot be rewound)", loc.Path)
	case !fi.Mode().IsRegular() && fi.Mode()&fs.ModeSymlink == 0:
		return tool.Errorf("%s is not a regular file (%s); delete only removes regular files (use bash for others, which cannot be rewound)", loc.Path, fi.Mode().Type())
	}
	if err := loc.FS.Remove(loc.Name); err != nil {
		return tool.Errorf("cannot delete %s: %v", loc.Path, err)
	}
	return tool.Result{Output: fmt.Sprintf("deleted %s", loc.Path)}
}
