package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/checkpoint/sqlite"
	"github.com/lite-agent/lite-agent/internal/fakemodel"
	"github.com/lite-agent/lite-agent/session"
	"github.com/lite-agent/lite-agent/tool"
)

// buildBinary builds the real lite-agent command once per benchmark, or
// returns $LITE_AGENT_BENCH_BIN: another build (say, main's) to compare
// with in the same run.
func buildBinary(b *testing.B) string {
	b.Helper()
	if bin := os.Getenv("LITE_AGENT_BENCH_BIN"); bin != "" {
		return bin
	}
	bin := filepath.Join(b.TempDir(), "lite-agent")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// measure runs the command n times and reports the median wall time and
// the largest peak RSS.
func measure(b *testing.B, mk func(i int) *exec.Cmd) {
	b.Helper()
	var walls []time.Duration
	var rss int64
	for i := range b.N {
		cmd := mk(i)
		t0 := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v: %v\n%s", cmd.Args, err, out)
		}
		walls = append(walls, time.Since(t0))
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok && ru.Maxrss > rss {
			rss = ru.Maxrss // KiB on Linux
		}
	}
	sort.Slice(walls, func(i, j int) bool { return walls[i] < walls[j] })
	b.ReportMetric(float64(walls[len(walls)/2].Microseconds())/1000, "ms-wall-p50")
	b.ReportMetric(float64(rss)/1024, "MB-peak-rss")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkProcessToolTurn: the whole lite-agent process for one
// tool-using turn, one-shot, with a SQLite session against the fake model.
func BenchmarkProcessToolTurn(b *testing.B) {
	bin := buildBinary(b)
	turn := []fakemodel.Reply{
		{ToolCalls: []fakemodel.ToolCall{toolCall("", "write", map[string]string{"path": "out.txt", "content": "hello\n"})}},
		{Text: "wrote out.txt"},
	}
	var replies []fakemodel.Reply
	for range b.N {
		replies = append(replies, turn...)
	}
	srv := startModel(b, replies...)
	work := b.TempDir()
	db := filepath.Join(b.TempDir(), "s.db")
	b.ResetTimer()
	measure(b, func(i int) *exec.Cmd {
		cmd := exec.Command(bin, "--workdir", work, "--session-db", db, "--allow", "edit", "write out.txt")
		cmd.Env = append(os.Environ(), "ANTHROPIC_API_KEY=k", "ANTHROPIC_BASE_URL="+srv.URL())
		return cmd
	})
}

// BenchmarkProcessSessions10k: `lite-agent --session-db DB --sessions` on
// a database of 10,000 sessions in the workspace.
func BenchmarkProcessSessions10k(b *testing.B) {
	bin := buildBinary(b)
	work := b.TempDir()
	ns, err := tool.Canonical(work)
	if err != nil {
		b.Fatal(err)
	}
	db := filepath.Join(b.TempDir(), "s.db")
	store, err := sqlite.Open(db, nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for i := range 10000 {
		id := fmt.Sprintf("s%05d", i)
		_, err := store.Append(ctx, id, 0, []session.Event{
			session.MustNew(session.TypeSessionStarted, session.SessionStarted{ID: id, Namespace: ns, Workdir: ns}),
			session.MustNew(session.TypeUserPrompt, session.UserPrompt{Text: "fix the failing test in package " + id}),
			session.MustNew(session.TypeAssistantMessage, session.AssistantMessage{Blocks: []session.Block{{Type: "text", Text: "done"}}}),
			session.MustNew(session.TypeTurnCompleted, session.TurnCompleted{}),
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	store.Close()
	b.ResetTimer()
	measure(b, func(int) *exec.Cmd {
		return exec.Command(bin, "--workdir", work, "--session-db", db, "--sessions")
	})
}
