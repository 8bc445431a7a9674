package mcp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// stderrTail is how much of a server's stderr is kept for messages.
const stderrTail = 2048

// process is a running stdio server. The SDK's CommandTransport stops only
// the process it started, not its children, so lite-agent starts the
// server itself, in its own process group, and hands the pipes to the
// SDK's IOTransport; stop signals the whole group.
type process struct {
	cmd    *exec.Cmd
	stdin  *os.File // our end of the server's stdin
	stdout *os.File // our end of the server's stdout
	grace  time.Duration

	exited  chan struct{} // closed when the server process has exited
	waitErr error         // set before exited is closed

	tailMu   sync.Mutex
	tail     []byte        // the last stderrTail bytes of stderr
	tailDone chan struct{} // closed when stderr reached its end

	stopOnce sync.Once

	// onGarbage is called (once) with a line of stdout that is not JSON-RPC.
	onGarbage func(line string)
}

// startProcess runs c's command with its stdio on pipes.
func startProcess(c ServerConfig, grace time.Duration) (*process, error) {
	cmd := exec.Command(c.Command, c.Args...)
	cmd.Dir = c.Dir
	if len(c.Env) > 0 {
		cmd.Env = os.Environ()
		for k, v := range c.Env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	setGroup(cmd)
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	err = cmd.Start()
	// The child holds its own copies now.
	inR.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		return nil, err
	}
	p := &process{cmd: cmd, stdin: inW, stdout: outR, grace: grace, onGarbage: func(string) {}, exited: make(chan struct{}), tailDone: make(chan struct{})}
	go p.readStderr(errR)
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

func (p *process) readStderr(r *os.File) {
	defer close(p.tailDone)
	defer r.Close()
	buf := make([]byte, 4096)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			p.tailMu.Lock()
			p.tail = append(p.tail, buf[:n]...)
			if len(p.tail) > stderrTail {
				p.tail = append(p.tail[:0], p.tail[len(p.tail)-stderrTail:]...)
			}
			p.tailMu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

// settleStderr waits a little for the rest of stderr once the server is
// stopped (a process that left the group may hold it open).
func (p *process) settleStderr() {
	t := time.NewTimer(500 * time.Millisecond)
	defer t.Stop()
	select {
	case <-p.tailDone:
	case <-t.C:
	}
}

// stderr returns the tail of what the server wrote to stderr.
func (p *process) stderr() string {
	p.tailMu.Lock()
	defer p.tailMu.Unlock()
	return string(bytes.TrimSpace(bytes.ToValidUTF8(p.tail, []byte("?"))))
}

// transport is the SDK transport over the server's pipes. Closing it (the
// SDK does when the session closes) stops the server.
func (p *process) transport() sdk.Transport {
	return &sdk.IOTransport{Reader: io.NopCloser(&lineWatch{r: p.stdout, bad: p.onGarbage, atStart: true}), Writer: stopper{p}}
}

// lineWatch passes the server's stdout through and calls bad with the
// first line that cannot be JSON-RPC (it does not start with '{' or '['),
// which the SDK would skip: a server that writes logs to stdout fails its
// start at once with that line in the message, instead of at the timeout.
type lineWatch struct {
	r       io.Reader
	bad     func(line string)
	atStart bool   // the next byte starts a line
	line    []byte // the bad line being collected, nil when none
	done    bool
}

func (w *lineWatch) Read(b []byte) (int, error) {
	n, err := w.r.Read(b)
	for _, c := range b[:n] {
		switch {
		case w.done:
		case w.line != nil:
			if c == '\n' || len(w.line) >= 120 {
				w.bad(string(w.line))
				w.done = true
			} else {
				w.line = append(w.line, c)
			}
		case w.atStart && c != ' ' && c != '\t' && c != '\r' && c != '\n':
			w.atStart = false
			if c != '{' && c != '[' {
				w.line = []byte{c}
			}
		case c == '\n':
			w.atStart = true
		}
	}
	return n, err
}

// stopper is the server's stdin as the SDK writes to it; its Close stops
// the server.
type stopper struct{ p *process }

func (s stopper) Write(b []byte) (int, error) { return s.p.stdin.Write(b) }
func (s stopper) Close() error                { s.p.stop(); return nil }

// stop ends the server the polite way: close its stdin, wait; SIGTERM to
// its process group, wait; SIGKILL to the group. Whatever else is left in
// the group (children of a server that exited by itself) is killed too.
// It returns once the server has exited; safe to call more than once.
func (p *process) stop() {
	p.stopOnce.Do(func() {
		p.stdin.Close()
		if !p.waitExit(p.grace) {
			signalGroup(p.cmd, termSignal)
			if !p.waitExit(p.grace) {
				signalGroup(p.cmd, killSignal)
				<-p.exited
			}
		}
		signalGroup(p.cmd, killSignal)
		waitGroupGone(p.cmd)
		p.stdout.Close()
	})
}

// waitExit reports whether the server exited within d.
func (p *process) waitExit(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}

// exitedAfter reports how the server ended if it did so within d: it tells
// "the server exited" apart from "the server said something wrong".
func (p *process) exitedAfter(d time.Duration) (error, bool) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		if p.waitErr == nil {
			return errors.New("exit status 0"), true
		}
		return p.waitErr, true
	case <-t.C:
	}
	return nil, false
}

// pid returns the server's process id (also its process group id).
func (p *process) pid() int { return p.cmd.Process.Pid }

func (p *process) String() string { return fmt.Sprintf("pid %d", p.pid()) }
