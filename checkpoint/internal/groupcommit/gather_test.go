package groupcommit

import (
	"sync"
	"testing"
	"time"
)

func TestGatherWaitsForCompany(t *testing.T) {
	var (
		mu    sync.Mutex
		sizes []int
	)
	g := New(func(batch []*req) {
		mu.Lock()
		sizes = append(sizes, len(batch))
		mu.Unlock()
		for _, r := range batch {
			r.result = r.n
		}
	})
	// The leader waits (up to a minute) until three requests are queued.
	g.Gather(func(queued int) time.Duration {
		if queued < 3 {
			return time.Minute
		}
		return 0
	})
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() {
			time.Sleep(time.Duration(i) * 10 * time.Millisecond) // arrive one by one
			r := &req{n: i + 1}
			g.Submit(r)
			if r.result != i+1 {
				t.Errorf("request %d: result %d", i+1, r.result)
			}
		})
	}
	wg.Wait()
	if len(sizes) != 1 || sizes[0] != 3 {
		t.Fatalf("batches %v, want one batch of 3: the leader did not wait for the others", sizes)
	}
}

func TestGatherGivesUp(t *testing.T) {
	commits := 0
	g := New(func(batch []*req) {
		commits++
		for _, r := range batch {
			r.result = r.n
		}
	})
	asked := 0
	g.Gather(func(queued int) time.Duration {
		asked++
		return 5 * time.Millisecond // company that never comes
	})
	r := &req{n: 7}
	g.Submit(r)
	if r.result != 7 || commits != 1 {
		t.Fatalf("result %d after %d commits, want 7 after 1", r.result, commits)
	}
	if asked != 1 {
		t.Fatalf("the policy was asked %d times for a lone request, want once", asked)
	}
	if g.arrived != nil {
		t.Fatal("the group still waits for arrivals after the commit")
	}
}
