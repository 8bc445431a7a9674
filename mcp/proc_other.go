//go:build !unix

package mcp

import (
	"os"
	"os/exec"
)

var (
	termSignal = os.Kill
	killSignal = os.Kill
)

// setGroup does nothing where there are no process groups.
func setGroup(*exec.Cmd) {}

// signalGroup kills the server process itself: without process groups its
// children are not reached.
func signalGroup(cmd *exec.Cmd, _ os.Signal) { _ = cmd.Process.Kill() }

// waitGroupGone has no group to wait for.
func waitGroupGone(*exec.Cmd) {}
