// Package mcptest gives tests the MCP servers they run against: the
// project's own test server (built from ./mcptestserver), and the npm
// servers CI installs (@modelcontextprotocol/server-everything and
// server-filesystem), found through LITE_AGENT_TEST_MCP_NPM.
package mcptest

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// Server builds the test server once per test binary and returns its path.
func Server(tb testing.TB) string {
	tb.Helper()
	buildOnce.Do(func() {
		_, here, _, _ := runtime.Caller(0)
		buildDir, buildErr = os.MkdirTemp("", "mcptestserver-")
		if buildErr != nil {
			return
		}
		out, err := exec.Command("go", "build", "-o", buildDir, filepath.Join(filepath.Dir(here), "mcptestserver")).CombinedOutput()
		if err != nil {
			buildErr = &buildError{err: err, out: string(out)}
		}
	})
	if buildErr != nil {
		tb.Fatalf("build mcptestserver: %v", buildErr)
	}
	return filepath.Join(buildDir, "mcptestserver")
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return e.err.Error() + ": " + e.out }

// EnvNPM names the directory the npm servers are installed in (with
// npm install --prefix DIR); .ci/run sets it.
const EnvNPM = "LITE_AGENT_TEST_MCP_NPM"

// NPMServer returns the path of an installed npm server's command (for
// example "mcp-server-everything"), or skips the test saying how to
// install it.
func NPMServer(tb testing.TB, command string) string {
	tb.Helper()
	dir := os.Getenv(EnvNPM)
	if dir == "" {
		tb.Skipf("%s is not set: install the servers with npm install --prefix DIR @modelcontextprotocol/server-everything @modelcontextprotocol/server-filesystem and set %s=DIR", EnvNPM, EnvNPM)
	}
	p := filepath.Join(dir, "node_modules", ".bin", command)
	if _, err := os.Stat(p); err != nil {
		tb.Fatalf("%s=%s but %s is not there: %v", EnvNPM, dir, p, err)
	}
	return p
}
