package cli

import (
	"os"
	"testing"

	"github.com/lite-agent/lite-agent/sandbox"
)

// TestMain lets this test binary act as the sandbox launcher: runs with
// --allow bash confine their commands by re-executing it.
func TestMain(m *testing.M) {
	sandbox.Launch()
	os.Exit(m.Run())
}
