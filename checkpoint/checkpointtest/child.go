package checkpointtest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
)

// Environment variables a parent test sets to make the test binary play a
// child's role instead of running tests.
const (
	envRole     = "LITEAGENT_CHECKPOINTTEST_ROLE"
	envLocation = "LITEAGENT_CHECKPOINTTEST_LOCATION"
	envSession  = "LITEAGENT_CHECKPOINTTEST_SESSION"
	envArgs     = "LITEAGENT_CHECKPOINTTEST_ARGS"
)

// Child roles.
const (
	// roleAppend: print "ready", wait for stdin to close, run work, print
	// "done <conflicts>".
	roleAppend = "append"
	// roleCrash: append batches until killed, printing "<seq> <sha256 of
	// data>" for every event of every acknowledged append.
	roleCrash = "crash"
)

// childLifetime bounds how long a child runs, so that a child whose parent
// died does not run forever.
const childLifetime = 2 * time.Minute

// Main must be called from the backend test package's TestMain:
//
//	func TestMain(m *testing.M) { checkpointtest.Main(m, backend()) }
//
// In a child process started by the suite (the test binary re-executed with
// the suite's environment variables) it performs the child's role with
// b.Open and exits; otherwise it runs m.Run() and exits with its code.
func Main(m *testing.M, b Backend) {
	role := os.Getenv(envRole)
	if role == "" {
		os.Exit(m.Run())
	}
	if err := runChild(role, b); err != nil {
		fmt.Fprintf(os.Stderr, "checkpointtest child %s (pid %d): %v\n", role, os.Getpid(), err)
		os.Exit(2)
	}
	os.Exit(0)
}

// runChild performs one child role.
func runChild(role string, b Backend) error {
	ctx, cancel := context.WithTimeout(context.Background(), childLifetime)
	defer cancel()
	loc, id := os.Getenv(envLocation), os.Getenv(envSession)
	c, err := b.Open(loc)
	if err != nil {
		return fmt.Errorf("open %s: %w", loc, err)
	}
	defer c.Close()
	args := strings.Fields(os.Getenv(envArgs))
	switch role {
	case roleAppend:
		var w, appends int
		if _, err := fmt.Sscan(strings.Join(args, " "), &w, &appends); err != nil {
			return fmt.Errorf("arguments %q: %w", args, err)
		}
		fmt.Println("ready")
		// The parent closes stdin when every child is ready, so that they
		// all start appending at once.
		if _, err := io.Copy(io.Discard, os.Stdin); err != nil {
			return err
		}
		conflicts, err := work(ctx, c, id, w, appends)
		if err != nil {
			return err
		}
		fmt.Println("done", conflicts)
		return c.Close()
	case roleCrash:
		var seed uint64
		var maxBytes int
		if _, err := fmt.Sscan(strings.Join(args, " "), &seed, &maxBytes); err != nil {
			return fmt.Errorf("arguments %q: %w", args, err)
		}
		return crashChild(ctx, c, id, seed, maxBytes)
	default:
		return fmt.Errorf("unknown role %q", role)
	}
}

// crashEvent is an event of about n bytes whose data is unique to tag.
func crashEvent(tag string, n int) session.Event {
	return session.MustNew(session.TypeUserPrompt, session.UserPrompt{Text: tag + " " + strings.Repeat(tag[len(tag)-1:], max(n-len(tag)-14, 0))})
}

// crashChild appends to session id until it is killed. After each append
// returns it writes one line per event, "<seq> <sha256 of its data>", in a
// single write.
func crashChild(ctx context.Context, c checkpoint.Checkpointer, id string, seed uint64, maxBytes int) error {
	rng := rand.New(rand.NewPCG(seed, 0))
	s, err := c.Head(ctx, id)
	head := s.Head
	if errors.Is(err, checkpoint.ErrNotFound) {
		head, err = 0, nil
	}
	if err != nil {
		return err
	}
	sizes := []int{100, 100, 1 << 10, 1 << 10, 8 << 10, 64 << 10, 256 << 10}
	var lines bytes.Buffer
	for {
		var batch []session.Event
		if head == 0 {
			batch = append(batch, started(id, "crash"))
		}
		for range 1 + rng.IntN(3) {
			n := sizes[rng.IntN(len(sizes))]
			if maxBytes > 0 {
				n = min(n, maxBytes)
			}
			tag := fmt.Sprintf("%d-%d-%c", seed, head+int64(len(batch))+1, 'a'+rng.IntN(26))
			batch = append(batch, crashEvent(tag, n))
		}
		got, err := c.Append(ctx, id, head, batch)
		if err != nil {
			return fmt.Errorf("append at head %d: %w", head, err)
		}
		lines.Reset()
		for k, e := range batch {
			fmt.Fprintf(&lines, "%d %s\n", head+int64(k)+1, digest(e.Data))
		}
		if _, err := os.Stdout.Write(lines.Bytes()); err != nil {
			return err
		}
		head = got
	}
}

// digest is the hex sha256 of data.
func digest(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// child is a running child process of the test binary.
type child struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    *lineWriter
	stderr bytes.Buffer // read only after exited is closed
	exited chan struct{}
	err    error // cmd.Wait's, set before exited is closed
}

// startChild starts the test binary as a child playing role at loc on
// session id, with args (space-separated) for the role. The child is killed when the test ends if it still runs.
func startChild(tb testing.TB, b Backend, role, loc, id, args string) *child {
	tb.Helper()
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	ch := &child{out: newLineWriter(), exited: make(chan struct{})}
	ch.cmd = exec.Command(exe, "-test.run=^$", "-test.count=1")
	ch.cmd.Env = append(os.Environ(),
		envRole+"="+role, envLocation+"="+loc, envSession+"="+id, envArgs+"="+args)
	ch.cmd.Stdout, ch.cmd.Stderr = ch.out, &ch.stderr
	if ch.stdin, err = ch.cmd.StdinPipe(); err != nil {
		tb.Fatal(err)
	}
	if err := ch.cmd.Start(); err != nil {
		tb.Fatalf("start child %s of %s: %v", role, b.Name, err)
	}
	go func() {
		ch.err = ch.cmd.Wait()
		close(ch.exited)
	}()
	tb.Cleanup(func() {
		ch.kill()
		ch.stdin.Close()
	})
	return ch
}

// kill kills the child with SIGKILL, if it still runs, and waits for it.
func (ch *child) kill() {
	select {
	case <-ch.exited:
	default:
		ch.cmd.Process.Kill()
		<-ch.exited
	}
}

// waitLine waits for the child to print a line starting with prefix.
func (ch *child) waitLine(ctx context.Context, prefix string) (string, error) {
	for {
		changed := ch.out.changed()
		for _, l := range ch.out.lines() {
			if strings.HasPrefix(l, prefix) {
				return l, nil
			}
		}
		select {
		case <-changed:
		case <-ch.exited:
			for _, l := range ch.out.lines() {
				if strings.HasPrefix(l, prefix) {
					return l, nil
				}
			}
			return "", fmt.Errorf("child exited (%v) before printing %q; its stderr:\n%s\n(does the test package's TestMain call checkpointtest.Main?)", ch.err, prefix, ch.stderr.String())
		case <-ctx.Done():
			return "", fmt.Errorf("waiting for the child to print %q: %w", prefix, ctx.Err())
		}
	}
}

// lineWriter collects a child's output and tells waiters when it grows.
type lineWriter struct {
	mu   sync.Mutex
	buf  []byte
	grew chan struct{} // closed and replaced by every write
}

func newLineWriter() *lineWriter { return &lineWriter{grew: make(chan struct{})} }

// Write implements io.Writer.
func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	close(w.grew)
	w.grew = make(chan struct{})
	return len(p), nil
}

// changed returns a channel closed at the next write.
func (w *lineWriter) changed() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.grew
}

// lines returns the complete lines written so far; a last line without its
// newline (cut by a kill) is left out.
func (w *lineWriter) lines() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(w.buf))
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	if len(w.buf) > 0 && w.buf[len(w.buf)-1] != '\n' && len(out) > 0 {
		out = out[:len(out)-1]
	}
	return out
}

func testMultiProcess(t *testing.T, b Backend) {
	loc := b.NewLocation(t)
	c := open(t, b, loc)
	create(t, c, "s1", "ns", 0)
	ctx, cancel := context.WithTimeout(t.Context(), concurrencyTimeout)
	defer cancel()
	const procs, appends = 4, 25
	children := make([]*child, procs)
	for w := range procs {
		children[w] = startChild(t, b, roleAppend, loc, "s1", fmt.Sprint(w, appends))
	}
	for w, ch := range children {
		if _, err := ch.waitLine(ctx, "ready"); err != nil {
			t.Fatalf("child %d: %v", w, err)
		}
	}
	for _, ch := range children {
		ch.stdin.Close()
	}
	for w, ch := range children {
		line, err := ch.waitLine(ctx, "done")
		if err != nil {
			t.Fatalf("child %d: %v", w, err)
		}
		select {
		case <-ch.exited:
		case <-ctx.Done():
			t.Fatalf("child %d did not exit after it finished", w)
		}
		if ch.err != nil {
			t.Fatalf("child %d: %v; stderr:\n%s", w, ch.err, ch.stderr.String())
		}
		t.Logf("child %d: %s conflicts", w, strings.TrimPrefix(line, "done "))
	}
	log := readAll(t, c, "s1", 1)
	checkWork(t, log, procs, appends)
	checkHead(t, c, "s1", log)
}
