package builtin

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"syscall"
)

// groupAlive reports whether process group pgid has a process that is not a
// zombie. kill(2) counts zombies, which linger where PID 1 does not reap
// orphans (some containers), so the process table decides.
func groupAlive(pgid int) bool {
	if err := syscall.Kill(-pgid, 0); errors.Is(err, errNoProcess) {
		return false
	}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	for _, p := range procs {
		if p.Name()[0] < '0' || p.Name()[0] > '9' {
			continue
		}
		stat, err := os.ReadFile("/proc/" + p.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		state, pg, ok := parseStat(stat)
		if ok && pg == pgid && state != 'Z' && state != 'X' {
			return true
		}
	}
	return false
}

// parseStat reads the state and the process group from /proc/PID/stat:
// "pid (comm) state ppid pgrp ...", where comm may hold spaces and ')'.
func parseStat(stat []byte) (state byte, pgrp int, ok bool) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := bytes.Fields(stat[i+1:])
	if len(f) < 3 || len(f[0]) != 1 {
		return 0, 0, false
	}
	pg, err := strconv.Atoi(string(f[2]))
	if err != nil {
		return 0, 0, false
	}
	return f[0][0], pg, true
}
