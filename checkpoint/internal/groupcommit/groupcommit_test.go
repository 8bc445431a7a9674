package groupcommit

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type req struct {
	n      int
	result int
}

func TestEveryRequestCommittedOnceAndBatched(t *testing.T) {
	var (
		running  atomic.Int32
		commits  atomic.Int32
		overlaps atomic.Int32
		seen     sync.Map
	)
	g := New(func(batch []*req) {
		if running.Add(1) != 1 {
			overlaps.Add(1)
		}
		commits.Add(1)
		time.Sleep(time.Millisecond) // a slow fsync lets callers queue up
		for _, r := range batch {
			if _, dup := seen.LoadOrStore(r.n, true); dup {
				t.Errorf("request %d committed twice", r.n)
			}
			r.result = r.n * 2
		}
		running.Add(-1)
	})
	const n = 200
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r := &req{n: i}
			g.Submit(r)
			if r.result != i*2 {
				t.Errorf("request %d: result %d before commit returned", i, r.result)
			}
		})
	}
	wg.Wait()
	if overlaps.Load() != 0 {
		t.Fatalf("commit ran concurrently with itself %d times", overlaps.Load())
	}
	if c := commits.Load(); c >= n {
		t.Fatalf("%d commits for %d concurrent requests: nothing was batched", c, n)
	}
	if g.running || len(g.pending) != 0 {
		t.Fatalf("group not idle after all calls returned: running=%v pending=%d", g.running, len(g.pending))
	}
}
