package checkpointtest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
)

// FillSearch appends sessions logs of events events each to c in namespace
// ns, eight at a time: prompts and replies that all hold the words
// "refactor" and "parser", and one event of the whole store (in the middle
// session, half-way through its log) that also holds "needleword". It is
// the store BenchSearch measures, for other benchmarks too (a whole
// process searching it).
func FillSearch(tb testing.TB, c checkpoint.Checkpointer, ns string, sessions, events int) {
	tb.Helper()
	base := session.Now().Add(-time.Hour)
	var wg sync.WaitGroup
	work := make(chan int)
	errs := make(chan error, 1)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				id := fmt.Sprintf("bench-%05d", i)
				batch := []session.Event{at(started(id, ns), base, time.Duration(i)*time.Millisecond)}
				for j := 1; j < events; j++ {
					text := fmt.Sprintf("step %d of session %d: refactor the parser, run the tests, common words here", j, i)
					if i == sessions/2 && j == events/2 {
						text += " needleword"
					}
					e := prompt(text)
					if j%2 == 0 {
						e = reply(text)
					}
					batch = append(batch, at(e, base, time.Duration(i)*time.Millisecond+time.Duration(j)*time.Microsecond))
				}
				if _, err := c.Append(context.Background(), id, 0, batch); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		}()
	}
	for i := range sessions {
		work <- i
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		tb.Fatal(err)
	default:
	}
}

// BenchSearch measures search and the doctor on a store of sessions ×
// events (the figures: 10,000 × 100): a query for a word in one
// event of the whole store, one for a word in every session (limit 50), and
// Doctor against reading every log once. Filling the store is not timed.
func BenchSearch(b *testing.B, be Backend, sessions, events int) {
	c := benchOpen(b, be)
	FillSearch(b, c, "bench", sessions, events)
	search := func(q string, want int) func(b *testing.B) {
		return func(b *testing.B) {
			for b.Loop() {
				hits, err := checkpoint.Search(b.Context(), c, q, checkpoint.SearchOptions{Namespace: "bench"})
				if err != nil || len(hits) != want {
					b.Fatalf("search %q: %d hits, %v; want %d", q, len(hits), err, want)
				}
			}
		}
	}
	b.Run("RareWord", search("needleword", 1))
	b.Run("CommonWords", search("refactor parser", checkpoint.DefaultSearchLimit))
	b.Run("ReadEveryLog", func(b *testing.B) {
		for b.Loop() {
			list, err := c.List(b.Context(), "", checkpoint.ListOptions{AllKinds: true})
			if err != nil {
				b.Fatal(err)
			}
			for _, s := range list {
				for _, err := range c.Read(b.Context(), s.ID, 1) {
					if err != nil {
						b.Fatal(err)
					}
				}
			}
		}
	})
	b.Run("Doctor", func(b *testing.B) {
		for b.Loop() {
			r, err := checkpoint.Doctor(b.Context(), c, checkpoint.DoctorOptions{})
			if err != nil || len(r.Problems) != 0 {
				b.Fatalf("doctor: %v, %+v", err, r)
			}
		}
	})
}
