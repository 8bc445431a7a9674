package checkpointtest

import (
	"fmt"
	"os"
	"testing"
)

// Environment variables a parent test sets to make the test binary play a
// child's role instead of running tests.
const (
	envRole     = "LITEAGENT_CHECKPOINTTEST_ROLE"
	envLocation = "LITEAGENT_CHECKPOINTTEST_LOCATION"
	envSession  = "LITEAGENT_CHECKPOINTTEST_SESSION"
	envArg      = "LITEAGENT_CHECKPOINTTEST_ARG"
)

// Main must be called from the backend test package's TestMain:
//
//	func TestMain(m *testing.M) { checkpointtest.Main(m, backend()) }
//
// In a child process started by the suite (the test binary re-executed with
// the suite's environment variables) it performs the child's role with
// b.Open and exits; otherwise it runs m.Run() and exits with its code.
func Main(m *testing.M, b Backend) {
	role := os.Getenv(envRole)
	if role == "" {
		os.Exit(m.Run())
	}
	if err := runChild(role, b); err != nil {
		fmt.Fprintf(os.Stderr, "checkpointtest child %s: %v\n", role, err)
		os.Exit(2)
	}
	os.Exit(0)
}

// runChild performs one child role.
func runChild(role string, b Backend) error {
	switch role {
	default:
		return fmt.Errorf("unknown role %q", role)
	}
}
