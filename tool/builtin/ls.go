package builtin

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/lite-agent/lite-agent/tool"
)

//go:embed ls.md
var lsDescription string

const lsSchema = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "Directory to list, relative to the workdir. Default: the workdir."}
  },
  "additionalProperties": false
}`

// lsMaxEntries caps the entries ls shows.
const lsMaxEntries = 1000

// LS lists a directory.
type LS struct{}

type lsInput struct {
	Path string `json:"path"`
}

// Spec implements tool.Tool.
func (LS) Spec() tool.Spec {
	return tool.Spec{Name: "ls", Description: lsDescription, InputSchema: json.RawMessage(lsSchema), Kind: tool.KindRead}
}

// Run implements tool.Tool.
func (LS) Run(ctx context.Context, call tool.Call) tool.Result {
	var in lsInput
	if err := decode(call.Input, &in); err != nil {
		return tool.Errorf("%s", err)
	}
	if in.Path == "" {
		in.Path = "."
	}
	loc, err := locate(call.Root, in.Path)
	if err != nil {
		return tool.Errorf("%s", err)
	}
	fi, err := loc.FS.Stat(loc.Name)
	if err != nil {
		return statError(loc.Path, err)
	}
	if !fi.IsDir() {
		return tool.Errorf("%s is a file (%s bytes), not a directory; use read to see its content", loc.Path, humanSize(fi.Size()))
	}
	entries, err := fs.ReadDir(loc.FS.FS(), filepath.ToSlash(loc.Name))
	if err != nil {
		return tool.Errorf("cannot list %s: %v", loc.Path, err)
	}
	if ctx.Err() != nil {
		return tool.Errorf("ls cancelled")
	}
	var out strings.Builder
	fmt.Fprintf(&out, "%s/ (%s)\n", strings.TrimSuffix(loc.Path, "/"), plural(len(entries), "entry"))
	for i, e := range entries {
		if i == lsMaxEntries {
			fmt.Fprintf(&out, "[showing %d of %d entries; use glob to narrow down]\n", lsMaxEntries, len(entries))
			break
		}
		name := e.Name()
		size := ""
		switch t := e.Type(); {
		case t.IsDir():
			name += "/"
		case t&fs.ModeSymlink != 0:
			target, err := loc.FS.Readlink(filepath.Join(loc.Name, e.Name()))
			if err != nil {
				target = "?"
			}
			name += " -> " + target
		default:
			if info, err := e.Info(); err == nil {
				size = humanSize(info.Size())
			}
			if !t.IsRegular() {
				name += " [" + t.String() + "]"
			}
		}
		fmt.Fprintf(&out, "%7s  %s\n", size, name)
	}
	if len(entries) == 0 {
		out.WriteString("(empty)\n")
	}
	return tool.Result{Output: strings.TrimSuffix(out.String(), "\n")}
}
