package postgres_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/postgres"
	"github.com/lite-agent/lite-agent/session"
)

// fill creates session id with a session_started event and n-1 prompts of
// size bytes each, in batches; it returns the head.
func fill(tb testing.TB, s *postgres.Store, id string, n, size int) int64 {
	tb.Helper()
	ctx := tb.Context()
	head, err := s.Append(ctx, id, 0, []session.Event{started(id)})
	if err != nil {
		tb.Fatal(err)
	}
	for head < int64(n) {
		var batch []session.Event
		for i := head; i < int64(n) && len(batch) < 500; i++ {
			batch = append(batch, promptEvent(fmt.Sprintf("%d %s", i+1, strings.Repeat("x", size))))
		}
		if head, err = s.Append(ctx, id, head, batch); err != nil {
			tb.Fatal(err)
		}
	}
	return head
}

// readN reads session id, stopping after n events to run between, then
// reading on; it returns the events and the error the read ended with.
func readN(tb testing.TB, s *postgres.Store, id string, n int, between func()) ([]session.Event, error) {
	tb.Helper()
	var got []session.Event
	for e, err := range s.Read(tb.Context(), id, 1) {
		if err != nil {
			return got, err
		}
		got = append(got, e)
		if len(got) == n && between != nil {
			between()
		}
	}
	return got, nil
}

func TestReadPagesOfBigEvents(t *testing.T) {
	s := openStore(t, newSchema(t), nil)
	// 1.5 MiB events: two to a 4 MiB page.
	head := fill(t, s, "big", 9, 3<<19)
	got, err := readN(t, s, "big", 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(got)) != head {
		t.Fatalf("read %d events of %d", len(got), head)
	}
	for i, e := range got {
		if e.Seq != int64(i+1) || (i > 0 && !strings.HasPrefix(promptOf(t, e), fmt.Sprintf("%d ", i+1))) {
			t.Fatalf("event %d is seq %d: %.20q", i, e.Seq, promptOf(t, e))
		}
	}
}

func TestReadSeesAChangedLog(t *testing.T) {
	s := openStore(t, newSchema(t), nil)
	ctx := t.Context()
	// Longer than the pages a Read fetches before the caller starts.
	const n = 6000
	cases := []struct {
		name   string
		change func(id string, head int64)
		is     error
		want   string
	}{
		{"truncated", func(id string, head int64) {
			if _, err := s.Truncate(ctx, id, 10, head); err != nil {
				t.Fatal(err)
			}
		}, nil, "truncated or replaced while being read"},
		{"deleted", func(id string, head int64) {
			if err := s.Delete(ctx, id); err != nil {
				t.Fatal(err)
			}
		}, checkpoint.ErrNotFound, "deleted while being read"},
		{"re-created", func(id string, head int64) {
			if err := s.Delete(ctx, id); err != nil {
				t.Fatal(err)
			}
			fill(t, s, id, n, 10)
		}, nil, "truncated or replaced while being read"},
		{"appended to", func(id string, head int64) {
			if _, err := s.Append(ctx, id, head, []session.Event{promptEvent("late")}); err != nil {
				t.Fatal(err)
			}
		}, nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id := tc.name
			head := fill(t, s, id, n, 10)
			got, err := readN(t, s, id, 1, func() { tc.change(id, head) })
			if tc.want == "" {
				if err != nil || int64(len(got)) != head {
					t.Fatalf("read while appending: %d events, %v; want the %d there when it began", len(got), err, head)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || (tc.is != nil && !errors.Is(err, tc.is)) {
				t.Fatalf("read across a change: %v, want an error saying %q", err, tc.want)
			}
			for i, e := range got {
				if e.Seq != int64(i+1) {
					t.Fatalf("the events read before the error have a gap at %d", i)
				}
			}
		})
	}
}
