package builtin

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/lite-agent/lite-agent/tool"
)

//go:embed read.md
var readDescription string

const readSchema = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "File to read, relative to the workdir."},
    "offset": {"type": "integer", "minimum": 1, "description": "1-based line number to start at. Default 1."},
    "limit": {"type": "integer", "minimum": 1, "maximum": 2000, "description": "Number of lines to show. Default and maximum 2000."}
  },
  "required": ["path"],
  "additionalProperties": false
}`

// Limits of one read call.
const (
	readMaxLines   = 2000
	readMaxBytes   = 256 << 10
	readMaxLineLen = 2000
)

// Read shows a text file with line numbers.
type Read struct{}

type readInput struct {
	Path   string  `json:"path"`
	Offset flexInt `json:"offset"`
	Limit  flexInt `json:"limit"`
}

// Spec implements tool.Tool.
func (Read) Spec() tool.Spec {
	return tool.Spec{Name: "read", Description: readDescription, InputSchema: json.RawMessage(readSchema), Kind: tool.KindRead}
}

// Run implements tool.Tool.
func (Read) Run(ctx context.Context, call tool.Call) tool.Result {
	var in readInput
	if err := decode(call.Input, &in); err != nil {
		return tool.Errorf("%s", err)
	}
	if in.Path == "" {
		return tool.Errorf("path is required: the file to read, relative to the workdir")
	}
	if in.Offset < 0 || in.Limit < 0 {
		return tool.Errorf("offset and limit must be positive (offset is a 1-based line number)")
	}
	offset, limit := max(int(in.Offset), 1), int(in.Limit)
	if limit == 0 || limit > readMaxLines {
		limit = readMaxLines
	}
	loc, err := locate(call.Root, in.Path)
	if err != nil {
		return tool.Errorf("%s", err)
	}
	fi, err := loc.FS.Stat(loc.Name)
	if err != nil {
		return statError(loc.Path, err)
	}
	if fi.IsDir() {
		return tool.Errorf("%s is a directory; use ls to list it, or glob to find files in it", loc.Path)
	}
	if !fi.Mode().IsRegular() {
		return tool.Errorf("%s is not a regular file (%s); read only shows regular text files", loc.Path, fi.Mode().Type())
	}
	f, _, err := loc.OpenRegular() // never blocks: a FIFO swapped in since the stat is refused
	if err != nil {
		return statError(loc.Path, err)
	}
	defer f.Close()
	head, whole, complete, err := sniff(f)
	if err != nil {
		return tool.Errorf("cannot read %s: %v", loc.Path, err)
	}
	if why := binaryReason(head, complete); why != "" {
		return tool.Errorf("%s is a binary file (%s); read only shows text. Inspect it with bash instead, e.g. `xxd %s | head -50` or `file %s`", loc.Path, why, loc.Path, loc.Path)
	}
	if len(head) == 0 {
		return tool.Result{Output: fmt.Sprintf("[%s is empty]", loc.Path)}
	}

	var out strings.Builder
	lr := newLineReader(whole, readMaxLineLen)
	lineNo, first, last, cutLines := 0, 0, 0, 0
	stoppedByBytes := false
	for {
		if lineNo%1024 == 0 && ctx.Err() != nil {
			return tool.Errorf("read cancelled")
		}
		line, full, err := lr.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return tool.Errorf("cannot read %s: %v", loc.Path, err)
		}
		lineNo++
		if lineNo < offset {
			continue
		}
		text := strings.ToValidUTF8(string(line), "\uFFFD")
		if full > len(line) {
			text += fmt.Sprintf(" … [line cut: %d of %d bytes shown]", len(line), full)
			cutLines++
		}
		entry := fmt.Sprintf("%6d\t%s\n", lineNo, text)
		if out.Len()+len(entry) > readMaxBytes && last > 0 {
			stoppedByBytes = true
			break
		}
		out.WriteString(entry)
		if first == 0 {
			first = lineNo
		}
		last = lineNo
		if last-first+1 >= limit {
			break
		}
	}
	// Count what is left: the line that did not fit was read but not shown.
	rest, err := countLines(lr.r, ctx.Err)
	if err != nil {
		return tool.Errorf("read cancelled")
	}
	total := lineNo + rest
	if first == 0 {
		return tool.Errorf("offset %d is past the end of %s, which has %s; use an offset between 1 and %d", offset, loc.Path, plural(total, "line"), total)
	}
	if cutLines > 0 {
		fmt.Fprintf(&out, "[%s longer than %d bytes cut; use grep or bash to see them whole]\n", plural(cutLines, "line"), readMaxLineLen)
	}
	if last < total {
		reason := ""
		if stoppedByBytes {
			reason = fmt.Sprintf(" (output capped at %d KiB)", readMaxBytes>>10)
		}
		fmt.Fprintf(&out, "[showing lines %d-%d of %d%s; read on with offset=%d]\n", first, last, total, reason, last+1)
	}
	return tool.Result{Output: strings.TrimSuffix(out.String(), "\n")}
}

// statError words a failed stat or open of a path for the model.
func statError(p string, err error) tool.Result {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return tool.Errorf("%s does not exist; check the path (ls lists a directory, glob finds files by name)", p)
	case errors.Is(err, fs.ErrPermission):
		return tool.Errorf("permission denied on %s", p)
	}
	return tool.Errorf("cannot open %s: %v", p, err)
}
