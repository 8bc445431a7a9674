package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/lite-agent/lite-agent/session"
	"github.com/lite-agent/lite-agent/tool/diff"
)

// diffShown is how many lines of a diff the line mode prints.
const diffShown = 40

// printResult prints a finished tool call in the text output: a mark and
// the first line of its output, then, for a write or an edit, the diff its
// output ends with, numbered.
func printResult(w io.Writer, f session.ToolFinished) {
	mark := "✓"
	if f.IsError {
		mark = "✗"
	}
	head, rest, _ := strings.Cut(f.Output, "\n")
	if f.IsError || (f.Tool != "edit" && f.Tool != "write") || !strings.HasPrefix(rest, "--- ") {
		fmt.Fprintf(w, "  %s %s\n", mark, short(f.Output, 100))
		return
	}
	fmt.Fprintf(w, "  %s %s\n", mark, short(head, 100))
	printDiff(w, rest)
}

// startedArgs is what the text output shows of a starting call's input:
// the files for a write or an edit (their diff follows), else the input.
func startedArgs(s session.ToolStarted) string {
	if (s.Tool == "edit" || s.Tool == "write") && len(s.Paths) > 0 {
		return strings.Join(s.Paths, ", ")
	}
	return short(string(s.Input), 100)
}

// printDiff prints a unified diff numbered and indented.
func printDiff(w io.Writer, unified string) {
	for line := range strings.Lines(diff.Numbered(unified, diffShown)) {
		fmt.Fprintf(w, "    %s", line)
	}
}
