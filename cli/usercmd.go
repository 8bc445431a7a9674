package cli

import (
	"fmt"
	"io"
	"strings"

	cfgpkg "github.com/lite-agent/lite-agent/config"
	"github.com/lite-agent/lite-agent/usercmd"
)

// builtinCommands are the line mode's own commands; a user command may
// not take their names.
var builtinCommands = []string{"exit", "quit", "help", "new", "sessions", "checkpoints", "rewind", "fork", "compact", "model", "mcp"}

// userCommands reads the user's slash commands for the run's workdir,
// from the project's .lite-agent/commands and the user's config
// directory, with notes on the files that are not used.
func (c *config) userCommands(workdir string) ([]usercmd.Command, []string) {
	user := cfgpkg.UserFile()
	if c.settings != nil {
		user = c.settings.UserFile
	}
	return usercmd.Load(usercmd.Dirs(workdir, user), builtinCommands)
}

// printUserCommands lists the user's commands for /help.
func printUserCommands(w io.Writer, cmds []usercmd.Command, notes []string) {
	if len(cmds) > 0 {
		fmt.Fprintln(w, "Your commands (.lite-agent/commands/*.md of the project, then of your config directory):")
	}
	for _, c := range cmds {
		name := "/" + c.Name
		if c.ArgumentHint != "" {
			name += " " + c.ArgumentHint
		}
		fmt.Fprintf(w, "  %-19s  %s (%s)\n", name, c.Description, c.Scope)
	}
	printNotes(w, notes)
}

func printNotes(w io.Writer, notes []string) {
	for _, n := range notes {
		fmt.Fprintln(w, "note:", n)
	}
}

// splitCommand splits a command line into its name (without the slash)
// and the text after it.
func splitCommand(line string) (name, args string) {
	line = strings.TrimPrefix(strings.TrimSpace(line), "/")
	name, args, _ = strings.Cut(line, " ")
	return name, strings.TrimSpace(args)
}
