package memory_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/checkpointtest"
	"github.com/lite-agent/lite-agent/checkpoint/memory"
	"github.com/lite-agent/lite-agent/session"
)

// backend describes the memory store to the conformance suite. Every Open
// returns a new, empty store: nothing is shared between opens.
func backend() checkpointtest.Backend {
	return checkpointtest.Backend{
		Name:        "memory",
		NewLocation: func(tb testing.TB) string { return tb.Name() },
		Open:        func(string) (checkpoint.Checkpointer, error) { return memory.New(), nil },
		Damage:      damage,
		StoreSummary: func(tb testing.TB, c checkpoint.Checkpointer, _, id string, s session.Summary) {
			memory.StoreSummary(c.(*memory.Store), id, s)
		},
	}
}

// damage changes the events the store holds in memory, behind its back.
func damage(tb testing.TB, c checkpoint.Checkpointer, _, id string, d checkpointtest.Damage, seq int64) {
	memory.Damage(c.(*memory.Store), id, func(events *[]session.Event, sums *[]uint32, _ *int64) {
		i := seq - 1
		switch d {
		case checkpointtest.FlipByte:
			data := slices.Clone((*events)[i].Data)
			data[len(data)/2] ^= 0x20
			(*events)[i].Data = data
		case checkpointtest.DropEvent:
			*events, *sums = slices.Delete(*events, int(i), int(i+1)), slices.Delete(*sums, int(i), int(i+1))
		case checkpointtest.CutLog:
			*events, *sums = (*events)[:i], (*sums)[:i]
		default:
			tb.Fatalf("unknown damage %v", d)
		}
	})
}

func TestMain(m *testing.M) { checkpointtest.Main(m, backend()) }

func TestConformance(t *testing.T) { checkpointtest.Run(t, backend()) }

func BenchmarkMemory(b *testing.B) { checkpointtest.Bench(b, backend()) }

// TestReadKeepsItsSnapshot checks that a Read in progress goes on yielding
// the log as it was when it began, even when the log is truncated and
// appended to under it (the store shares the events' array with readers).
func TestReadKeepsItsSnapshot(t *testing.T) {
	ctx := t.Context()
	s := memory.New()
	defer s.Close()
	prompt := func(text string) session.Event {
		return session.MustNew(session.TypeUserPrompt, session.UserPrompt{Text: text})
	}
	events := []session.Event{session.MustNew(session.TypeSessionStarted, session.SessionStarted{ID: "s", Namespace: "ns"})}
	for i := range 5 {
		events = append(events, prompt(fmt.Sprint("old ", i+2)))
	}
	if _, err := s.Append(ctx, "s", 0, events); err != nil {
		t.Fatal(err)
	}
	var got []string
	for e, err := range s.Read(ctx, "s", 2) {
		if err != nil {
			t.Fatal(err)
		}
		var p session.UserPrompt
		if err := e.Decode(&p); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprint(e.Seq, " ", p.Text))
		if e.Seq == 2 {
			if _, err := s.Truncate(ctx, "s", 1, 6); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Append(ctx, "s", 1, []session.Event{prompt("new 2"), prompt("new 3"), prompt("new 4")}); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := []string{"2 old 2", "3 old 3", "4 old 4", "5 old 5", "6 old 6"}
	if !slices.Equal(got, want) {
		t.Fatalf("read during truncate and append yielded %q, want %q", got, want)
	}
}
