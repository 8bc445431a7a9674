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

// firstHeapGoal is the smallest heap goal of the process (package
// gcstart): a one-shot turn, the resume of a 500-turn session (about 3
// MiB) and --sessions on 10,000 sessions (5 MiB) allocate less, and
// collect no garbage.
const firstHeapGoal = 8 << 20

func main() {
	gcstart.Raise(firstHeapGoal)
	os.Exit(cli.Command(nil))
}
