package main

import (
	"os/exec"
	"testing"

	"github.com/lite-agent/lite-agent/checkpoint/checkpointtest"
)

// BenchmarkProcessSearch10kx100: the whole `lite-agent --search` process
// (start, open the database read-only, query, print, exit) on a SQLite
// store of 10,000 sessions × 100 events in the workspace (the store of
// checkpointtest.BenchSearch; filling it takes minutes and is not timed):
// a word in one event of the million, and two words in every session
// (the newest 50 hits). Then `--doctor` on the same store.
func BenchmarkProcessSearch10kx100(b *testing.B) {
	bin := buildBinary(b)
	work, ns, db, store := workspaceStore(b)
	checkpointtest.FillSearch(b, store, ns, 10_000, 100)
	store.Close()
	for _, q := range []struct{ name, query string }{{"RareWord", "needleword"}, {"CommonWords", "refactor parser"}} {
		b.Run(q.name, func(b *testing.B) {
			measure(b, func(int) *exec.Cmd {
				return exec.Command(bin, "--workdir", work, "--session-db", db, "--search", q.query)
			})
		})
	}
	b.Run("Doctor", func(b *testing.B) {
		measure(b, func(int) *exec.Cmd {
			return exec.Command(bin, "--workdir", work, "--session-db", db, "--doctor")
		})
	})
}
