package shell

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"syscall"
)

// GroupAlive reports whether process group pgid has a process that is not a
// zombie. kill(2) counts zombies, which linger where PID 1 does not reap
// orphans (some containers), so the process table decides.
func GroupAlive(pgid int) bool {
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

// Exited reports whether process pid has exited: there is no such process,
// or it is a zombie waiting for a parent (PID 1 in some containers) to reap
// it.
func Exited(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, os.ErrNotExist) {
		return true
	}
	if err == nil {
		state, _, ok := parseStat(stat)
		return ok && (state == 'Z' || state == 'X')
	}
	return errors.Is(syscall.Kill(pid, 0), errNoProcess)
}
