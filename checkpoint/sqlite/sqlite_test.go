package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/checkpointtest"
	"github.com/lite-agent/lite-agent/checkpoint/sqlite"
)

// backend describes the SQLite store to the conformance suite: a location
// is a database file path in a fresh temporary directory.
func backend() checkpointtest.Backend {
	return checkpointtest.Backend{
		Name:        "sqlite",
		NewLocation: func(tb testing.TB) string { return filepath.Join(tb.TempDir(), "sessions.db") },
		Open: func(loc string) (checkpoint.Checkpointer, error) {
			return sqlite.Open(loc, nil)
		},
		Persistent:    true,
		MaxEventBytes: sqlite.DefaultMaxEventBytes,
		Damage:        damage,
		StoreSummary:  storeSummary,
	}
}

// memoryBackend is the same store on ":memory:": every Open is a new,
// empty database.
func memoryBackend() checkpointtest.Backend {
	return checkpointtest.Backend{
		Name:          "sqlite-memory",
		NewLocation:   func(testing.TB) string { return sqlite.Memory },
		Open:          func(loc string) (checkpoint.Checkpointer, error) { return sqlite.Open(loc, nil) },
		MaxEventBytes: sqlite.DefaultMaxEventBytes,
	}
}

func TestMain(m *testing.M) { checkpointtest.Main(m, backend()) }

func TestConformance(t *testing.T) { checkpointtest.Run(t, backend()) }

func TestMemoryConformance(t *testing.T) { checkpointtest.Run(t, memoryBackend()) }

func TestCrashConformance(t *testing.T) { checkpointtest.RunCrash(t, backend(), 50) }

func BenchmarkSQLite(b *testing.B) { checkpointtest.Bench(b, backend()) }
