// Command lite-agent is a coding agent with durable sessions. Run
// `lite-agent --help` for its flags, or `lite-agent --demo` for an offline
// demo against the bundled fake model server.
//
// It links no terminal UI, so one-shot runs and inspection start fast and
// small; interactive runs on a terminal are handed to lite-agent-tui (the
// same command line with the full-screen client) when it is installed
// beside it, and use the line mode otherwise.
package main

import (
	"os"

	"github.com/lite-agent/lite-agent/cli"
	"github.com/lite-agent/lite-agent/internal/gcstart"
)

func main() {
	gcstart.Raise(gcstart.CommandGoal)
	os.Exit(cli.Command(nil))
}
