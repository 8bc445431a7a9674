package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/sqlite"
	"github.com/lite-agent/lite-agent/internal/benchsession"
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
	return buildTool(b, ".")
}

// releaseBuild is README's install line: a static binary (no cgo, so no
// dynamic loader at start, which measured 5-11% of a one-turn process's
// CPU) without file paths, symbol table or debug information.
var releaseBuild = []string{"build", "-trimpath", "-ldflags=-s -w"}

// measured is what internal/benchrun measured of one process.
type measured struct {
	wall, cpu time.Duration // cpu: the process's user plus system time
	rssKiB    int64         // peak resident memory
	faults    int64         // minor page faults: each costs microseconds here
}

// runOnce runs cmd through internal/benchrun and returns what it measured
// (see there why the benchmark cannot measure its own child's memory).
func runOnce(b *testing.B, benchrun string, cmd *exec.Cmd) measured {
	b.Helper()
	cmd.Args = append([]string{benchrun}, cmd.Args...)
	cmd.Path = cmd.Args[0]
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if out, err := cmd.Output(); err != nil {
		b.Fatalf("%v: %v\n%s%s", cmd.Args, err, out, stderr.Bytes())
	}
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	var wall, rss, cpu, faults int64
	if _, err := fmt.Sscanf(lines[len(lines)-1], "benchrun: wall-ns=%d maxrss-kib=%d cpu-ns=%d minflt=%d", &wall, &rss, &cpu, &faults); err != nil {
		b.Fatalf("benchrun's report %q: %v", lines[len(lines)-1], err)
	}
	return measured{wall: time.Duration(wall), cpu: time.Duration(cpu), rssKiB: rss, faults: faults}
}

// buildTool builds the program of this repository at dir (relative to
// this package) into the benchmark's temp dir, the way README's install
// line does.
func buildTool(b *testing.B, dir string) string {
	b.Helper()
	name := filepath.Base(dir)
	if dir == "." {
		name = "lite-agent"
	}
	bin := filepath.Join(b.TempDir(), name)
	cmd := exec.Command("go", append(releaseBuild, "-o", bin, dir)...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build %s: %v\n%s", dir, err, out)
	}
	return bin
}

// median returns the median of xs (which it sorts).
func median[T time.Duration | int64](xs []T) T {
	slices.Sort(xs)
	return xs[len(xs)/2]
}

// measure runs the command n times and reports the median wall time and
// the largest peak RSS.
func measure(b *testing.B, mk func(i int) *exec.Cmd) {
	b.Helper()
	run := buildTool(b, "../../internal/benchrun")
	b.ResetTimer()
	var walls, cpus []time.Duration
	var rss int64
	var faults []int64
	for i := range b.N {
		r := runOnce(b, run, mk(i))
		walls, cpus = append(walls, r.wall), append(cpus, r.cpu)
		rss = max(rss, r.rssKiB)
		faults = append(faults, r.faults)
	}
	b.ReportMetric(float64(median(walls).Microseconds())/1000, "ms-wall-p50")
	b.ReportMetric(float64(median(cpus).Microseconds())/1000, "ms-cpu-p50")
	b.ReportMetric(float64(median(faults)), "faults-p50")
	b.ReportMetric(float64(rss)/1024, "MB-peak-rss")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkProcessToolTurn: the whole lite-agent process for one
// tool-using turn, one-shot, with a SQLite session against the fake model,
// alternated in the same run with the floor program (internal/benchfloor)
// making the same two requests lite-agent made, the same file write and
// three durable appends. It reports both medians and their ratio
// (x-floor; the target is 1.5).
func BenchmarkProcessToolTurn(b *testing.B) {
	bin, floor, run := buildBinary(b), buildTool(b, "../../internal/benchfloor"), buildTool(b, "../../internal/benchrun")
	turn := []fakemodel.Reply{
		{ToolCalls: []fakemodel.ToolCall{toolCall("", "write", map[string]string{"path": "out.txt", "content": "hello\n"})}},
		{Text: "wrote out.txt"},
	}
	var replies []fakemodel.Reply
	for range 2*b.N + 1 { // a warm-up run, then lite-agent and the floor in turn
		replies = append(replies, turn...)
	}
	srv := startModel(b, replies...)
	work, tmp := b.TempDir(), b.TempDir()
	db := filepath.Join(tmp, "s.db")
	agent := func() *exec.Cmd {
		cmd := exec.Command(bin, "--workdir", work, "--session-db", db, "--allow", "edit", "write out.txt")
		cmd.Env = append(os.Environ(), "ANTHROPIC_API_KEY=k", "ANTHROPIC_BASE_URL="+srv.URL())
		return cmd
	}
	runOnce(b, run, agent())
	var bodies []string
	for _, r := range srv.Requests() {
		if r.Reply != 0 && len(bodies) < 2 {
			p := filepath.Join(tmp, fmt.Sprintf("body%d.json", len(bodies)+1))
			if err := os.WriteFile(p, r.Body, 0o600); err != nil {
				b.Fatal(err)
			}
			bodies = append(bodies, p)
		}
	}
	if len(bodies) != 2 {
		b.Fatalf("the warm-up turn made %d model requests, want 2", len(bodies))
	}
	b.ResetTimer()
	var walls, floors, cpus, floorCPUs []time.Duration
	var rss, floorRSS int64
	var faults, floorFaults []int64
	for range b.N {
		r := runOnce(b, run, agent())
		walls, cpus, rss = append(walls, r.wall), append(cpus, r.cpu), max(rss, r.rssKiB)
		faults = append(faults, r.faults)
		r = runOnce(b, run, exec.Command(floor, srv.URL(), bodies[0], bodies[1], filepath.Join(work, "floor.txt"), filepath.Join(tmp, "floor.log")))
		floors, floorCPUs, floorRSS = append(floors, r.wall), append(floorCPUs, r.cpu), max(floorRSS, r.rssKiB)
		floorFaults = append(floorFaults, r.faults)
	}
	w, f := median(walls), median(floors)
	c, fc := median(cpus), median(floorCPUs)
	b.ReportMetric(float64(w.Microseconds())/1000, "ms-wall-p50")
	b.ReportMetric(float64(f.Microseconds())/1000, "floor-ms-p50")
	b.ReportMetric(float64(w)/float64(f), "x-floor")
	// The CPU times say where the wall's difference is this process's own
	// work and where it is waiting (fsync, the model, a loaded machine).
	b.ReportMetric(float64(c.Microseconds())/1000, "ms-cpu-p50")
	b.ReportMetric(float64(fc.Microseconds())/1000, "floor-ms-cpu-p50")
	b.ReportMetric(float64(c)/float64(fc), "x-floor-cpu")
	b.ReportMetric(float64(median(faults)), "faults-p50")
	b.ReportMetric(float64(median(floorFaults)), "floor-faults-p50")
	b.ReportMetric(float64(rss)/1024, "MB-peak-rss")
	b.ReportMetric(float64(floorRSS)/1024, "floor-MB-peak-rss")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkProcessSessions10k: `lite-agent --session-db DB --sessions` on
// a database of 10,000 sessions in the workspace.
func BenchmarkProcessSessions10k(b *testing.B) {
	bin := buildBinary(b)
	work, ns, db, store := workspaceStore(b)
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

// BenchmarkProcessResumeLong: the whole lite-agent process resuming a
// stored SQLite session for one more turn (`--resume ID PROMPT`, one
// streamed model call answering with text), for sessions of 1, 200 and
// 500 turns, the three alternated in every iteration so they share the
// machine's state. Each session is as the agent leaves it: titled, with
// its saved state (checkpoint.FoldKeeper) at its head; every iteration
// adds a turn to each. It reports each size's median wall and CPU time
// (user plus system, from wait4) and the CPU ratios to the 1-turn session
// (x-1turn-200, x-1turn-500; issue 20's target: at most 1.2). This is the
// figure a person resuming a long session pays; BenchmarkResumeLong in
// the root package is the in-process part of it.
func BenchmarkProcessResumeLong(b *testing.B) {
	bin, run := buildBinary(b), buildTool(b, "../../internal/benchrun")
	work, ns, db, store := workspaceStore(b)
	sizes := []int{1, 200, 500}
	ids := make([]string, len(sizes))
	for i, n := range sizes {
		ids[i] = storedTurns(b, store, ns, n)
	}
	store.Close()
	srv := startModel(b, slices.Repeat([]fakemodel.Reply{{Text: "done"}}, len(sizes)*(b.N+1))...)
	resume := func(id string) *exec.Cmd {
		cmd := exec.Command(bin, "--workdir", work, "--session-db", db, "--resume", id, "one more")
		cmd.Env = append(os.Environ(), "ANTHROPIC_API_KEY=k", "ANTHROPIC_BASE_URL="+srv.URL())
		return cmd
	}
	for _, id := range ids { // warm-up: the page cache, the database's WAL
		runOnce(b, run, resume(id))
	}
	b.ResetTimer()
	walls, cpus := make([][]time.Duration, len(sizes)), make([][]time.Duration, len(sizes))
	faults := make([][]int64, len(sizes))
	for range b.N {
		for i, id := range ids {
			r := runOnce(b, run, resume(id))
			walls[i], cpus[i] = append(walls[i], r.wall), append(cpus[i], r.cpu)
			faults[i] = append(faults[i], r.faults)
		}
	}
	base := median(cpus[0])
	for i, n := range sizes {
		c := median(cpus[i])
		b.ReportMetric(float64(median(walls[i]).Microseconds())/1000, fmt.Sprintf("ms-wall-p50-%d", n))
		b.ReportMetric(float64(c.Microseconds())/1000, fmt.Sprintf("ms-cpu-p50-%d", n))
		b.ReportMetric(float64(median(faults[i])), fmt.Sprintf("faults-p50-%d", n))
		if i > 0 {
			b.ReportMetric(float64(c)/float64(base), fmt.Sprintf("x-1turn-%d", n))
		}
	}
	b.ReportMetric(0, "ns/op")
}

// storedTurns stores a titled session of n tool-using turns in store, in
// the namespace ns, with its saved state at its head as the agent leaves
// it, and returns its id; the turns are benchsession's.
func storedTurns(b *testing.B, store *sqlite.Store, ns string, n int) string {
	b.Helper()
	ctx := context.Background()
	id := liteagent.NewSessionID()
	events := []session.Event{
		session.MustNew(session.TypeSessionStarted, session.SessionStarted{ID: id, Namespace: ns, Workdir: ns}),
		session.MustNew(session.TypeSessionTitled, session.SessionTitled{Title: fmt.Sprintf("a session of %d turns", n), By: session.TitleByUser}),
	}
	events = append(events, benchsession.Turns(n)...)
	if _, err := store.Append(ctx, id, 0, events); err != nil {
		b.Fatal(err)
	}
	st, info, err := checkpoint.LoadState(ctx, store, id)
	if err == nil {
		err = checkpoint.SaveState(ctx, store, id, st, info.Last)
	}
	if err != nil {
		b.Fatal(err)
	}
	return id
}

// workspaceStore makes a workdir and a new SQLite store for the
// benchmarks of whole processes that read a filled store: the workdir,
// its namespace, the database path and the open store (the caller fills
// and closes it).
func workspaceStore(b *testing.B) (work, ns, db string, store *sqlite.Store) {
	b.Helper()
	work = b.TempDir()
	ns, err := tool.Canonical(work)
	if err != nil {
		b.Fatal(err)
	}
	db = filepath.Join(b.TempDir(), "s.db")
	store, err = sqlite.Open(db, nil)
	if err != nil {
		b.Fatal(err)
	}
	return work, ns, db, store
}
