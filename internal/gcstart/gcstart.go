// Package gcstart gives a command's process a larger first heap goal, so a
// short run does not collect garbage while its heap is still small.
//
// The runtime's first heap goal is 4 MiB (at GOGC=100), and a collection
// runs when the heap nears it, whatever the live heap is. A lite-agent
// process resuming a 500-turn session allocates about 3 MiB (its saved
// state decoded, the request encoded), so it ran one collection for
// nothing it would free: 2.1 ms of its 16.7 ms CPU (perf stat, figures
// in README). Raising GOGC for the whole run would raise the heap
// of a long one by half again; this raises only the floor of the goal.
//
// It is for commands (package main), never for a library: how a host
// process collects garbage is the host's to choose.
package gcstart

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// CommandGoal is the smallest heap goal lite-agent and lite-agent-tui
// start with: a one-shot turn, the resume of a 500-turn session (about 3
// MiB) and --sessions on 10,000 sessions (5 MiB) allocate less, and
// collect no garbage.
const CommandGoal = 8 << 20

// runtimeMinimum is the runtime's smallest heap goal at GOGC=100; at
// GOGC=p it is runtimeMinimum*p/100.
const runtimeMinimum = 4 << 20

// Raise makes the heap goal at least minimum bytes (a multiple of 4 MiB)
// until the live heap reaches half of it, and is then GOGC=100 again: the
// goal is the larger of minimum and three times the live heap until then,
// and twice the live heap after. It does nothing when the GOGC environment
// variable is set (the person running the command chose) or when minimum
// is not above the runtime's own.
func Raise(minimum uint64) {
	if _, set := os.LookupEnv("GOGC"); set || minimum <= runtimeMinimum {
		return
	}
	debug.SetGCPercent(int(100 * minimum / runtimeMinimum))
	watch(minimum)
}

// watch checks the live heap after the next collection, and gives back
// GOGC=100 once it is at least half of minimum.
func watch(minimum uint64) {
	// A sentinel of 32 bytes: the tiny allocator, which may batch smaller
	// objects and never run their cleanups, is not used for it.
	s := new([4]uint64)
	runtime.AddCleanup(s, func(minimum uint64) {
		live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		metrics.Read(live)
		if live[0].Value.Kind() == metrics.KindUint64 && 2*live[0].Value.Uint64() >= minimum {
			debug.SetGCPercent(100)
			return
		}
		watch(minimum)
	}, minimum)
}
