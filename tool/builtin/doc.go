// Package builtin holds the tools lite-agent gives the model: read, write,
// edit, glob, grep, ls and bash. Each tool is one file with its JSON Schema
// and its description for the model (an embedded .md file of the same name).
//
// Every file access goes through the call's tool.Root: Root.Locate checks
// and normalises the path, and the os.Root it returns does the actual open,
// read, write or mkdir, so a symlink swapped in after the check still cannot
// lead outside the workdir. Paths are reported to the model as Locate
// returns them: workdir-relative and slash-separated, or absolute inside a
// directory the user allowed.
//
// Failures the model should read (a missing file, an ambiguous edit, a bad
// regular expression) come back as tool.Result values with IsError set, with
// a message that says what to do next; Run never panics on bad input.
//
// write and edit implement tool.Mutator so the agent can snapshot the file
// before it changes; both write through tool.Loc.WriteFile (a synced
// temporary file renamed over the old one), keeping the file's mode. bash runs a shell command in its own session and
// process group, which it stops (SIGTERM, then SIGKILL) on timeout,
// cancellation, or when the command leaves background processes behind; its
// results are marked Untracked. Its default environment leaves out the
// model API keys (HiddenEnv). bash needs a Unix system.
package builtin
