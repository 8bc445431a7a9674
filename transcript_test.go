package liteagent_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/memory"
	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/session"
)

// echoProvider answers every request with one text block, without a network.
type echoProvider struct{}

func (echoProvider) Name() string { return "echo" }

func (echoProvider) Stream(ctx context.Context, req provider.Request, onDelta func(provider.Delta)) (provider.Response, error) {
	if onDelta != nil {
		onDelta(provider.Delta{Kind: provider.DeltaText, Text: "ok"})
	}
	return provider.Response{Blocks: []session.Block{{Type: session.BlockText, Text: "ok"}}, StopReason: provider.StopEndTurn}, nil
}

func TestEvents(t *testing.T) {
	store := memory.New()
	defer store.Close()
	a := newAgent(t, echoProvider{}, liteagent.Options{Checkpointer: store})
	for _, p := range []string{"one", "two"} {
		if _, err := a.Send(t.Context(), p); err != nil {
			t.Fatal(err)
		}
	}
	id := a.SessionID()
	want, err := checkpoint.ReadAll(t.Context(), store, id)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("whole log", func(t *testing.T) {
		var got []session.Event
		for e, err := range a.Events(t.Context(), id) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, e)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("events (-store +Events):\n%s", diff)
		}
		if a.Head() != int64(len(got)) {
			t.Fatalf("reading moved the head: %d, log has %d events", a.Head(), len(got))
		}
	})
	t.Run("stop early", func(t *testing.T) {
		n := 0
		for _, err := range a.Events(t.Context(), id) {
			if err != nil {
				t.Fatal(err)
			}
			n++
			if n == 2 {
				break
			}
		}
		if n != 2 {
			t.Fatalf("read %d events, want to stop at 2", n)
		}
	})
	t.Run("replay gives the transcript", func(t *testing.T) {
		var events []session.Event
		for e, err := range a.Events(t.Context(), id) {
			if err != nil {
				t.Fatal(err)
			}
			events = append(events, e)
		}
		if n := len(session.Replay(events).Transcript()); n != 4 {
			t.Fatalf("transcript has %d messages, want 4 (two prompts, two answers)", n)
		}
	})

	tests := []struct {
		name string
		id   string
		want error
	}{
		{"unknown session", "no-such-session", checkpoint.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var errs []error
			for _, err := range a.Events(t.Context(), tt.id) {
				errs = append(errs, err)
			}
			if len(errs) != 1 || !errors.Is(errs[0], tt.want) {
				t.Fatalf("got %v, want one error matching %v", errs, tt.want)
			}
		})
	}

	t.Run("closed agent", func(t *testing.T) {
		a.Close()
		var errs []error
		for _, err := range a.Events(t.Context(), id) {
			errs = append(errs, err)
		}
		if len(errs) != 1 || !errors.Is(errs[0], liteagent.ErrClosed) {
			t.Fatalf("got %v, want ErrClosed", errs)
		}
	})
}
