package checkpointtest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
)

// torture is the -torture flag of every test binary that runs the crash
// test: RunCrash then kills TortureKills times, whatever its caller asks
// for. CI keeps the caller's count; run it on demand with
//
//	go test -run Crash -timeout 0 ./checkpoint/file ./checkpoint/sqlite ./checkpoint/postgres -torture
var torture = flag.Bool("torture", false, fmt.Sprintf("crash tests: SIGKILL the writer %d times per backend instead of the count CI uses", TortureKills))

// TortureKills is how many kills the crash test makes with -torture.
const TortureKills = 1000

// killsPerSession is how many kills one session takes before the crash test
// moves to the next: enough for torn tails to pile up in one log, few enough
// that reading the log back stays cheap.
const killsPerSession = 10

// RunCrash runs the crash test: a child process appends in a loop and is
// SIGKILLed at a random moment 5–80 ms after its first acknowledged append,
// kills times (CI uses at least 50), all at one location. After each kill
// the parent reopens the store and checks that every append the child saw
// acknowledged is there with the same data, that everything read earlier is
// unchanged, that no torn event is visible (every event decodes and seqs are
// contiguous), and that a new Append at the head succeeds. It is skipped for
// backends that are not persistent. With the -torture flag it kills
// TortureKills times instead.
func RunCrash(t *testing.T, b Backend, kills int) {
	t.Helper()
	if !b.Persistent {
		t.Skipf("%s is not persistent", b.Name)
	}
	timeout := 10 * time.Minute
	if *torture {
		kills, timeout = TortureKills, 3*time.Hour
	}
	began := time.Now()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	loc := b.NewLocation(t)
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	// known holds, per session, the digest of every event seen so far, by seq.
	known := make(map[string][]string)
	events := 0
	for i := range kills {
		id := fmt.Sprintf("crash-%d", i/killsPerSession)
		ch := startChild(t, b, roleCrash, loc, id, fmt.Sprint(seed+uint64(i), b.MaxEventBytes))
		if _, err := ch.waitLine(ctx, ""); err != nil {
			t.Fatalf("kill %d: %v", i, err)
		}
		select {
		case <-time.After(time.Duration(5+rng.IntN(76)) * time.Millisecond):
		case <-ch.exited:
		}
		ch.kill()
		var ws syscall.WaitStatus
		var ee *exec.ExitError
		if errors.As(ch.err, &ee) {
			ws, _ = ee.Sys().(syscall.WaitStatus)
		}
		if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("kill %d: the child ended by itself (%v) instead of being killed; its stderr:\n%s", i, ch.err, ch.stderr.String())
		}
		acked, err := parseAcks(ch.out.lines())
		if err != nil {
			t.Fatalf("kill %d: %v", i, err)
		}
		n, err := checkAfterCrash(ctx, b, loc, id, known, acked, i)
		if err != nil {
			t.Fatalf("kill %d (seed %d): %v", i, seed, err)
		}
		events += n
	}
	// Every session is still whole at the end.
	c, err := b.Open(loc)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for id, digests := range known {
		log, err := checkpoint.ReadAll(ctx, c, id)
		if err != nil {
			t.Fatalf("final read of %s: %v", id, err)
		}
		if err := sameDigests(log, digests); err != nil {
			t.Fatalf("final read of %s: %v", id, err)
		}
	}
	t.Logf("%s: %d kills, %d events acknowledged by killed children, 0 torn or lost (every check passed), %v", b.Name, kills, events, time.Since(began).Round(time.Second))
}

// parseAcks reads the child's "<seq> <digest>" lines.
func parseAcks(lines []string) (map[int64]string, error) {
	acked := make(map[int64]string, len(lines))
	for _, l := range lines {
		seqText, sum, ok := strings.Cut(l, " ")
		seq, err := strconv.ParseInt(seqText, 10, 64)
		if !ok || err != nil || len(sum) != 64 {
			return nil, fmt.Errorf("child printed %q, want \"<seq> <sha256>\"", l)
		}
		acked[seq] = sum
	}
	return acked, nil
}

// checkAfterCrash opens the store after kill number i and checks session id
// against what was acknowledged and what was seen before, then appends one
// event at the head. It returns the number of events acknowledged.
func checkAfterCrash(ctx context.Context, b Backend, loc, id string, known map[string][]string, acked map[int64]string, i int) (int, error) {
	c, err := b.Open(loc)
	if err != nil {
		return 0, fmt.Errorf("reopen after the kill: %w", err)
	}
	defer c.Close()
	log, err := checkpoint.ReadAll(ctx, c, id)
	if err != nil {
		return 0, fmt.Errorf("read after the kill (a torn event?): %w", err)
	}
	if err := contiguous(log, 1); err != nil {
		return 0, err
	}
	if err := sameDigests(log, known[id]); err != nil {
		return 0, fmt.Errorf("events read before this kill changed: %w", err)
	}
	for seq, sum := range acked {
		if seq > int64(len(log)) {
			return 0, fmt.Errorf("the child was told seq %d was appended, but the log ends at %d after the kill", seq, len(log))
		}
		if got := digest(log[seq-1].Data); got != sum {
			return 0, fmt.Errorf("event %d differs from what the child appended (sha256 %s, want %s)", seq, got, sum)
		}
	}
	if err := searchAcked(ctx, c, id, log, acked); err != nil {
		return 0, err
	}
	digests := make([]string, 0, len(log)+1)
	for _, e := range log {
		if err := decodes(e); err != nil {
			return 0, err
		}
		digests = append(digests, digest(e.Data))
	}
	s, err := c.Head(ctx, id)
	if err != nil {
		return 0, fmt.Errorf("head after the kill: %w", err)
	}
	if s.Head != int64(len(log)) {
		return 0, fmt.Errorf("head after the kill is %d, but the log has %d events", s.Head, len(log))
	}
	e := prompt(fmt.Sprintf("parent after kill %d", i))
	if _, err := c.Append(ctx, id, s.Head, []session.Event{e}); err != nil {
		return 0, fmt.Errorf("append at head %d after the kill: %w", s.Head, err)
	}
	known[id] = append(digests, digest(e.Data))
	if err := c.Close(); err != nil {
		return 0, fmt.Errorf("close: %w", err)
	}
	return len(acked), nil
}

// searchAcked checks that a search finds the first and the last prompt the
// killed child was told it appended, by the tag their text starts with: a
// store whose index trails its logs must catch up on what a killed process
// left unindexed. A store without an index of its own (no
// checkpoint.Searcher) is searched by reading the logs, which the checks
// before this one cover.
func searchAcked(ctx context.Context, c checkpoint.Checkpointer, id string, log []session.Event, acked map[int64]string) error {
	if _, ok := c.(checkpoint.Searcher); !ok {
		return nil
	}
	first, last := int64(math.MaxInt64), int64(0)
	for seq := range acked {
		if log[seq-1].Type == session.TypeUserPrompt {
			first, last = min(first, seq), max(last, seq)
		}
	}
	if last == 0 {
		return nil
	}
	for _, seq := range []int64{first, last} {
		var p session.UserPrompt
		if err := log[seq-1].Decode(&p); err != nil {
			return fmt.Errorf("event %d: %w", seq, err)
		}
		tag, _, _ := strings.Cut(p.Text, " ")
		hits, err := checkpoint.Search(ctx, c, tag, checkpoint.SearchOptions{Limit: 100})
		if err != nil {
			return fmt.Errorf("search for %q after the kill: %w", tag, err)
		}
		if !slices.ContainsFunc(hits, func(h checkpoint.Hit) bool { return h.Session == id && h.Seq == seq }) {
			return fmt.Errorf("a search for %q after the kill does not find event %d, which the child was told it appended (%d hits)", tag, seq, len(hits))
		}
	}
	return nil
}

// sameDigests checks that log starts with events of the given digests.
func sameDigests(log []session.Event, digests []string) error {
	if len(log) < len(digests) {
		return fmt.Errorf("%d events, but %d were read earlier", len(log), len(digests))
	}
	for j, sum := range digests {
		if got := digest(log[j].Data); got != sum {
			return fmt.Errorf("event %d changed (sha256 %s, was %s)", j+1, got, sum)
		}
	}
	return nil
}

// decodes checks that an event of the crash test decodes as what it is.
func decodes(e session.Event) error {
	var err error
	switch e.Type {
	case session.TypeSessionStarted:
		var p session.SessionStarted
		err = e.Decode(&p)
	case session.TypeUserPrompt:
		var p session.UserPrompt
		err = e.Decode(&p)
	default:
		err = fmt.Errorf("event %d has type %q, which the crash test never writes", e.Seq, e.Type)
	}
	return err
}
