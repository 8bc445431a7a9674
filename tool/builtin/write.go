package builtin

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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

// Modes for files and directories the tools create.
const (
	newFileMode os.FileMode = 0o644
	newDirMode  os.FileMode = 0o755
)

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
	if err != nil {
		return nil, err
	}
	loc, err := locate(root, in.Path)
	if err != nil {
		return nil, err
	}
	return []string{loc.Path}, nil
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
	if !existed {
		if dir := filepath.Dir(loc.Name); dir != "." {
			if err := loc.FS.MkdirAll(dir, newDirMode); err != nil {
				return tool.Errorf("cannot create the parent directories of %s: %v", loc.Path, err)
			}
		}
	}
	if err := writeFile(loc, []byte(*in.Content), mode); err != nil {
		return tool.Errorf("cannot write %s: %v", loc.Path, err)
	}
	verb := "wrote"
	if !existed {
		verb = "created"
	}
	return tool.Result{Output: fmt.Sprintf("%s %s (%s, %s)", verb, loc.Path, plural(len(*in.Content), "byte"), plural(countTextLines(*in.Content), "line"))}
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

// writeFile replaces the file at loc with data: a temporary file beside it,
// synced, given mode, then renamed over it, so a crash or a concurrent
// reader never sees half a file. Everything goes through loc.FS. If the
// directory does not allow creating the temporary file, the file is
// rewritten in place instead.
func writeFile(loc tool.Loc, data []byte, mode os.FileMode) error {
	dir, base := filepath.Split(loc.Name)
	tmp := filepath.Join(dir, "."+base+".lite-agent-"+strings.ToLower(rand.Text()[:10])+".tmp")
	f, err := loc.FS.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrPermission) {
		return writeInPlace(loc, data, mode)
	}
	if err != nil {
		return err
	}
	err = writeSyncChmod(f, data, mode)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = loc.FS.Rename(tmp, loc.Name)
	}
	if err != nil {
		loc.FS.Remove(tmp)
		return err
	}
	syncDir(loc.FS, dir)
	return nil
}

func writeInPlace(loc tool.Loc, data []byte, mode os.FileMode) error {
	// The file may belong to someone else: keep its mode as it is.
	f, err := loc.FS.OpenFile(loc.Name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func writeSyncChmod(f *os.File, data []byte, mode os.FileMode) error {
	if _, err := f.Write(data); err != nil {
		return err
	}
	// Chmod on the open file, not by name: no link can be swapped in.
	if err := f.Chmod(mode); err != nil {
		return err
	}
	return f.Sync()
}

// syncDir makes a rename in dir durable; best effort, as some filesystems
// refuse to sync directories.
func syncDir(fsys *os.Root, dir string) {
	if dir == "" {
		dir = "."
	}
	if d, err := fsys.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
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
