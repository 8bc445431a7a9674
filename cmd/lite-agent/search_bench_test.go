package main

import (
	"context"
	"os/exec"
	"testing"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/checkpointtest"
	"github.com/lite-agent/lite-agent/checkpoint/postgres"
	"github.com/lite-agent/lite-agent/tool"
)

// BenchmarkProcessSearch10kx100: the whole `lite-agent --search` process
// (start, open the database read-only, query, print, exit) on a SQLite
// store of 10,000 sessions × 100 events in the workspace (the store of
// checkpointtest.BenchSearch; filling it takes minutes and is not timed):
// a word in one event of the million, and two words in every session
// (the newest 50 hits). Then `--doctor` on the same store.
func BenchmarkProcessSearch10kx100(b *testing.B) {
	work, ns, db, store := workspaceStore(b)
	benchProcessSearch(b, work, ns, db, store)
}

// BenchmarkProcessSearch10kx100Postgres is BenchmarkProcessSearch10kx100
// on a PostgreSQL schema of the test server (LITE_AGENT_TEST_POSTGRES).
func BenchmarkProcessSearch10kx100Postgres(b *testing.B) {
	db := postgresDB(b)
	work := b.TempDir()
	ns, err := tool.Canonical(work)
	if err != nil {
		b.Fatal(err)
	}
	store, err := postgres.Open(context.Background(), db, nil)
	if err != nil {
		b.Fatal(err)
	}
	benchProcessSearch(b, work, ns, db, store)
}

// benchProcessSearch fills store (the database db, for the workdir work
// of namespace ns), closes it and measures the processes.
func benchProcessSearch(b *testing.B, work, ns, db string, store checkpoint.Checkpointer) {
	bin := buildBinary(b)
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
