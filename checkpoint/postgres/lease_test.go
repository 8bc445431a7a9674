package postgres_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/postgres"
)

// roleLease is a child process that takes a session's lease and holds it
// until its stdin closes (or it is killed).
const roleLease = "lease"

// envSession names the session a lease holder takes.
const envSession = "LITE_PG_TEST_SESSION"

func runLeaseHolder() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := postgres.Open(ctx, os.Getenv(envLocation), nil)
	if err != nil {
		return err
	}
	defer s.Close()
	release, err := s.Lease(ctx, os.Getenv(envSession))
	if err != nil {
		return err
	}
	defer release()
	fmt.Println("held")
	_, err = io.Copy(io.Discard, os.Stdin)
	return err
}

// startHolder starts a process holding session id's lease at loc and
// waits until it holds it.
func startHolder(t *testing.T, loc, id string) (*exec.Cmd, io.WriteCloser) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envRole+"="+roleLease, envLocation+"="+loc, envSession+"="+id)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(out)
	if !sc.Scan() || sc.Text() != "held" {
		cmd.Wait()
		t.Fatalf("the lease holder did not take the lease: %q %s", sc.Text(), stderr.String())
	}
	return cmd, stdin
}

// waitFree waits (bounded) until nobody holds session id's lease, as the
// server sees it once the holder's connection is gone.
func waitFree(t *testing.T, s *postgres.Store, id string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		h, err := s.LeaseHolder(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if h == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the lease of %s is still held by %+v", id, h)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestLeaseAcrossHosts: a process holding a session's lease is named to
// another host (its own process and pool) by LeaseHolder and by the
// *LeaseHeldError of a second Lease; other sessions, and the same id in
// another schema, are free; killed, the holder holds nothing and the lease
// can be taken again.
func TestLeaseAcrossHosts(t *testing.T) {
	loc := newSchema(t)
	s := openStore(t, loc, nil)
	ctx := t.Context()
	if h, err := s.LeaseHolder(ctx, "s1"); h != nil || err != nil {
		t.Fatalf("holder of a lease never taken = %+v, %v; want none", h, err)
	}
	cmd, _ := startHolder(t, loc, "s1")
	host, _ := os.Hostname()
	h, err := s.LeaseHolder(ctx, "s1")
	if err != nil || h == nil || h.PID != cmd.Process.Pid || !strings.HasPrefix(host, h.Host) || h.Host == "" || h.Since.IsZero() {
		t.Fatalf("holder = %+v, %v; want process %d on %s", h, err, cmd.Process.Pid, host)
	}
	var held *checkpoint.LeaseHeldError
	if _, err := s.Lease(ctx, "s1"); !errors.As(err, &held) || held.Holder.PID != cmd.Process.Pid || held.Session != "s1" {
		t.Fatalf("second Lease = %v; want a *LeaseHeldError naming process %d", err, cmd.Process.Pid)
	}
	if !strings.Contains(held.Error(), fmt.Sprintf("process %d on host", cmd.Process.Pid)) {
		t.Errorf("the error does not name the holder: %v", held)
	}
	r2, err := s.Lease(ctx, "s2")
	if err != nil {
		t.Fatalf("another session's lease: %v", err)
	}
	r2()
	other := openStore(t, newSchema(t), nil)
	if r, err := other.Lease(ctx, "s1"); err != nil {
		t.Fatalf("the same id in another schema: %v", err)
	} else {
		r()
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	waitFree(t, s, "s1")
	release, err := s.Lease(ctx, "s1")
	if err != nil {
		t.Fatalf("Lease after the holder died: %v", err)
	}
	release()
	release() // idempotent
	if h, err := s.LeaseHolder(ctx, "s1"); h != nil || err != nil {
		t.Fatalf("holder after release = %+v, %v", h, err)
	}
}

// TestLeaseInOneProcess: two leases of one session conflict in one process
// too, and Close lets go of the leases a store still holds.
func TestLeaseInOneProcess(t *testing.T) {
	loc := newSchema(t)
	a, b := openStore(t, loc, nil), openStore(t, loc, nil)
	ctx := t.Context()
	if _, err := a.Lease(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	var held *checkpoint.LeaseHeldError
	if _, err := a.Lease(ctx, "s"); !errors.As(err, &held) || held.Holder.PID != os.Getpid() {
		t.Fatalf("a second lease in the same store = %v", err)
	}
	if _, err := b.Lease(ctx, "s"); !errors.As(err, &held) {
		t.Fatalf("a lease in another store = %v", err)
	}
	a.Close()
	waitFree(t, b, "s")
	r, err := b.Lease(ctx, "s")
	if err != nil {
		t.Fatalf("Lease after the holder's store closed: %v", err)
	}
	r()
	if _, err := a.Lease(ctx, "s"); !errors.Is(err, checkpoint.ErrClosed) {
		t.Fatalf("Lease on a closed store = %v", err)
	}
}

// TestLeaseConnectionDies: when the server ends the holder's connection
// (a network cut, an administrator), the lock goes with it and another
// host may lease the session; read-only stores answer LeaseHolder.
func TestLeaseConnectionDies(t *testing.T) {
	loc := newSchema(t)
	s := openStore(t, loc, nil)
	ro := openStore(t, loc, &postgres.Options{ReadOnly: true})
	ctx := t.Context()
	release, err := s.Lease(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if h, err := ro.LeaseHolder(ctx, "s"); err != nil || h == nil || h.PID != os.Getpid() {
		t.Fatalf("read-only LeaseHolder = %+v, %v", h, err)
	}
	n := queryInt(t, loc, `WITH k AS (SELECT hashtextextended('lite-agent session lease ' || current_schema() || ' s', 0) AS key)
		SELECT count(pg_terminate_backend(l.pid)) FROM k, pg_locks l WHERE l.locktype = 'advisory' AND l.objsubid = 1
		AND l.classid = ((k.key >> 32) & 4294967295)::oid AND l.objid = (k.key & 4294967295)::oid`)
	if n == 0 {
		t.Fatal("found no lease connection to end")
	}
	waitFree(t, ro, "s")
	r, err := openStore(t, loc, nil).Lease(ctx, "s")
	if err != nil {
		t.Fatalf("Lease after the holder's connection died: %v", err)
	}
	r()
	release() // closing a connection the server ended is no error
}
