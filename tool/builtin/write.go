package builtin

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/lite-agent/lite-agent/tool"
)

//go:embed write.md
var writeDescription string

const writeSchema = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "File to write, relative to the workdir."},
    "content": {"type": "string", "description": "The complete new content of the file."}
  },
  "required": ["path", "content"],
  "additionalProperties": false
}`

// newFileMode is the mode of files the tools create.
const newFileMode os.FileMode = 0o644

// Write creates or replaces a whole file.
type Write struct{}

var _ tool.Mutator = Write{}

type writeInput struct {
	Path    string  `json:"path"`
	Content *string `json:"content"`
}

// Spec implements tool.Tool.
func (Write) Spec() tool.Spec {
	return tool.Spec{Name: "write", Description: writeDescription, InputSchema: json.RawMessage(writeSchema), Kind: tool.KindEdit}
}

// Paths implements tool.Mutator: the one file the call writes.
func (Write) Paths(root *tool.Root, input json.RawMessage) ([]string, error) {
	in, err := parseWrite(input)
	return onePath(root, in.Path, err)
}

func parseWrite(input json.RawMessage) (writeInput, error) {
	var in writeInput
	if err := decode(input, &in); err != nil {
		return in, err
	}
	if in.Path == "" {
		return in, errors.New("path is required: the file to write, relative to the workdir")
	}
	if in.Content == nil {
		return in, errors.New("content is required: the complete new content of the file (use \"\" for an empty file)")
	}
	return in, nil
}

// Run implements tool.Tool.
func (Write) Run(ctx context.Context, call tool.Call) tool.Result {
	in, err := parseWrite(call.Input)
	if err != nil {
		return tool.Errorf("%s", err)
	}
	if ctx.Err() != nil {
		return tool.Errorf("write cancelled; nothing was written")
	}
	loc, err := locate(call.Root, in.Path)
	if err != nil {
		return tool.Errorf("%s", err)
	}
	mode, existed, res := existingMode(loc)
	if res != nil {
		return *res
	}
	_, old, hadText := previousText(call.Root, in.Path)
	if err := loc.WriteFile([]byte(*in.Content), mode); err != nil {
		return tool.Errorf("cannot write %s: %v", loc.Path, err)
	}
	verb := "wrote"
	if !existed {
		verb = "created"
	}
	out := fmt.Sprintf("%s %s (%s, %s)", verb, loc.Path, plural(len(*in.Content), "byte"), plural(countTextLines(*in.Content), "line"))
	if hadText {
		out += "\n" + resultDiff(loc.Path, old, *in.Content)
	}
	return tool.Result{Output: out}
}

// existingMode returns the permission bits of the file at loc, or
// newFileMode if there is none. A non-nil Result is an error for the model.
func existingMode(loc tool.Loc) (os.FileMode, bool, *tool.Result) {
	fi, err := loc.FS.Stat(loc.Name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return newFileMode, false, nil
	case err != nil:
		r := tool.Errorf("cannot stat %s: %v", loc.Path, err)
		return 0, false, &r
	case fi.IsDir():
		r := tool.Errorf("%s is a directory; give the path of a file inside it", loc.Path)
		return 0, false, &r
	case !fi.Mode().IsRegular():
		r := tool.Errorf("%s is not a regular file (%s); only regular files can be written", loc.Path, fi.Mode().Type())
		return 0, false, &r
	}
	return keptMode(fi), true, nil
}

// keptMode is the part of an existing file's mode a rewrite keeps.
func keptMode(fi fs.FileInfo) os.FileMode {
	return fi.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
}

// countTextLines counts lines the way an editor shows them: a trailing
// newline does not start another line.
func countTextLines(s string) int {
	if s == "" {
		return 0
	}
	n := strings.Count(s, "\n")
	if !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}
