package checkpointtest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/checkpointtest"
	"github.com/lite-agent/lite-agent/checkpoint/memory"
	"github.com/lite-agent/lite-agent/session"
)

// reference describes refStore to the suite.
func reference() checkpointtest.Backend {
	return checkpointtest.Backend{
		Name:          "reference",
		NewLocation:   func(tb testing.TB) string { return filepath.Join(tb.TempDir(), "store") },
		Open:          openRef,
		Persistent:    true,
		MaxEventBytes: refMaxEventBytes,
	}
}

func TestMain(m *testing.M) { checkpointtest.Main(m, reference()) }

// TestConformance runs the suite against the reference store, which is the
// only way to exercise the suite's persistent checks in this package.
func TestConformance(t *testing.T) { checkpointtest.Run(t, reference()) }

func TestCrash(t *testing.T) {
	kills := 10
	if testing.Short() {
		kills = 3
	}
	checkpointtest.RunCrash(t, reference(), kills)
}

// envMutant names the broken backend TestBrokenBackend runs the suite on.
const envMutant = "CHECKPOINTTEST_MUTANT"

// mutants are backends broken in one way each, with the check that must
// catch it.
var mutants = []struct {
	name, catches string
}{
	{"gap", "AppendAndRead"},
	{"conflictAsPlainError", "StaleHeadConflicts"},
	{"summaryOff", "AppendAndRead"},
	{"listUnsorted", "List"},
	{"closedNotFound", "Closed"},
	{"localTime", "RoundTrip"},
	{"reencodeData", "UnknownEventType"},
	{"truncateOffByOne", "Truncate"},
	{"noTooLarge", "LargeEvents"},
	{"createOverwrites", "CreateExistingConflicts"},
	{"cachedReads", "CallerOwnsEvents"},
	{"nonAtomicBatch", "ConcurrentAppendsOneSession"},
}

// TestSuiteCatchesMutants runs the suite on each broken backend in a child
// process and checks that it fails, in the check meant to catch the fault.
func TestSuiteCatchesMutants(t *testing.T) {
	if os.Getenv(envMutant) != "" {
		t.Skip("inside a mutant run")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mutants {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.CommandContext(t.Context(), exe, "-test.run=^TestBrokenBackend$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), envMutant+"="+m.name)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the suite passed a backend broken by %s:\n%s", m.name, out)
			}
			if want := "--- FAIL: TestBrokenBackend/" + m.catches + " "; !strings.Contains(string(out), want) {
				t.Fatalf("the suite failed %s, but not in %s:\n%s", m.name, m.catches, out)
			}
		})
	}
}

// TestBrokenBackend runs the suite on the mutant named by the environment;
// TestSuiteCatchesMutants expects it to fail.
func TestBrokenBackend(t *testing.T) {
	mode := os.Getenv(envMutant)
	if mode == "" {
		t.Skip("run by TestSuiteCatchesMutants")
	}
	max := 0
	if mode == "noTooLarge" {
		max = 4 << 20
	}
	checkpointtest.Run(t, checkpointtest.Backend{
		Name:          "mutant " + mode,
		NewLocation:   func(tb testing.TB) string { return tb.Name() },
		Open:          func(string) (checkpoint.Checkpointer, error) { return &broken{Store: memory.New(), mode: mode}, nil },
		MaxEventBytes: max,
	})
}

// broken wraps a memory store and breaks one rule of the contract.
type broken struct {
	*memory.Store
	mode   string
	closed atomic.Bool

	mu    sync.Mutex
	cache map[string][]byte // data handed out by Read, for cachedReads
}

func (b *broken) Append(ctx context.Context, id string, head int64, events []session.Event) (int64, error) {
	switch b.mode {
	case "conflictAsPlainError":
		n, err := b.Store.Append(ctx, id, head, events)
		if checkpoint.IsConflict(err) {
			return 0, errors.New("database is locked")
		}
		return n, err
	case "createOverwrites":
		if head == 0 {
			_ = b.Store.Delete(ctx, id)
		}
	case "nonAtomicBatch":
		for i, e := range events {
			if _, err := b.Store.Append(ctx, id, head+int64(i), []session.Event{e}); err != nil {
				return 0, err
			}
			time.Sleep(time.Millisecond) // let others in between
		}
		return head + int64(len(events)), nil
	}
	return b.Store.Append(ctx, id, head, events)
}

func (b *broken) Read(ctx context.Context, id string, from int64) iter.Seq2[session.Event, error] {
	return func(yield func(session.Event, error) bool) {
		for e, err := range b.Store.Read(ctx, id, from) {
			switch b.mode {
			case "gap":
				if e.Seq == 2 {
					continue
				}
			case "localTime":
				e.Time = e.Time.In(time.FixedZone("UTC+1", 3600))
			case "reencodeData":
				var v any
				if json.Unmarshal(e.Data, &v) == nil {
					e.Data, _ = json.Marshal(v)
				}
			case "cachedReads":
				// Hand out the same buffers to every reader, as a store
				// that returned its own data would.
				b.mu.Lock()
				key := fmt.Sprint(id, e.Seq)
				if b.cache == nil {
					b.cache = make(map[string][]byte)
				}
				if d, ok := b.cache[key]; ok {
					e.Data = d
				} else {
					b.cache[key] = e.Data
				}
				b.mu.Unlock()
			}
			if !yield(e, err) {
				return
			}
		}
	}
}

func (b *broken) Head(ctx context.Context, id string) (session.Summary, error) {
	s, err := b.Store.Head(ctx, id)
	switch {
	case b.mode == "summaryOff" && err == nil:
		s.Messages++
	case b.mode == "closedNotFound" && b.closed.Load():
		return s, fmt.Errorf("head %s: %w", id, checkpoint.ErrNotFound)
	}
	return s, err
}

func (b *broken) List(ctx context.Context, ns string, opts checkpoint.ListOptions) ([]session.Summary, error) {
	list, err := b.Store.List(ctx, ns, opts)
	if b.mode == "listUnsorted" {
		slices.SortFunc(list, func(a, b session.Summary) int { return strings.Compare(a.ID, b.ID) })
	}
	return list, err
}

func (b *broken) Truncate(ctx context.Context, id string, keep, head int64) (int64, error) {
	if b.mode == "truncateOffByOne" && keep < head {
		keep++
	}
	return b.Store.Truncate(ctx, id, keep, head)
}

func (b *broken) Close() error {
	b.closed.Store(true)
	return b.Store.Close()
}
