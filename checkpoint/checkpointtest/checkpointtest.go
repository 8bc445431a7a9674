// Package checkpointtest is the conformance suite every checkpoint backend
// passes. A backend's tests call Run (and, for persistent backends, RunCrash)
// from a test whose name contains "Conformance", and Main from TestMain so
// the suite can start child processes of the test binary.
package checkpointtest

import (
	"testing"

	"github.com/lite-agent/lite-agent/checkpoint"
)

// Backend tells the suite how to open one backend.
type Backend struct {
	// Name appears in messages.
	Name string
	// NewLocation returns a fresh, empty location for one test: a directory,
	// a database file path or a server URL. The suite may open it several
	// times, in this process and in child processes.
	NewLocation func(tb testing.TB) string
	// Open opens the store at a location.
	Open func(location string) (checkpoint.Checkpointer, error)
	// Persistent is set for backends whose data outlives Close and is shared
	// between processes; reopen, multi-process and crash tests need it.
	Persistent bool
	// MaxEventBytes is the backend's limit on one event's data, 0 if none.
	MaxEventBytes int
}
