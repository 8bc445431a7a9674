//go:build unix

package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/lite-agent/lite-agent/internal/fakemodel"
)

// TestLiveToolSeenFromAnotherProcess: while one process runs a tool, a
// second one sees the session running in that process (pid and host), not
// crashed: no hazard to acknowledge, and resume (with or without
// --acknowledge) refuses with exit 4 naming the process. Once the first
// process is killed, the same call is a hazard.
func TestLiveToolSeenFromAnotherProcess(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { liveToolSeen(t, filepath.Join(t.TempDir(), "s.db")) })
	// PostgreSQL: the lease is an advisory lock on a connection of the
	// running process; the server lets it go when that process dies.
	t.Run("postgres", func(t *testing.T) { liveToolSeen(t, postgresDB(t)) })
}

func liveToolSeen(t *testing.T, db string) {
	srv := startModel(t,
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{toolCall("b1", "bash", map[string]any{"command": "echo $$ > tool.pid; touch started; sleep 30"})}},
	)
	work := t.TempDir()
	p := start(t, srv, work, "--session-db", db, "--allow", "bash", "run the slow thing")
	waitFor(t, "the tool to start", func() bool { _, err := os.Stat(filepath.Join(work, "started")); return err == nil })
	if b, err := os.ReadFile(filepath.Join(work, "tool.pid")); err == nil {
		var tool int
		if _, err := fmt.Sscan(string(b), &tool); err == nil && tool > 0 {
			t.Cleanup(func() { syscall.Kill(-tool, syscall.SIGKILL) }) // the tool outlives a killed lite-agent
		}
	}
	id := onlySession(t, work, db)
	pid := p.cmd.Process.Pid
	host, _ := os.Hostname()

	code, out, errs := run(t, nil, work, "--session-db", db, "--session-info", id)
	var live struct {
		Running *struct {
			PID  int
			Host string
		}
		Hazards []json.RawMessage
		Live    []struct {
			CallID string `json:"call_id"`
		}
	}
	if code != 0 || json.Unmarshal([]byte(out), &live) != nil {
		t.Fatalf("--session-info: %d %q %q", code, out, errs)
	}
	if live.Running == nil || live.Running.PID != pid || live.Running.Host != host || len(live.Hazards) != 0 || len(live.Live) != 1 || live.Live[0].CallID != "b1" {
		t.Fatalf("--session-info of a running session: %s; want running in pid %d on %s, no hazards, b1 live", out, pid, host)
	}
	code, out, _ = run(t, nil, work, "--session-db", db, "--recovery-info", id)
	if code != 0 || !strings.Contains(out, "nothing to acknowledge") || strings.Contains(out, "--acknowledge") {
		t.Fatalf("--recovery-info of a running session offers acknowledgement: %s", out)
	}
	named := fmt.Sprintf("process %d on host %s", pid, host)
	for _, args := range [][]string{{"--resume", id, "go on"}, {"--resume", id, "--acknowledge", "rv-000000000000", "go on"}} {
		code, _, errs = run(t, srv, work, append([]string{"--session-db", db}, args...)...)
		if code != 4 || !strings.Contains(errs, named) {
			t.Fatalf("%v while it runs: exit %d, %q; want 4 naming %s", args, code, errs, named)
		}
	}

	p.cmd.Process.Kill()
	p.cmd.Wait()
	// A server notices a dead client's connection a moment after its
	// process is gone.
	waitFor(t, "the lease to go", func() bool {
		_, out, _ := run(t, nil, work, "--session-db", db, "--session-info", id)
		var in struct{ Running json.RawMessage }
		return json.Unmarshal([]byte(out), &in) == nil && in.Running == nil
	})
	in := sessionInfo(t, work, db, id)
	if len(in.Hazards) != 1 || in.Hazards[0].CallID != "b1" {
		t.Fatalf("after the kill: hazards %+v, want b1", in.Hazards)
	}
	code, out, errs = run(t, nil, work, "--session-db", db, "--session-info", id)
	live.Running = nil
	if code != 0 || json.Unmarshal([]byte(out), &live) != nil || live.Running != nil {
		t.Fatalf("after the kill the session still shows a running process: %d %s %s", code, out, errs)
	}
}

// postgresDB returns the URL of a fresh schema on the test server
// (LITE_AGENT_TEST_POSTGRES), dropped when the test ends, or skips.
func postgresDB(t testing.TB) string {
	t.Helper()
	base := os.Getenv("LITE_AGENT_TEST_POSTGRES")
	if base == "" {
		t.Skip("LITE_AGENT_TEST_POSTGRES is not set: this test needs a PostgreSQL server")
	}
	var b [8]byte
	rand.Read(b[:])
	name := "lite_cli_" + hex.EncodeToString(b[:])
	exec := func(sql string) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Fatalf("connect to the test server: %v", err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	exec("CREATE SCHEMA " + name)
	t.Cleanup(func() { exec("DROP SCHEMA " + name + " CASCADE") })
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", name)
	u.RawQuery = q.Encode()
	return u.String()
}
