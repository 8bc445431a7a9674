//go:build unix

package mcp

import (
	"errors"
	"os/exec"
	"syscall"
	"time"
)

const (
	termSignal = syscall.SIGTERM
	killSignal = syscall.SIGKILL
)

// setGroup puts the command in a process group of its own, so that stop
// reaches the processes it starts too.
func setGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// signalGroup sends sig to the command's process group; a group that is
// already gone is not an error.
func signalGroup(cmd *exec.Cmd, sig syscall.Signal) {
	_ = syscall.Kill(-cmd.Process.Pid, sig)
}

// waitGroupGone waits (up to a second) until no process of the command's
// group is left: a signal is delivered asynchronously. Zombies whose parent
// does not reap them count as left, hence the bound.
func waitGroupGone(cmd *exec.Cmd) {
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if err := syscall.Kill(-cmd.Process.Pid, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
	}
}
