package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/postgres"
	"github.com/lite-agent/lite-agent/session"
)

// endLease ends the server session holding session id's lease in the
// schema of loc, as an administrator or a network cut would, and waits
// until the server let go of the lock.
func endLease(t *testing.T, loc string, s *postgres.Store, id string) {
	t.Helper()
	n := queryInt(t, loc, `WITH k AS (SELECT hashtextextended('lite-agent session lease ' || current_schema() || ' ' || $1, 0) AS key)
		SELECT count(pg_terminate_backend(l.pid)) FROM k, pg_locks l WHERE l.locktype = 'advisory' AND l.objsubid = 1 AND l.granted
		AND l.classid = ((k.key >> 32) & 4294967295)::oid AND l.objid = (k.key & 4294967295)::oid`, id)
	if n == 0 {
		t.Fatal("found no lease connection to end")
	}
	waitFree(t, s, id)
}

func note(text string) session.Event {
	return session.MustNew(session.TypeUserPrompt, session.UserPrompt{Text: text})
}

func opened(id string) session.Event {
	return session.MustNew(session.TypeSessionStarted, session.SessionStarted{ID: id})
}

// TestLeaseTakenBack: when the connection holding a lease dies while
// nobody else takes the lease, the next append and truncate take it back on
// a new connection and go on; the lease is this store's again.
func TestLeaseTakenBack(t *testing.T) {
	loc := newSchema(t)
	s, other := openStore(t, loc, nil), openStore(t, loc, nil)
	ctx := t.Context()
	release, err := s.Lease(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if _, err := s.Append(ctx, "s", 0, []session.Event{opened("s"), note("one")}); err != nil {
		t.Fatal(err)
	}
	endLease(t, loc, other, "s")
	head, err := s.Append(ctx, "s", 2, []session.Event{note("two")})
	if err != nil || head != 3 {
		t.Fatalf("append after the lease's connection died = %d, %v; want head 3", head, err)
	}
	if h, err := other.LeaseHolder(ctx, "s"); err != nil || h == nil || h.PID != os.Getpid() {
		t.Fatalf("after the append the lease is held by %+v (%v); want this process", h, err)
	}
	var held *checkpoint.LeaseHeldError
	if _, err := other.Lease(ctx, "s"); !errors.As(err, &held) {
		t.Fatalf("another store's Lease after the lease was taken back = %v; want a *LeaseHeldError", err)
	}
	endLease(t, loc, other, "s")
	if _, err := s.Append(ctx, "s", 3, []session.Event{note("three")}); err != nil {
		t.Fatal(err)
	}
	if head, err := s.Truncate(ctx, "s", 2, 4); err != nil || head != 2 {
		t.Fatalf("truncate = %d, %v", head, err)
	}
	release()
	if h, err := other.LeaseHolder(ctx, "s"); h != nil || err != nil {
		t.Fatalf("after release the lease is held by %+v (%v)", h, err)
	}
	if events, err := checkpoint.ReadAll(ctx, other, "s"); err != nil || len(events) != 2 {
		t.Fatalf("log = %d events, %v; want 2", len(events), err)
	}
}

// TestLeaseLostToAnotherHost: when another host takes the lease after the
// holder's connection died, the old holder's appends and truncations fail
// with ErrLeaseLost naming the new holder and write nothing; once the
// other host let go, the old holder may take the lease back, and writes
// again only if the head is still the one it knew.
func TestLeaseLostToAnotherHost(t *testing.T) {
	loc := newSchema(t)
	s, other := openStore(t, loc, nil), openStore(t, loc, nil)
	ctx := t.Context()
	release, err := s.Lease(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if _, err := s.Append(ctx, "s", 0, []session.Event{opened("s"), note("one")}); err != nil {
		t.Fatal(err)
	}
	endLease(t, loc, other, "s")
	r2, err := other.Lease(ctx, "s")
	if err != nil {
		t.Fatalf("another host's Lease once the holder's connection died: %v", err)
	}
	var held *checkpoint.LeaseHeldError
	_, err = s.Append(ctx, "s", 2, []session.Event{note("lost")})
	if !errors.Is(err, checkpoint.ErrLeaseLost) || !errors.As(err, &held) || held.Holder.PID != os.Getpid() {
		t.Fatalf("append after the lease went to another host = %v; want ErrLeaseLost and a *LeaseHeldError", err)
	}
	if _, err := s.Truncate(ctx, "s", 1, 2); !errors.Is(err, checkpoint.ErrLeaseLost) {
		t.Fatalf("truncate after the lease went to another host = %v; want ErrLeaseLost", err)
	}
	if sum, err := other.Head(ctx, "s"); err != nil || sum.Head != 2 {
		t.Fatalf("head = %+v, %v; want 2: the lost holder wrote", sum, err)
	}
	// The other host lets go without writing: the head is still ours.
	r2()
	if head, err := s.Append(ctx, "s", 2, []session.Event{note("two")}); err != nil || head != 3 {
		t.Fatalf("append once the other host let go = %d, %v; want head 3", head, err)
	}
	// The other host takes it again and writes: taking it back is not enough.
	endLease(t, loc, other, "s")
	r3, err := other.Lease(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Append(ctx, "s", 3, []session.Event{note("theirs")}); err != nil {
		t.Fatal(err)
	}
	r3()
	if _, err := s.Append(ctx, "s", 3, []session.Event{note("ours")}); !checkpoint.IsConflict(err) {
		t.Fatalf("append after another host wrote = %v; want a conflict", err)
	}
	events, err := checkpoint.ReadAll(ctx, other, "s")
	if err != nil || len(events) != 4 {
		t.Fatalf("log = %d events, %v; want 4", len(events), err)
	}
	var p session.UserPrompt
	if err := events[3].Decode(&p); err != nil || p.Text != "theirs" {
		t.Fatalf("last event = %+v, %v; want the other host's", p, err)
	}
}

// BenchmarkTurnAppends measures what a turn's store work costs: take the
// lease, make five appends, let go. Each iteration runs it twice, in turn:
// with the appends on the lease's connection (as a turn makes them now) and
// on the pool while the same store holds the lease (as a turn made them
// before they moved to the lease's connection; the twin store's appends
// take that path), which of the two first alternating. It reports both
// medians and their ratio.
func BenchmarkTurnAppends(b *testing.B) {
	loc := newSchema(b)
	s, twin := openStore(b, loc, nil), openStore(b, loc, nil)
	ctx := context.Background()
	turn := func(w *postgres.Store, id string) time.Duration {
		start := time.Now()
		release, err := s.Lease(ctx, id)
		if err != nil {
			b.Fatal(err)
		}
		head, err := w.Append(ctx, id, 0, []session.Event{opened(id)})
		for j := 0; j < 4 && err == nil; j++ {
			head, err = w.Append(ctx, id, head, []session.Event{note("step")})
		}
		if err != nil {
			b.Fatal(err)
		}
		release()
		return time.Since(start)
	}
	var onLease, onPool []time.Duration
	for i := range b.N {
		if i%2 == 0 { // which goes first alternates too
			onLease = append(onLease, turn(s, fmt.Sprintf("lease-%d", i)))
			onPool = append(onPool, turn(twin, fmt.Sprintf("pool-%d", i)))
		} else {
			onPool = append(onPool, turn(twin, fmt.Sprintf("pool-%d", i)))
			onLease = append(onLease, turn(s, fmt.Sprintf("lease-%d", i)))
		}
	}
	l, p := medianOf(onLease), medianOf(onPool)
	b.ReportMetric(float64(l.Microseconds())/1000, "lease-ms-p50")
	b.ReportMetric(float64(p.Microseconds())/1000, "pool-ms-p50")
	b.ReportMetric(float64(l)/float64(p), "x-pool")
	b.ReportMetric(0, "ns/op")
}

func medianOf(d []time.Duration) time.Duration {
	slices.Sort(d)
	return d[len(d)/2]
}
