package postgres_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/postgres"
	"github.com/lite-agent/lite-agent/session"
)

// The test binary plays a host of TestManyHosts when these are set (see
// TestMain).
const (
	envRole     = "LITE_PG_TEST_ROLE"
	envLocation = "LITE_PG_TEST_LOCATION"
	envWriter   = "LITE_PG_TEST_WRITER"
	envAppends  = "LITE_PG_TEST_APPENDS"
)

const roleHost = "host"

// runChild plays a role in a child process.
func runChild(role string) error {
	if role == roleLease {
		return runLeaseHolder()
	}
	if role != roleHost {
		return fmt.Errorf("unknown role %q", role)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	writer := os.Getenv(envWriter)
	appends, err := strconv.Atoi(os.Getenv(envAppends))
	if err != nil {
		return err
	}
	s, err := postgres.Open(ctx, os.Getenv(envLocation), nil)
	if err != nil {
		return err
	}
	defer s.Close()
	own := "own-" + writer
	if _, err := s.Append(ctx, own, 0, []session.Event{started(own)}); err != nil {
		return err
	}
	fmt.Println("ready")
	// The parent closes stdin once every host is ready.
	if _, err := io.Copy(io.Discard, os.Stdin); err != nil {
		return err
	}
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	shared, ownHead, conflicts := int64(1), int64(1), 0
	for i := range appends {
		text := fmt.Sprintf("%s-%d", writer, i)
		// The shared session: on a conflict, take the head it names and
		// try again; any other error ends the host.
		for {
			head, err := s.Append(ctx, "shared", shared, []session.Event{promptEvent(text)})
			var ce *checkpoint.ConflictError
			if errors.As(err, &ce) {
				conflicts++
				shared = ce.Actual
				continue
			}
			if err != nil {
				return fmt.Errorf("append %s to shared: %w", text, err)
			}
			shared = head
			fmt.Fprintf(out, "shared %d %s\n", head, text)
			break
		}
		head, err := s.Append(ctx, own, ownHead, []session.Event{promptEvent(text)})
		if err != nil {
			return fmt.Errorf("append %s to %s: %w", text, own, err)
		}
		ownHead = head
		fmt.Fprintf(out, "%s %d %s\n", own, head, text)
	}
	fmt.Fprintf(out, "conflicts %d\n", conflicts)
	return nil
}

func started(id string) session.Event {
	return session.MustNew(session.TypeSessionStarted, session.SessionStarted{ID: id, Namespace: "hosts"})
}

func promptEvent(text string) session.Event {
	return session.MustNew(session.TypeUserPrompt, session.UserPrompt{Text: text})
}

func promptOf(tb testing.TB, e session.Event) string {
	tb.Helper()
	var p session.UserPrompt
	if err := e.Decode(&p); err != nil {
		tb.Fatal(err)
	}
	return p.Text
}

// TestManyHosts runs four processes, each with its own Store and pool,
// appending at once to one shared session (with optimistic retries on
// conflicts) and to a session of its own. Every acknowledged append must be
// in the logs exactly once, at the seq it was acknowledged with, and nothing
// else may be there.
func TestManyHosts(t *testing.T) {
	loc := newSchema(t)
	const hosts, appends = 4, 40
	s := openStore(t, loc, nil)
	if _, err := s.Append(t.Context(), "shared", 0, []session.Event{started("shared")}); err != nil {
		t.Fatal(err)
	}
	type host struct {
		cmd    *exec.Cmd
		stdin  io.WriteCloser
		stdout *bufio.Scanner
		stderr strings.Builder
	}
	hs := make([]*host, hosts)
	for i := range hs {
		h := &host{cmd: exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$")}
		h.cmd.Env = append(os.Environ(), envRole+"="+roleHost, envLocation+"="+loc,
			fmt.Sprintf("%s=w%d", envWriter, i), fmt.Sprintf("%s=%d", envAppends, appends))
		h.cmd.Stderr = &h.stderr
		var err error
		if h.stdin, err = h.cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
		out, err := h.cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		h.stdout = bufio.NewScanner(out)
		if err := h.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		hs[i] = h
	}
	for i, h := range hs {
		if !h.stdout.Scan() || h.stdout.Text() != "ready" {
			h.cmd.Wait()
			t.Fatalf("host %d did not get ready: %s", i, h.stderr.String())
		}
	}
	for _, h := range hs {
		h.stdin.Close() // go
	}
	acked := map[string]map[int64]string{} // session → seq → text
	conflicts := 0
	for i, h := range hs {
		for h.stdout.Scan() {
			f := strings.Fields(h.stdout.Text())
			if len(f) == 2 && f[0] == "conflicts" {
				n, _ := strconv.Atoi(f[1])
				conflicts += n
				continue
			}
			seq, err := strconv.ParseInt(f[1], 10, 64)
			if len(f) != 3 || err != nil {
				t.Fatalf("host %d printed %q", i, h.stdout.Text())
			}
			if acked[f[0]] == nil {
				acked[f[0]] = map[int64]string{}
			}
			if prev, dup := acked[f[0]][seq]; dup {
				t.Fatalf("seq %d of %s acknowledged twice: to %s and to %s", seq, f[0], prev, f[2])
			}
			acked[f[0]][seq] = f[2]
		}
		if err := h.cmd.Wait(); err != nil {
			t.Fatalf("host %d: %v\n%s", i, err, h.stderr.String())
		}
	}
	t.Logf("%d hosts, %d appends each to the shared session and their own, %d conflicts", hosts, appends, conflicts)
	ctx := t.Context()
	for id, seqs := range acked {
		log, err := checkpoint.ReadAll(ctx, s, id)
		if err != nil {
			t.Fatal(err)
		}
		if len(log) != len(seqs)+1 {
			t.Fatalf("%s has %d events, want %d acknowledged + session_started", id, len(log), len(seqs))
		}
		seen := map[string]bool{}
		for _, e := range log[1:] {
			text := promptOf(t, e)
			if seen[text] {
				t.Fatalf("%s holds %q twice", id, text)
			}
			seen[text] = true
			if want := seqs[e.Seq]; text != want {
				t.Fatalf("%s seq %d is %q, but %q was acknowledged at that seq", id, e.Seq, text, want)
			}
		}
		sum, err := s.Head(ctx, id)
		if err != nil || sum.Head != int64(len(log)) || sum.Messages != len(seqs) {
			t.Fatalf("head of %s: %+v, %v; want head %d with %d messages", id, sum, err, len(log), len(seqs))
		}
	}
	if got := len(acked["shared"]); got != hosts*appends {
		t.Fatalf("the shared session holds %d acknowledged appends, want %d", got, hosts*appends)
	}
	owns := slices.DeleteFunc(slices.Collect(func(yield func(string) bool) {
		for id := range acked {
			if !yield(id) {
				return
			}
		}
	}), func(id string) bool { return id == "shared" })
	if len(owns) != hosts {
		t.Fatalf("sessions of their own: %v, want %d", owns, hosts)
	}
}

// TestConcurrentAppendersOneStore has goroutines of one Store append to
// one session with optimistic retries, so group commits hold several appends
// to one session, some of them conflicting.
func TestConcurrentAppendersOneStore(t *testing.T) {
	s := openStore(t, newSchema(t), nil)
	ctx := t.Context()
	if _, err := s.Append(ctx, "one", 0, []session.Event{started("one")}); err != nil {
		t.Fatal(err)
	}
	const writers, appends = 6, 25
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		acked     = map[int64]string{}
		conflicts int
	)
	for w := range writers {
		wg.Go(func() {
			head := int64(1)
			for i := range appends {
				text := fmt.Sprintf("w%d-%d", w, i)
				for {
					// Two events per append, so a torn append would show.
					got, err := s.Append(ctx, "one", head, []session.Event{promptEvent(text), promptEvent(text + "'")})
					var ce *checkpoint.ConflictError
					if errors.As(err, &ce) {
						mu.Lock()
						conflicts++
						mu.Unlock()
						head = ce.Actual
						continue
					}
					if err != nil {
						t.Errorf("append %s: %v", text, err)
						return
					}
					mu.Lock()
					acked[got-1] = text
					mu.Unlock()
					head = got
					break
				}
			}
		})
	}
	wg.Wait()
	log, err := checkpoint.ReadAll(ctx, s, "one")
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != 1+2*writers*appends {
		t.Fatalf("%d events, want %d", len(log), 1+2*writers*appends)
	}
	for seq, text := range acked {
		if a, b := promptOf(t, log[seq-1]), promptOf(t, log[seq]); a != text || b != text+"'" {
			t.Fatalf("seqs %d and %d are %q and %q, want the append %q acknowledged there", seq, seq+1, a, b, text)
		}
	}
	t.Logf("%d conflicts", conflicts)
}
