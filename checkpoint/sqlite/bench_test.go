package sqlite_test

import (
	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/checkpointtest"
	"github.com/lite-agent/lite-agent/checkpoint/sqlite"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/session"
)

// BenchmarkAppendVsFloor alternates a bare 1 KiB write+fsync to a file (the
// floor) with a durable Append of one 1 KiB event, and reports the median
// of each and their ratio. Alternating makes the ratio hold up on a machine
// whose disk and CPUs are shared with other work, where two benchmarks run
// one after the other do not compare.
func BenchmarkAppendVsFloor(b *testing.B) {
	dir := b.TempDir()
	f, err := os.Create(filepath.Join(dir, "floor"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	s := mustOpen(b, filepath.Join(dir, "sessions.db"), nil)
	ctx := b.Context()
	head, err := s.Append(ctx, "bench", 0, []session.Event{startedIn("bench", "bench")})
	if err != nil {
		b.Fatal(err)
	}
	text := strings.Repeat("lorem ipsum ", 100)[:1<<10]
	e := session.MustNew(session.TypeAssistantMessage, session.AssistantMessage{Blocks: []session.Block{{Type: session.BlockText, Text: text}}})
	buf := []byte(text)
	floor := make([]time.Duration, 0, b.N)
	appends := make([]time.Duration, 0, b.N)
	for b.Loop() {
		start := time.Now()
		if _, err := f.Write(buf); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
		mid := time.Now()
		if head, err = s.Append(ctx, "bench", head, []session.Event{e}); err != nil {
			b.Fatal(err)
		}
		floor, appends = append(floor, mid.Sub(start)), append(appends, time.Since(mid))
	}
	slices.Sort(floor)
	slices.Sort(appends)
	f50, a50 := floor[len(floor)/2], appends[len(appends)/2]
	b.ReportMetric(float64(f50.Microseconds()), "floor-p50-µs")
	b.ReportMetric(float64(a50.Microseconds()), "append-p50-µs")
	b.ReportMetric(float64(a50)/float64(f50), "p50-ratio")
}

// BenchmarkRead10k reads a log of 10,000 assistant messages of 1 KiB
// without folding it: the store's share of the suite's ReadRebuild10k.
func BenchmarkRead10k(b *testing.B) {
	text := strings.Repeat("lorem ipsum ", 100)[:1<<10]
	s, _ := fill10k(b, filepath.Join(b.TempDir(), "sessions.db"), session.MustNew(session.TypeAssistantMessage, session.AssistantMessage{Blocks: []session.Block{{Type: session.BlockText, Text: text}}}))
	for b.Loop() {
		readWhole(b, s, 10_000)
	}
}

// BenchmarkReadShort reads a log of 8 events, about one tool turn: what a
// resume reads after its saved state, and doctor of most sessions. A page
// starts small (firstPageCap), so a short read allocates for what it holds,
// not for a whole page of 2,048 events.
func BenchmarkReadShort(b *testing.B) {
	ctx := b.Context()
	s := mustOpen(b, filepath.Join(b.TempDir(), "sessions.db"), nil)
	events := []session.Event{startedIn("bench", "bench")}
	for len(events) < 8 {
		events = append(events, promptEvent("a prompt of a few words"))
	}
	if _, err := s.Append(ctx, "bench", 0, events); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		readWhole(b, s, len(events))
	}
}

// readWhole reads the log of session "bench" in s and fails unless it
// holds want events.
func readWhole(b *testing.B, s *sqlite.Store, want int) {
	n := 0
	for _, err := range s.Read(b.Context(), "bench", 1) {
		if err != nil {
			b.Fatal(err)
		}
		n++
	}
	if n != want {
		b.Fatalf("read %d events, want %d", n, want)
	}
}

// fill10k makes the database at path with session "bench" of 10,000
// events, first then e repeated, 100 per append, and returns it open again,
// with its head. Closing is what makes sure the search index (which trails
// the appends, pending.go) holds them all before a benchmark is timed:
// Close waits for the indexing the appends started in the background and
// indexes what is left, while a search gives up waiting for the write lock
// after catchUpWait and reads beside the index. (BenchmarkRead10k measured
// the same with either, 4 Dec: 24.6-35.1 ms, the machine's spread.)
func fill10k(b *testing.B, path string, e session.Event, first ...session.Event) (*sqlite.Store, int64) {
	b.Helper()
	ctx := b.Context()
	s := mustOpen(b, path, nil)
	head, err := s.Append(ctx, "bench", 0, append([]session.Event{startedIn("bench", "bench")}, first...))
	if err != nil {
		b.Fatal(err)
	}
	for head < 10_000 {
		if head, err = s.Append(ctx, "bench", head, slices.Repeat([]session.Event{e}, int(min(100, 10_000-head)))); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	return mustOpen(b, path, nil), head
}

// BenchmarkGroupCommit alternates rounds of appends from one goroutine and
// from four (each to its own session, one 1 KiB event per Append) and
// reports both rates and how many times faster four writers append than
// one: the work of the group commit. Alternating keeps the comparison fair
// on a shared machine.
func BenchmarkGroupCommit(b *testing.B) {
	s := mustOpen(b, filepath.Join(b.TempDir(), "sessions.db"), nil)
	ctx := b.Context()
	text := strings.Repeat("lorem ipsum ", 100)[:1<<10]
	e := []session.Event{session.MustNew(session.TypeAssistantMessage, session.AssistantMessage{Blocks: []session.Block{{Type: session.BlockText, Text: text}}})}
	const writers, perRound = 4, 16
	heads := make([]int64, writers)
	for w := range writers {
		id := "w" + strconv.Itoa(w)
		if _, err := s.Append(ctx, id, 0, []session.Event{startedIn(id, "bench")}); err != nil {
			b.Fatal(err)
		}
		heads[w] = 1
	}
	write := func(w, n int) {
		for range n {
			var err error
			if heads[w], err = s.Append(ctx, "w"+strconv.Itoa(w), heads[w], e); err != nil {
				b.Error(err)
				return
			}
		}
	}
	var one, four time.Duration
	rounds := 0
	for b.Loop() {
		start := time.Now()
		write(0, writers*perRound)
		mid := time.Now()
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() { write(w, perRound) })
		}
		wg.Wait()
		one, four = one+mid.Sub(start), four+time.Since(mid)
		rounds++
	}
	events := float64(rounds * writers * perRound)
	b.ReportMetric(events/one.Seconds(), "1-writer-events/s")
	b.ReportMetric(events/four.Seconds(), "4-writers-events/s")
	b.ReportMetric(one.Seconds()/four.Seconds(), "speedup")
}

// BenchmarkSearch10kx100: search and doctor on 10,000 sessions × 100
// events (the fill takes minutes).
func BenchmarkSearch10kx100(b *testing.B) { checkpointtest.BenchSearch(b, backend(), 10_000, 100) }

// BenchmarkOpenExisting is a one-shot process's use of the store: open a
// database that holds sessions already, append one event to one of them
// and close it.
func BenchmarkOpenExisting(b *testing.B) {
	path := filepath.Join(b.TempDir(), "sessions.db")
	s, err := sqlite.Open(path, nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := b.Context()
	for i := range 20 {
		id := "s" + strconv.Itoa(i)
		if _, err := s.Append(ctx, id, 0, []session.Event{startedIn(id, "bench"), promptEvent("hello there " + id)}); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	e := []session.Event{promptEvent("one more prompt to append")}
	head := int64(2)
	cpu0 := cpuTime(b)
	for b.Loop() {
		s, err := sqlite.Open(path, nil)
		if err != nil {
			b.Fatal(err)
		}
		if head, err = s.Append(ctx, "s7", head, e); err != nil {
			b.Fatal(err)
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
}

// cpuTime is the CPU time (user and system) the process used so far: the
// measure a one-shot process pays for, which the wall time of its fsyncs
// hides on a shared disk.
func cpuTime(tb testing.TB) time.Duration {
	tb.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkAppendWords appends one prompt of 100 words never indexed
// before per Append, the index's worst case: every word is new to
// search_words. It reports the CPU time per Append beside the wall time,
// which the fsync of each commit dominates.
func BenchmarkAppendWords(b *testing.B) {
	s := mustOpen(b, filepath.Join(b.TempDir(), "sessions.db"), nil)
	ctx := b.Context()
	head, err := s.Append(ctx, "bench", 0, []session.Event{startedIn("bench", "bench")})
	if err != nil {
		b.Fatal(err)
	}
	words := make([]string, 100)
	cpu0 := cpuTime(b)
	i := 0
	for b.Loop() {
		for j := range words {
			words[j] = "w" + strconv.Itoa(i) + "x" + strconv.Itoa(j)
		}
		i++
		if head, err = s.Append(ctx, "bench", head, []session.Event{promptEvent(strings.Join(words, " "))}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
}

// BenchmarkSearchMarked: a read-only search for a word of one event of
// 10,000 indexed ones, in a store whose index is behind by what a Close
// leaves at most (63 events of 1 KiB, marked, read beside the index),
// against the same search with nothing marked.
func BenchmarkSearchMarked(b *testing.B) {
	ctx := b.Context()
	text := strings.Repeat("lorem ipsum ", 100)[:1<<10]
	e := session.MustNew(session.TypeUserPrompt, session.UserPrompt{Text: text})
	for _, marked := range []int{0, 63} {
		b.Run(strconv.Itoa(marked)+"-marked", func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "sessions.db")
			// Another process appends the marked events and closes, leaving them.
			s, head := fill10k(b, path, e, session.MustNew(session.TypeUserPrompt, session.UserPrompt{Text: "a needle in " + text}))
			if marked > 0 {
				if _, err := s.Append(ctx, "bench", head, slices.Repeat([]session.Event{e}, marked)); err != nil {
					b.Fatal(err)
				}
			}
			if err := s.Close(); err != nil {
				b.Fatal(err)
			}
			var waiting int
			if err := sqlDB(b, path).QueryRow(`SELECT coalesce(sum(s.head - p.after), 0) FROM search_pending p JOIN sessions s USING (n)`).Scan(&waiting); err != nil || waiting != marked {
				b.Fatalf("%d events wait for the index (%v), want %d", waiting, err, marked)
			}
			ro := mustOpen(b, path, &sqlite.Options{ReadOnly: true})
			for b.Loop() {
				hits, err := checkpoint.Search(ctx, ro, "needle", checkpoint.SearchOptions{})
				if err != nil || len(hits) != 1 {
					b.Fatalf("%d hits, %v", len(hits), err)
				}
			}
		})
	}
}

// BenchmarkOneShotTurn is the store's part of a one-shot lite-agent
// process's tool turn: open an existing database, append the turn's events
// in the four appends the agent makes (prompt; answer with the call's
// intent; receipt; final answer), close. It reports the CPU time per turn
// (user plus system, of the whole benchmark process) beside the wall.
func BenchmarkOneShotTurn(b *testing.B) {
	path := filepath.Join(b.TempDir(), "sessions.db")
	s := mustOpen(b, path, nil)
	head, err := s.Append(b.Context(), "turns", 0, []session.Event{startedIn("turns", "bench")})
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	turn := [][]session.Event{
		{session.MustNew(session.TypeUserPrompt, session.UserPrompt{Text: "write out.txt with hello in it"})},
		{session.MustNew(session.TypeAssistantMessage, session.AssistantMessage{Blocks: []session.Block{{Type: session.BlockText, Text: "I will write it."}}})},
		{session.MustNew(session.TypeToolFinished, session.ToolFinished{CallID: "c1", Tool: "write", Output: "wrote 6 bytes to out.txt"})},
		{session.MustNew(session.TypeAssistantMessage, session.AssistantMessage{Blocks: []session.Block{{Type: session.BlockText, Text: "wrote out.txt"}}})},
	}
	cpu := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			b.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	start := cpu()
	for b.Loop() {
		s, err := sqlite.Open(path, nil)
		if err != nil {
			b.Fatal(err)
		}
		for _, events := range turn {
			if head, err = s.Append(b.Context(), "turns", head, events); err != nil {
				b.Fatal(err)
			}
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((cpu()-start).Microseconds())/float64(b.N), "cpu-µs/op")
}
