package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
)

// pgctl runs the test server's pg_ctl with args, as LITE_AGENT_TEST_PGCTL
// (a command line, split on spaces) says. It skips the test if the variables
// that .ci/postgres.sh exports are not set.
func pgctl(tb testing.TB, args ...string) error {
	tb.Helper()
	cmdline, data := os.Getenv("LITE_AGENT_TEST_PGCTL"), os.Getenv("LITE_AGENT_TEST_PGDATA")
	if cmdline == "" || data == "" {
		tb.Skip("LITE_AGENT_TEST_PGCTL and LITE_AGENT_TEST_PGDATA are not set: this test restarts the server and needs its pg_ctl and data directory; `source .ci/postgres.sh` sets them")
	}
	f := strings.Fields(cmdline)
	full := append(f[1:], "-D", data)
	full = append(full, args...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, f[0], full...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_ctl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// startServer starts the test server if it is not running. pg_ctl writes its
// log beside the data directory, where .ci/postgres.sh keeps it.
func startServer(tb testing.TB) error {
	tb.Helper()
	if pgctl(tb, "status") == nil {
		return nil
	}
	log := filepath.Join(filepath.Dir(os.Getenv("LITE_AGENT_TEST_PGDATA")), "postgres.log")
	return pgctl(tb, "-w", "-t", "60", "-l", log, "start")
}

// TestServerRestart kills the server in the middle of appends (pg_ctl stop
// -m immediate: a crash, no shutdown checkpoint) and starts it again after
// longer than a Store retries. Every Append that returned nil must be in
// the log afterwards, exactly once; the others fail with an error that says
// the server went away; and the same Store goes on working once the server
// is back, without being reopened.
func TestServerRestart(t *testing.T) {
	if err := pgctl(t, "status"); err != nil {
		t.Fatalf("the test server is not running: %v", err)
	}
	t.Cleanup(func() {
		if err := startServer(t); err != nil {
			t.Errorf("start the server again: %v", err)
		}
	})
	loc := newSchema(t)
	s := openStore(t, loc, nil)
	u, _ := url.Parse(loc)
	password, _ := u.User.Password()
	ctx := t.Context()

	const writers = 3
	type writer struct {
		mu      sync.Mutex
		acked   map[int64]string // seq → text
		errs    []error
		appends int
	}
	ws := make([]*writer, writers)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range writers {
		ws[w] = &writer{acked: map[int64]string{}}
		id := fmt.Sprintf("restart-%d", w)
		if _, err := s.Append(ctx, id, 0, []session.Event{started(id)}); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			me, head := ws[w], int64(1)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				text := fmt.Sprintf("w%d-%d", w, i)
				got, err := s.Append(ctx, id, head, []session.Event{promptEvent(text)})
				me.mu.Lock()
				if err == nil {
					me.acked[got] = text
					me.appends++
					head = got
				} else {
					me.errs = append(me.errs, err)
				}
				me.mu.Unlock()
				if err != nil {
					// The append may or may not have been saved: learn the
					// head again once the server answers.
					for {
						select {
						case <-stop:
							return
						case <-time.After(50 * time.Millisecond):
						}
						if sum, err := s.Head(ctx, id); err == nil {
							head = sum.Head
							break
						}
					}
				}
			}
		})
	}
	progress := func() (n int) {
		for _, w := range ws {
			w.mu.Lock()
			n = min(n, w.appends)
			if n == 0 || w.appends < n {
				n = w.appends
			}
			w.mu.Unlock()
		}
		return n
	}
	waitFor := func(n int) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for progress() < n {
			if time.Now().After(deadline) {
				close(stop)
				wg.Wait()
				t.Fatalf("the writers made only %d appends each in a minute, want %d", progress(), n)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	waitFor(20)
	if err := pgctl(t, "-m", "immediate", "-w", "stop"); err != nil {
		t.Fatal(err)
	}
	// Down for longer than a Store retries, so some appends fail.
	time.Sleep(4 * time.Second)
	before := progress()
	if err := startServer(t); err != nil {
		t.Fatal(err)
	}
	waitFor(before + 20)
	close(stop)
	wg.Wait()

	failed := 0
	for w, me := range ws {
		id := fmt.Sprintf("restart-%d", w)
		log, err := checkpoint.ReadAll(ctx, s, id)
		if err != nil {
			t.Fatalf("read %s after the restart: %v", id, err)
		}
		seen := map[string]bool{}
		for i, e := range log {
			if e.Seq != int64(i+1) {
				t.Fatalf("%s: event %d has seq %d", id, i, e.Seq)
			}
			if i == 0 {
				continue
			}
			text := promptOf(t, e)
			if seen[text] {
				t.Fatalf("%s holds %q twice", id, text)
			}
			seen[text] = true
		}
		for seq, text := range me.acked {
			if seq > int64(len(log)) || promptOf(t, log[seq-1]) != text {
				t.Fatalf("%s: %q was acknowledged at seq %d but is not there after the restart", id, text, seq)
			}
		}
		for _, err := range me.errs {
			failed++
			msg := err.Error()
			if !strings.Contains(msg, "PostgreSQL server") || !strings.Contains(msg, "127.0.0.1:") || errors.Is(err, checkpoint.ErrInvalid) {
				t.Errorf("an append during the restart failed with %q, want an error naming the server that went away", msg)
			}
			if password != "" && strings.Contains(msg, password) {
				t.Fatalf("an error shows the password: %s", msg)
			}
		}
		t.Logf("%s: %d appends acknowledged, %d failed, %d events", id, len(me.acked), len(me.errs), len(log))
	}
	if failed == 0 {
		t.Fatal("no append failed while the server was down for 4 seconds")
	}
	if len(ws[0].errs) > 0 {
		t.Logf("for example: %v", ws[0].errs[0])
	}
}
