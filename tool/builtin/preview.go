package builtin

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/lite-agent/lite-agent/tool"
	"github.com/lite-agent/lite-agent/tool/diff"
)

var (
	_ tool.Previewer = Edit{}
	_ tool.Previewer = Write{}
)

// Limits of the diff a result shows the model.
const (
	resultDiffLines = 200
	resultDiffBytes = 16 << 10
)

// resultDiff is the unified diff an edit or write result ends with, cut
// to resultDiffLines lines or resultDiffBytes bytes with a note.
func resultDiff(path, old, new string) string {
	u := diff.Unified(path, old, new)
	if u == "" {
		return "(no change: the file already had this content)"
	}
	var b strings.Builder
	n, total := 0, strings.Count(u, "\n")
	for line := range strings.Lines(u) {
		if n == resultDiffLines || b.Len()+len(line) > resultDiffBytes {
			fmt.Fprintf(&b, "[diff cut: %d more lines; read the file to see the rest]\n", total-n)
			break
		}
		b.WriteString(line)
		n++
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// Preview implements tool.Previewer: the diff the edit would make.
func (Edit) Preview(root *tool.Root, input json.RawMessage) string {
	in, err := parseEdit(input)
	if err != nil {
		return ""
	}
	loc, old, ok := previousText(root, in.Path)
	if !ok {
		return ""
	}
	rep, err := replace(old, *in.OldString, *in.NewString, bool(in.ReplaceAll))
	if err != nil {
		return ""
	}
	return diff.Unified(loc.Path, old, rep.out)
}

// Preview implements tool.Previewer: the diff the write would make, against
// the file there now (or against nothing, for a new file).
func (Write) Preview(root *tool.Root, input json.RawMessage) string {
	in, err := parseWrite(input)
	if err != nil {
		return ""
	}
	loc, old, ok := previousText(root, in.Path)
	if !ok && loc.Path == "" {
		return ""
	}
	return diff.Unified(loc.Path, old, *in.Content)
}

// previousText reads the text file at p for a diff. ok is false when there
// is no such text file (missing, binary, too large, not regular); loc is
// set whenever p itself is acceptable.
func previousText(root *tool.Root, p string) (loc tool.Loc, text string, ok bool) {
	loc, err := locate(root, p)
	if err != nil {
		return tool.Loc{}, "", false
	}
	fi, err := loc.FS.Stat(loc.Name)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > editMaxSize {
		return loc, "", false
	}
	data, err := loc.FS.ReadFile(loc.Name)
	if err != nil || binaryReason(data, true) != "" {
		return loc, "", false
	}
	return loc, string(data), true
}
