package checkpointtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
)

// maxRetries bounds the conflict retries of one append, so that a livelock
// fails the test instead of hanging it.
const maxRetries = 10000

// concurrencyTimeout bounds the concurrent tests, so that a deadlock fails
// them with a message instead of hanging until the go test timeout.
const concurrencyTimeout = 3 * time.Minute

// appendRetry appends events at the session's current head, reading the head
// again after each conflict. Any error but a conflict is returned. It
// returns the number of conflicts met.
func appendRetry(ctx context.Context, c checkpoint.Checkpointer, id string, events []session.Event) (int, error) {
	for conflicts := 0; conflicts < maxRetries; conflicts++ {
		s, err := c.Head(ctx, id)
		if err != nil {
			return conflicts, fmt.Errorf("head: %w", err)
		}
		_, err = c.Append(ctx, id, s.Head, events)
		if err == nil {
			return conflicts, nil
		}
		var ce *checkpoint.ConflictError
		if !errors.As(err, &ce) {
			return conflicts, fmt.Errorf("append at head %d: %w (only conflicts may happen here)", s.Head, err)
		}
		if ce.Expected != s.Head || ce.Actual <= s.Head {
			return conflicts, fmt.Errorf("append at head %d: conflict reports expected %d and actual %d, want expected %d and an actual head above it", s.Head, ce.Expected, ce.Actual, s.Head)
		}
	}
	return maxRetries, fmt.Errorf("append: still conflicting after %d retries", maxRetries)
}

// workText is the payload of event k of n of worker w's append number i.
func workText(w, i, k, n int) string { return fmt.Sprintf("w%d a%d e%d/%d", w, i, k, n) }

// work makes worker w append `appends` batches of one or two events to
// session id, retrying on conflicts. It returns the number of conflicts.
func work(ctx context.Context, c checkpoint.Checkpointer, id string, w, appends int) (int, error) {
	total := 0
	for i := range appends {
		n := 1 + i%2
		batch := make([]session.Event, n)
		for k := range n {
			batch[k] = prompt(workText(w, i, k, n))
		}
		conflicts, err := appendRetry(ctx, c, id, batch)
		total += conflicts
		if err != nil {
			return total, fmt.Errorf("worker %d, append %d: %w", w, i, err)
		}
	}
	return total, nil
}

// workEvents is how many events work appends.
func workEvents(appends int) int { return appends + appends/2 }

// checkWork fails unless log (a whole session log) holds exactly the events
// of workers 0 … workers-1 after session_started: each once, each batch whole
// and in order, each worker's appends in the order it made them.
func checkWork(tb testing.TB, log []session.Event, workers, appends int) {
	tb.Helper()
	if err := contiguous(log, 1); err != nil {
		tb.Fatal(err)
	}
	if want := 1 + workers*workEvents(appends); len(log) != want {
		tb.Fatalf("log has %d events, want %d (1 + %d workers × %d events): events were lost or duplicated", len(log), want, workers, workEvents(appends))
	}
	next := make([]int, workers) // next append number expected per worker
	for j := 1; j < len(log); j++ {
		var w, i, k, n int
		text := promptText(tb, log[j])
		if _, err := fmt.Sscanf(text, "w%d a%d e%d/%d", &w, &i, &k, &n); err != nil || w < 0 || w >= workers {
			tb.Fatalf("event %d has payload %q, which no worker wrote", log[j].Seq, text)
		}
		if i != next[w] || k != 0 {
			tb.Fatalf("event %d is %q, want worker %d's append %d to start here (a lost, duplicated or reordered append)", log[j].Seq, text, w, next[w])
		}
		for k := 1; k < n; k++ {
			j++
			if j >= len(log) || promptText(tb, log[j]) != workText(w, i, k, n) {
				tb.Fatalf("event %d does not continue the batch %q: a batch was split", log[j-1].Seq, text)
			}
		}
		next[w]++
	}
	for w, n := range next {
		if n != appends {
			tb.Fatalf("worker %d has %d appends in the log, want %d", w, n, appends)
		}
	}
}

// runWorkers runs workers goroutines appending to session id through the
// stores in cs (worker w uses cs[w%len(cs)]) and fails on any error but a
// conflict.
func runWorkers(t *testing.T, cs []checkpoint.Checkpointer, id string, workers, appends int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), concurrencyTimeout)
	defer cancel()
	var conflicts atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := range workers {
		wg.Go(func() {
			<-start
			n, err := work(ctx, cs[w%len(cs)], id, w, appends)
			conflicts.Add(int64(n))
			if err != nil {
				t.Error(err)
			}
		})
	}
	close(start)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("%d workers, %d appends each: %d conflicts retried", workers, appends, conflicts.Load())
}

func testConcurrentOneSession(t *testing.T, b Backend) {
	c := fresh(t, b)
	create(t, c, "s1", "ns", 0)
	const workers, appends = 16, 8
	runWorkers(t, []checkpoint.Checkpointer{c}, "s1", workers, appends)
	log := readAll(t, c, "s1", 1)
	checkWork(t, log, workers, appends)
	checkHead(t, c, "s1", log)
}

func testConcurrentSessions(t *testing.T, b Backend) {
	c := fresh(t, b)
	ctx, cancel := context.WithTimeout(t.Context(), concurrencyTimeout)
	defer cancel()
	const sessions, appends = 8, 10
	var wg sync.WaitGroup
	for s := range sessions {
		wg.Go(func() {
			id := fmt.Sprintf("s%d", s)
			if _, err := c.Append(ctx, id, 0, []session.Event{started(id, "ns")}); err != nil {
				t.Errorf("create %s: %v", id, err)
				return
			}
			head := int64(1)
			for i := range appends {
				n := 1 + i%2
				batch := make([]session.Event, n)
				for k := range n {
					batch[k] = prompt(workText(0, i, k, n))
				}
				got, err := c.Append(ctx, id, head, batch)
				if err != nil || got != head+int64(n) {
					t.Errorf("append %d to %s at head %d: head %d, %v (no one else writes to it)", i, id, head, got, err)
					return
				}
				head = got
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	for s := range sessions {
		id := fmt.Sprintf("s%d", s)
		log := readAll(t, c, id, 1)
		checkWork(t, log, 1, appends)
		checkHead(t, c, id, log)
	}
	list, err := c.List(t.Context(), "ns", checkpoint.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != sessions {
		t.Fatalf("list shows %d sessions, want %d: [%s]", len(list), sessions, ids(list))
	}
	for _, s := range list {
		if s.Head != int64(1+workEvents(appends)) {
			t.Fatalf("list shows %s at head %d, want %d", s.ID, s.Head, 1+workEvents(appends))
		}
	}
}

// seqText is the payload of the event at seq in testReadersDuringWrites.
func seqText(seq int64) string { return fmt.Sprintf("event %d", seq) }

func testReadersDuringWrites(t *testing.T, b Backend) {
	c := fresh(t, b)
	ctx, cancel := context.WithTimeout(t.Context(), concurrencyTimeout)
	defer cancel()
	mustAppend(t, c, "s1", 0, started("s1", "ns"))
	const total = 150 // events the writer appends
	var done atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		defer done.Store(true)
		head := int64(1)
		for head < total {
			n := min(1+int(head)%3, total-int(head))
			batch := make([]session.Event, n)
			for k := range batch {
				batch[k] = prompt(seqText(head + int64(k) + 1))
			}
			got, err := c.Append(ctx, "s1", head, batch)
			if err != nil {
				t.Errorf("writer: append at head %d: %v", head, err)
				return
			}
			head = got
		}
	})
	for r := range 3 {
		wg.Go(func() {
			reads, last := 0, int64(0)
			for {
				finished := done.Load()
				if err := checkPrefixRead(ctx, c, int64(r*20+1), &last); err != nil {
					t.Errorf("reader %d, read %d: %v", r, reads, err)
					return
				}
				reads++
				if finished {
					break
				}
				// Leave the writer room: a store may let readers starve
				// writers, which this check is not about.
				time.Sleep(500 * time.Microsecond)
			}
			if last != total {
				t.Errorf("reader %d: last read ended at seq %d after the writer finished, want %d", r, last, total)
			}
		})
	}
	wg.Wait()
}

// checkPrefixRead reads session s1 from seq from and checks that it is a
// gap-free run of the writer's events reaching at least the head read just
// before, and at least as far as the previous read (*last).
func checkPrefixRead(ctx context.Context, c checkpoint.Checkpointer, from int64, last *int64) error {
	s, err := c.Head(ctx, "s1")
	if err != nil {
		return fmt.Errorf("head: %w", err)
	}
	want := from
	for e, err := range c.Read(ctx, "s1", from) {
		if err != nil {
			return fmt.Errorf("read from %d: %w", from, err)
		}
		if e.Seq != want {
			return fmt.Errorf("read from %d: seq %d after %d (a gap or a reordering)", from, e.Seq, want-1)
		}
		if e.Seq > 1 {
			var p session.UserPrompt
			if err := e.Decode(&p); err != nil || p.Text != seqText(e.Seq) {
				return fmt.Errorf("read from %d: event %d holds %q (%v), want %q", from, e.Seq, p.Text, err, seqText(e.Seq))
			}
		}
		want++
	}
	end := want - 1
	if end < s.Head && s.Head >= from {
		return fmt.Errorf("read from %d ended at seq %d, but Head reported %d before the read began", from, end, s.Head)
	}
	if end < *last && *last >= from {
		return fmt.Errorf("read from %d ended at seq %d, but an earlier read reached %d", from, end, *last)
	}
	*last = max(*last, end)
	return nil
}

func testCloseDuringWrites(t *testing.T, b Backend) {
	loc := b.NewLocation(t)
	c, err := b.Open(loc)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), concurrencyTimeout)
	defer cancel()
	const writers = 4
	acked := make([]int64, writers) // per writer, the last head Append returned
	var wg, going sync.WaitGroup
	going.Add(writers)
	for w := range writers {
		wg.Go(func() {
			id := fmt.Sprintf("s%d", w)
			head, err := c.Append(ctx, id, 0, []session.Event{started(id, "ns")})
			for i := 0; err == nil; i++ {
				acked[w] = head
				if i == 3 {
					going.Done()
				}
				head, err = c.Append(ctx, id, head, []session.Event{prompt(seqText(head + 1))})
			}
			if acked[w] < 4 {
				going.Done()
			}
			if !errors.Is(err, checkpoint.ErrClosed) {
				t.Errorf("writer %d: append after %d events: %v, want only %v", w, acked[w], err, checkpoint.ErrClosed)
			}
		})
	}
	going.Wait()
	if err := c.Close(); err != nil {
		t.Errorf("close during writes: %v", err)
	}
	wg.Wait()
	if t.Failed() || !b.Persistent {
		return
	}
	c = open(t, b, loc)
	for w, head := range acked {
		id := fmt.Sprintf("s%d", w)
		log := readAll(t, c, id, 1)
		if err := contiguous(log, 1); err != nil {
			t.Fatalf("%s after reopening: %v", id, err)
		}
		if int64(len(log)) < head {
			t.Fatalf("%s after reopening has %d events, but Append acknowledged head %d", id, len(log), head)
		}
		for _, e := range log[1:] {
			if got := promptText(t, e); got != seqText(e.Seq) {
				t.Fatalf("%s event %d holds %q, want %q", id, e.Seq, got, seqText(e.Seq))
			}
		}
		mustAppend(t, c, id, int64(len(log)), prompt("after reopening"))
	}
}

func testReopen(t *testing.T, b Backend) {
	loc := b.NewLocation(t)
	c, err := b.Open(loc)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	base := session.Now().Add(-time.Hour)
	logs := listFixture(t, c, base)
	// A deleted session and a truncated one must stay so.
	create(t, c, "deleted", "a", 3)
	if err := c.Delete(t.Context(), "deleted"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Truncate(t.Context(), "a2", 6, 10); err != nil {
		t.Fatal(err)
	}
	logs["a2"] = logs["a2"][:6]
	if err := c.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}

	for round := range 2 {
		c = open(t, b, loc)
		for id, log := range logs {
			checkLog(t, c, id, log)
			checkHead(t, c, id, log)
		}
		wantNotFound(t, c, "deleted")
		checkList(t, c, logs, "", checkpoint.ListOptions{AllKinds: true}, map[int]string{
			0: "b1 a2 a3 a1 a5 a4 b2",
			1: "a5 b1 a2 a3 a1 a4 b2",
		}[round])
		// Appends continue at the stored heads.
		e := prompt(fmt.Sprintf("after reopening %d", round))
		e.Time = base.Add(70 * time.Minute)
		log := logs["a5"]
		mustAppend(t, c, "a5", int64(len(log)), e)
		logs["a5"] = append(log, numbered(int64(len(log)), e)...)
		_, err := c.Append(t.Context(), "a1", 3, []session.Event{prompt("stale")})
		wantConflict(t, "stale append after reopening", err, 3, 7)
		if err := c.Close(); err != nil {
			t.Fatalf("close: %v", err)
		}
	}
	c = open(t, b, loc)
	checkLog(t, c, "a5", logs["a5"])
}

func testTwoHandles(t *testing.T, b Backend) {
	loc := b.NewLocation(t)
	c1, c2 := open(t, b, loc), open(t, b, loc)
	ctx := t.Context()
	log := create(t, c1, "s1", "ns", 1)
	checkLog(t, c2, "s1", log)
	checkHead(t, c2, "s1", log)
	more := numbered(2, reply("from c2"))
	mustAppend(t, c2, "s1", 2, more...)
	log = append(log, more...)
	_, err := c1.Append(ctx, "s1", 2, []session.Event{reply("stale c1")})
	wantConflict(t, "append through one handle after another appended", err, 2, 3)
	checkHead(t, c1, "s1", log)
	checkLog(t, c1, "s1", log)
	if _, err := c1.Truncate(ctx, "s1", 2, 3); err != nil {
		t.Fatal(err)
	}
	checkLog(t, c2, "s1", log[:2])
	checkHead(t, c2, "s1", log[:2])
	if err := c2.Delete(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	wantNotFound(t, c1, "s1")
	if list, err := c1.List(ctx, "ns", checkpoint.ListOptions{AllKinds: true}); err != nil || len(list) != 0 {
		t.Fatalf("list through the other handle after delete = [%s], %v; want nothing", ids(list), err)
	}
	// Writers on both handles at once.
	create(t, c2, "s2", "ns", 0)
	const workers, appends = 8, 6
	runWorkers(t, []checkpoint.Checkpointer{c1, c2}, "s2", workers, appends)
	for _, c := range []checkpoint.Checkpointer{c1, c2} {
		got := readAll(t, c, "s2", 1)
		checkWork(t, got, workers, appends)
		checkHead(t, c, "s2", got)
	}
	if list, err := c2.List(ctx, "ns", checkpoint.ListOptions{}); err != nil || ids(list) != "s2" || !slices.ContainsFunc(list, func(s session.Summary) bool { return s.Head == int64(1+workers*workEvents(appends)) }) {
		t.Fatalf("list after concurrent writers = %+v, %v", list, err)
	}
}

// testReadsPastTheHeadDuringWrites: a reader asking for the events after
// the head it knows, while a writer appends, sees nothing or the new
// events, never a damaged log (the head may move between what a backend
// reads first and what it checks next).
func testReadsPastTheHeadDuringWrites(t *testing.T, b Backend) {
	c := fresh(t, b)
	ctx, cancel := context.WithTimeout(t.Context(), concurrencyTimeout)
	defer cancel()
	mustAppend(t, c, "s1", 0, started("s1", "ns"))
	const appends = 300
	var done atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		defer done.Store(true)
		for head := int64(1); head <= appends; head++ {
			if _, err := c.Append(ctx, "s1", head, []session.Event{prompt(seqText(head + 1))}); err != nil {
				t.Errorf("writer: append at head %d: %v", head, err)
				return
			}
		}
	})
	known := int64(1)
	for !done.Load() {
		for e, err := range c.Read(ctx, "s1", known+1) {
			if err != nil {
				t.Fatalf("read after head %d while a writer appends: %v", known, err)
			}
			known = e.Seq
		}
	}
	wg.Wait()
}
