package sqlite_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/checkpointtest"
	"github.com/lite-agent/lite-agent/checkpoint/sqlite"
	"github.com/lite-agent/lite-agent/session"
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
		Quarantined:   quarantined,
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

// quarantined reads the JSON Lines file a repair moved the damaged tail of
// session id, from seq from on, into (events whose data is not JSON with
// their bytes as data_bytes).
func quarantined(tb testing.TB, c checkpoint.Checkpointer, _, id string, from int64) []session.Event {
	tb.Helper()
	b, err := os.ReadFile(c.(*sqlite.Store).QuarantinePath(id, from))
	if err != nil {
		tb.Fatal(err)
	}
	var out []session.Event
	for line := range bytes.Lines(b) {
		var e session.Event
		var raw struct {
			DataBytes []byte `json:"data_bytes"`
		}
		if err := json.Unmarshal(line, &e); err != nil {
			tb.Fatalf("quarantined event %q: %v", line, err)
		}
		if err := json.Unmarshal(line, &raw); err != nil {
			tb.Fatal(err)
		}
		if raw.DataBytes != nil {
			e.Data = raw.DataBytes // data that is not JSON, byte for byte
		}
		out = append(out, e)
	}
	return out
}
