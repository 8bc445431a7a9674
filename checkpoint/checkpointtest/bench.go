package checkpointtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
)

// benchEventBytes is the size of the text of the benchmarks' events.
const benchEventBytes = 1 << 10

// Bench runs the standard benchmarks for a backend as sub-benchmarks:
//
//   - Floor: a bare 1 KiB write and fsync to a file in a temporary
//     directory, so that the durable appends below read as ratios of it.
//   - Append1KiB: one durable Append of one event of 1 KiB, sequentially.
//   - Append1x: the same from one goroutine, reported in events/s.
//   - Append4x4: four goroutines appending to four sessions, in events/s;
//     compare with Append1x to see how well appends share commits.
//   - ReadRebuild10k: Read a session of 10,000 assistant messages of 1 KiB
//     and fold it into a session.State, down to its transcript.
//   - List10k: List a namespace of 10,000 sessions.
//
// Setup (creating the store and the sessions read or listed) is not timed.
func Bench(b *testing.B, be Backend) {
	b.Run("Floor", benchFloor)
	b.Run("Append1KiB", func(b *testing.B) { benchAppend1KiB(b, be) })
	b.Run("Append1x", func(b *testing.B) { benchAppendParallel(b, be, 1) })
	b.Run("Append4x4", func(b *testing.B) { benchAppendParallel(b, be, 4) })
	b.Run("ReadRebuild10k", func(b *testing.B) { benchReadRebuild(b, be, 10_000) })
	b.Run("List10k", func(b *testing.B) { benchList(b, be, 10_000) })
}

// benchText is n bytes of text.
func benchText(n int) string { return strings.Repeat("lorem ipsum ", n/12+1)[:n] }

func benchFloor(b *testing.B) {
	f, err := os.Create(filepath.Join(b.TempDir(), "floor"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	buf := []byte(benchText(benchEventBytes))
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		if _, err := f.Write(buf); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
	}
}

// settle lets the store's upkeep of what the setup appended finish before
// the timed loop, and returns the store to time. A store with an index of
// its own (a checkpoint.Searcher) may index behind its appends, in the
// background: it is closed, which waits for that work and finishes it,
// and opened again at loc. A search is not enough: SQLite's gives up
// waiting for a write lock the indexing holds after a moment and answers
// beside the index, and the indexing goes on.
func settle(b *testing.B, be Backend, loc string, c checkpoint.Checkpointer) checkpoint.Checkpointer {
	b.Helper()
	if _, ok := c.(checkpoint.Searcher); !ok {
		return c
	}
	if err := c.Close(); err != nil {
		b.Fatal(err)
	}
	return open(b, be, loc)
}

// benchOpen opens a store at a new location for a benchmark.
func benchOpen(b *testing.B, be Backend) checkpoint.Checkpointer {
	b.Helper()
	return open(b, be, be.NewLocation(b))
}

func benchAppend1KiB(b *testing.B, be Backend) {
	c := benchOpen(b, be)
	ctx := b.Context()
	head := mustAppend(b, c, "bench", 0, started("bench", "bench"))
	e := reply(benchText(benchEventBytes))
	b.SetBytes(int64(len(e.Data)))
	for b.Loop() {
		var err error
		if head, err = c.Append(ctx, "bench", head, []session.Event{e}); err != nil {
			b.Fatal(err)
		}
	}
}

// benchAppendParallel has `writers` goroutines append b.N events of 1 KiB
// in all, one event per Append, each to its own session.
func benchAppendParallel(b *testing.B, be Backend, writers int) {
	c := benchOpen(b, be)
	ctx := b.Context()
	for w := range writers {
		id := fmt.Sprintf("bench-%d", w)
		mustAppend(b, c, id, 0, started(id, "bench"))
	}
	e := reply(benchText(benchEventBytes))
	b.SetBytes(int64(len(e.Data)))
	b.ResetTimer()
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		n := b.N / writers
		if w < b.N%writers {
			n++
		}
		wg.Go(func() {
			id, head := fmt.Sprintf("bench-%d", w), int64(1)
			for range n {
				var err error
				if head, err = c.Append(ctx, id, head, []session.Event{e}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// fillSession appends n assistant messages of 1 KiB to a new session, in
// batches.
func fillSession(b *testing.B, c checkpoint.Checkpointer, id string, n int) {
	b.Helper()
	head := mustAppend(b, c, id, 0, started(id, "bench"), prompt("fill"))
	text := benchText(benchEventBytes)
	batch := make([]session.Event, 0, 100)
	for head < int64(n) {
		batch = batch[:0]
		for range min(cap(batch), n-int(head)) {
			batch = append(batch, session.MustNew(session.TypeAssistantMessage, session.AssistantMessage{
				Blocks: []session.Block{{Type: session.BlockText, Text: text}},
			}))
		}
		head = mustAppend(b, c, id, head, batch...)
	}
}

func benchReadRebuild(b *testing.B, be Backend, n int) {
	loc := be.NewLocation(b)
	c := open(b, be, loc)
	fillSession(b, c, "bench", n)
	c = settle(b, be, loc, c)
	ctx := b.Context()
	for b.Loop() {
		var st session.State
		for e, err := range c.Read(ctx, "bench", 1) {
			if err != nil {
				b.Fatal(err)
			}
			st.Apply(e)
		}
		if st.Summary.Head != int64(n) {
			b.Fatalf("rebuilt a log of %d events, want %d", st.Summary.Head, n)
		}
		if got := len(st.Transcript()); got == 0 {
			b.Fatal("the rebuilt transcript is empty")
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "events/s")
}

func benchList(b *testing.B, be Backend, n int) {
	loc := be.NewLocation(b)
	c := open(b, be, loc)
	// Create the sessions from several goroutines, so that backends that
	// share commits between writers set up faster.
	const writers = 8
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for i := w; i < n; i += writers {
				id := fmt.Sprintf("s%05d", i)
				_, err := c.Append(context.Background(), id, 0, []session.Event{
					started(id, "bench"), prompt(fmt.Sprintf("prompt of session %d", i)), reply("reply"), completed(),
				})
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	c = settle(b, be, loc, c)
	ctx := b.Context()
	for b.Loop() {
		list, err := c.List(ctx, "bench", checkpoint.ListOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if len(list) != n {
			b.Fatalf("listed %d sessions, want %d", len(list), n)
		}
	}
}
