package gcstart

import (
	"os"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// percent is the current GOGC (reading it means setting it; it is set
// back at once).
func percent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// TestRaise: the goal's floor is raised (GOGC 200 for 8 MiB), and GOGC is
// 100 again once a collection finds half of it live; until then it stays
// raised.
func TestRaise(t *testing.T) {
	t.Cleanup(func() { debug.SetGCPercent(100) })
	unsetGOGC(t)
	Raise(8 << 20)
	if p := percent(); p != 200 {
		t.Fatalf("GOGC after Raise(8 MiB) = %d, want 200", p)
	}
	runtime.GC()
	time.Sleep(20 * time.Millisecond)
	if p := percent(); p != 200 {
		t.Fatalf("GOGC after a collection of a small heap = %d, want 200 still", p)
	}
	live := make([][]byte, 0, 64)
	for range 64 {
		live = append(live, make([]byte, 128<<10)) // 8 MiB in all
	}
	deadline := time.Now().Add(10 * time.Second)
	for percent() != 100 {
		if time.Now().After(deadline) {
			t.Fatalf("GOGC still %d with %d MiB live after collections, want 100", percent(), len(live)*128>>10)
		}
		runtime.GC()
		time.Sleep(5 * time.Millisecond)
	}
	runtime.KeepAlive(live)
}

// TestRaiseLeavesGOGCSet: a GOGC in the environment is the person's
// choice, kept; so is a minimum not above the runtime's.
func TestRaiseLeavesGOGCSet(t *testing.T) {
	t.Cleanup(func() { debug.SetGCPercent(100) })
	t.Setenv("GOGC", "150")
	debug.SetGCPercent(150)
	Raise(8 << 20)
	if p := percent(); p != 150 {
		t.Fatalf("GOGC with GOGC=150 set = %d, want 150", p)
	}
	unsetGOGC(t)
	debug.SetGCPercent(100)
	Raise(4 << 20)
	if p := percent(); p != 100 {
		t.Fatalf("GOGC after Raise(4 MiB) = %d, want 100 (the runtime's own minimum)", p)
	}
}

// unsetGOGC removes GOGC from the environment for the rest of t.
func unsetGOGC(t *testing.T) {
	t.Helper()
	old, had := os.LookupEnv("GOGC")
	os.Unsetenv("GOGC")
	t.Cleanup(func() {
		if had {
			os.Setenv("GOGC", old)
		}
	})
}
