package postgres_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/postgres"
	"github.com/lite-agent/lite-agent/session"
)

// TestUnstorableInput covers what PostgreSQL's columns cannot hold: each is
// refused with ErrInvalid before anything is sent, and the store goes on.
func TestUnstorableInput(t *testing.T) {
	s := openStore(t, newSchema(t), nil)
	ctx := t.Context()
	startIn := func(id, ns string) session.Event {
		return session.MustNew(session.TypeSessionStarted, session.SessionStarted{ID: id, Namespace: ns})
	}
	long := strings.Repeat("x", 2000)
	far := promptEvent("far")
	far.Time = time.Date(300000, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name   string
		id     string
		events []session.Event
	}{
		{"NUL in the id", "a\x00b", []session.Event{startIn("a", "ns")}},
		{"id not UTF-8", "a\xffb", []session.Event{startIn("a", "ns")}},
		{"id too long", long, []session.Event{startIn(long, "ns")}},
		{"NUL in the namespace", "s1", []session.Event{startIn("s1", "n\x00s")}},
		{"namespace too long", "s2", []session.Event{startIn("s2", long)}},
		{"NUL in a type", "s3", []session.Event{startIn("s3", "ns"), {Type: "x\x00", Data: []byte(`{}`)}}},
		{"time out of range", "s4", []session.Event{startIn("s4", "ns"), far}},
	}
	for _, tc := range cases {
		_, err := s.Append(ctx, tc.id, 0, tc.events)
		if !errors.Is(err, checkpoint.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", tc.name, err)
		}
	}
	if list, err := s.List(ctx, "", checkpoint.ListOptions{AllKinds: true}); err != nil || len(list) != 0 {
		t.Fatalf("after refused appends: %d sessions, %v", len(list), err)
	}
	if _, err := s.Append(ctx, "ok", 0, []session.Event{startIn("ok", "ns"), promptEvent("fine")}); err != nil {
		t.Fatalf("a good append after refused ones: %v", err)
	}
}

func TestMaxEventBytesOption(t *testing.T) {
	for _, n := range []int{-1, postgres.MaxEventBytesLimit + 1} {
		_, err := postgres.Open(t.Context(), "postgres://u@127.0.0.1:1/db", &postgres.Options{MaxEventBytes: n})
		if !errors.Is(err, checkpoint.ErrInvalid) || !strings.Contains(err.Error(), "MaxEventBytes") {
			t.Errorf("MaxEventBytes %d: %v, want ErrInvalid naming the option", n, err)
		}
	}
	s := openStore(t, newSchema(t), &postgres.Options{MaxEventBytes: 100})
	big := session.Event{Type: "x", Data: []byte(`"` + strings.Repeat("a", 100) + `"`)}
	_, err := s.Append(t.Context(), "s", 0, []session.Event{started("s"), big})
	if !errors.Is(err, checkpoint.ErrTooLarge) {
		t.Fatalf("append over a MaxEventBytes of 100: %v, want ErrTooLarge", err)
	}
}
