package memory_test

import (
	"testing"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/checkpointtest"
	"github.com/lite-agent/lite-agent/checkpoint/memory"
)

// backend describes the memory store to the conformance suite. Every Open
// returns a new, empty store: nothing is shared between opens.
func backend() checkpointtest.Backend {
	return checkpointtest.Backend{
		Name:        "memory",
		NewLocation: func(tb testing.TB) string { return tb.Name() },
		Open:        func(string) (checkpoint.Checkpointer, error) { return memory.New(), nil },
	}
}

func TestMain(m *testing.M) { checkpointtest.Main(m, backend()) }

func TestConformance(t *testing.T) { checkpointtest.Run(t, backend()) }

func BenchmarkMemory(b *testing.B) { checkpointtest.Bench(b, backend()) }
