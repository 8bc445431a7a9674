//go:build unix

package lockfile_test

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/lockfile"
)

// TestLease: a held lease names its holder to everyone else and refuses a
// second holder; released, it is free and shows no holder; ids that are not
// plain names stay inside the directory.
func TestLease(t *testing.T) {
	ctx := t.Context()
	dir := filepath.Join(t.TempDir(), "s.db.leases")
	d := lockfile.New(dir)
	if h, err := d.LeaseHolder(ctx, "s1"); h != nil || err != nil {
		t.Fatalf("holder of a lease never taken = %v, %v; want none", h, err)
	}
	release, err := d.Lease(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	h, err := lockfile.New(dir).LeaseHolder(ctx, "s1")
	if err != nil || h == nil || h.PID != os.Getpid() {
		t.Fatalf("holder = %+v, %v; want this process (%d)", h, err, os.Getpid())
	}
	var held *checkpoint.LeaseHeldError
	if _, err := lockfile.New(dir).Lease(ctx, "s1"); !errors.As(err, &held) || held.Holder.PID != os.Getpid() {
		t.Fatalf("second Lease = %v, want a *LeaseHeldError naming pid %d", err, os.Getpid())
	}
	if r2, err := d.Lease(ctx, "s2"); err != nil {
		t.Fatalf("another session's lease: %v", err)
	} else {
		r2()
	}
	release()
	release() // idempotent
	if h, err := d.LeaseHolder(ctx, "s1"); h != nil || err != nil {
		t.Fatalf("holder after release = %+v, %v; want none", h, err)
	}
	r, err := d.Lease(ctx, "../../escape")
	if err != nil {
		t.Fatal(err)
	}
	defer r()
	entries, _ := os.ReadDir(filepath.Dir(dir))
	if len(entries) != 1 {
		t.Fatalf("a lease for an id with slashes wrote outside its directory: %v", entries)
	}
}

// TestLeaseWhileOthersLook: readers asking for the holder without pause
// (as every session info request does) never make a Lease fail; a held
// lease still refuses a second holder meanwhile.
func TestLeaseWhileOthersLook(t *testing.T) {
	ctx := t.Context()
	dir := filepath.Join(t.TempDir(), "s.db.leases")
	d := lockfile.New(dir)
	release, err := d.Lease(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	release()
	stop := make(chan struct{})
	done := make(chan struct{})
	for range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			r := lockfile.New(dir)
			for {
				select {
				case <-stop:
					return
				default:
				}
				r.LeaseHolder(ctx, "s1")
			}
		}()
	}
	for i := range 300 {
		release, err := d.Lease(ctx, "s1")
		if err != nil {
			close(stop)
			t.Fatalf("Lease %d while others look: %v", i, err)
		}
		var held *checkpoint.LeaseHeldError
		if _, err := lockfile.New(dir).Lease(ctx, "s1"); !errors.As(err, &held) {
			close(stop)
			t.Fatalf("a second Lease while held: %v, want a *LeaseHeldError", err)
		}
		release()
	}
	close(stop)
	for range 4 {
		<-done
	}
}

// TestLeaseFileRemoved: a lease's file is gone once the lease ends, and
// leases taken and ended without pause by many holders at once (each its
// own open file, as separate processes have) never let two hold the same
// session, although each removal races with others opening the file.
func TestLeaseFileRemoved(t *testing.T) {
	ctx := t.Context()
	dir := filepath.Join(t.TempDir(), "s.db.leases")
	release, err := lockfile.New(dir).Lease(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	release()
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("after the lease ended the directory holds %v, want nothing", entries)
	}

	var holders, most, taken atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			d := lockfile.New(dir)
			for range 300 {
				release, err := d.Lease(ctx, "s1")
				var held *checkpoint.LeaseHeldError
				if errors.As(err, &held) {
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				n := holders.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				taken.Add(1)
				time.Sleep(20 * time.Microsecond) // held a moment, as a turn holds it
				holders.Add(-1)
				release()
			}
		})
	}
	wg.Wait()
	if most.Load() != 1 || taken.Load() == 0 {
		t.Fatalf("at most %d holders at once over %d leases, want exactly 1", most.Load(), taken.Load())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("after every lease ended the directory holds %v, want nothing", entries)
	}
}
