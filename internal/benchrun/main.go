// Command benchrun runs a command and prints its wall time, CPU time and
// peak resident memory, for the whole-process benchmarks. They cannot take
// the peak from their own child: Go starts children with vfork, and Linux
// counts the parent's resident memory at the time of the exec as the
// child's peak, so a benchmark process of 70 MB reported every child at 70
// MB or more. benchrun is small, so a command it starts is measured alone.
//
//	benchrun CMD [ARG...]
//
// The command's output is passed through; benchrun's last line on
// standard error is "benchrun: wall-ns=N maxrss-kib=M cpu-ns=C
// minflt=F", C being the command's user plus system CPU time (its own
// work, which a loaded machine inflates far less than the wall) and F its
// minor page faults (each a few microseconds under this machine's
// hypervisor, so a count that says where start-up time goes). It exits
// with the command's status.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: benchrun CMD [ARG...]")
		os.Exit(2)
	}
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	t0 := time.Now()
	err := cmd.Run()
	wall := time.Since(t0)
	var rss, minflt int64
	var cpu time.Duration
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss, minflt = ru.Maxrss, ru.Minflt
		cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	fmt.Fprintf(os.Stderr, "benchrun: wall-ns=%d maxrss-kib=%d cpu-ns=%d minflt=%d\n", wall.Nanoseconds(), rss, cpu.Nanoseconds(), minflt)
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			os.Exit(ee.ExitCode())
		}
		fmt.Fprintln(os.Stderr, "benchrun:", err)
		os.Exit(1)
	}
}
