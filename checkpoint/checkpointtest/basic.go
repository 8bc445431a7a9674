package checkpointtest

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
)

func testAppendAndRead(t *testing.T, b Backend) {
	c := fresh(t, b)
	want := create(t, c, "s1", "ns", 2)
	checkHead(t, c, "s1", want)
	head := int64(len(want))
	for i := range 4 {
		batch := []session.Event{reply(fmt.Sprintf("reply %d", i)), prompt(fmt.Sprintf("next %d", i)), completed()}
		batch = batch[:1+i%3]
		batch[0].Seq = 99 // Append ignores the caller's seqs
		head = mustAppend(t, c, "s1", head, batch...)
		want = append(want, numbered(int64(len(want)), batch...)...)
	}
	checkLog(t, c, "s1", want)
	checkHead(t, c, "s1", want)
	// Reading twice gives the same log.
	checkLog(t, c, "s1", want)
}

func testFirstEvent(t *testing.T, b Backend) {
	c := fresh(t, b)
	for _, first := range []session.Event{prompt("hello"), reply("hi"), {Type: "x_future", Time: session.Now(), Data: []byte(`{}`)}} {
		_, err := c.Append(t.Context(), "s1", 0, []session.Event{first, started("s1", "ns")})
		wantErr(t, fmt.Sprintf("create with a %s event first", first.Type), err, checkpoint.ErrInvalid)
		wantNotFound(t, c, "s1")
	}
	if got, _ := c.List(t.Context(), "ns", checkpoint.ListOptions{AllKinds: true}); len(got) != 0 {
		t.Fatalf("list after rejected creates = [%s], want nothing", ids(got))
	}
}

func testInvalidAppend(t *testing.T, b Backend) {
	c := fresh(t, b)
	want := create(t, c, "s1", "ns", 1)
	cases := []struct {
		name   string
		id     string
		head   int64
		events []session.Event
	}{
		{"empty batch at head", "s1", 2, nil},
		{"empty non-nil batch at head", "s1", 2, []session.Event{}},
		{"empty batch creating", "s2", 0, nil},
		{"event without type", "s1", 2, []session.Event{prompt("ok"), {Time: session.Now(), Data: []byte(`{}`)}}},
		{"negative expected head", "s1", -1, []session.Event{prompt("x")}},
		{"empty session id", "", 0, []session.Event{started("", "ns")}},
	}
	for _, tc := range cases {
		_, err := c.Append(t.Context(), tc.id, tc.head, tc.events)
		wantErr(t, tc.name, err, checkpoint.ErrInvalid)
	}
	checkLog(t, c, "s1", want)
	wantNotFound(t, c, "s2")
}

func testStaleHead(t *testing.T, b Backend) {
	c := fresh(t, b)
	want := create(t, c, "s1", "ns", 2)
	for _, stale := range []int64{1, 2, 4, 10} {
		_, err := c.Append(t.Context(), "s1", stale, []session.Event{prompt("stale"), reply("stale")})
		wantConflict(t, fmt.Sprintf("append at stale head %d", stale), err, stale, 3)
	}
	checkLog(t, c, "s1", want)
	checkHead(t, c, "s1", want)
	// The right head still works.
	mustAppend(t, c, "s1", 3, prompt("fresh"))
}

func testCreateExisting(t *testing.T, b Backend) {
	c := fresh(t, b)
	want := create(t, c, "s1", "ns", 1)
	_, err := c.Append(t.Context(), "s1", 0, []session.Event{started("s1", "other")})
	wantConflict(t, "create an existing session", err, 0, 2)
	checkLog(t, c, "s1", want)
	checkHead(t, c, "s1", want)
	if got, _ := c.List(t.Context(), "other", checkpoint.ListOptions{AllKinds: true}); len(got) != 0 {
		t.Fatalf("list of the namespace of a rejected create = [%s], want nothing", ids(got))
	}
}

func testUnknownSession(t *testing.T, b Backend) {
	c := fresh(t, b)
	create(t, c, "other", "ns", 0)
	ctx := t.Context()
	wantNotFound(t, c, "nope")
	wantErr(t, "delete", c.Delete(ctx, "nope"), checkpoint.ErrNotFound)
	_, err := c.Truncate(ctx, "nope", 1, 1)
	wantErr(t, "truncate", err, checkpoint.ErrNotFound)
	// Appending to it at a head other than 0 is a conflict with head 0 or
	// not found; either way nothing is created.
	if _, err := c.Append(ctx, "nope", 3, []session.Event{prompt("x")}); err == nil {
		t.Fatal("append at head 3 to an unknown session succeeded")
	} else if !checkpoint.IsConflict(err) {
		wantErr(t, "append at head 3 to an unknown session", err, checkpoint.ErrNotFound)
	} else {
		wantConflict(t, "append at head 3 to an unknown session", err, 3, 0)
	}
	wantNotFound(t, c, "nope")
}

func testReadFrom(t *testing.T, b Backend) {
	c := fresh(t, b)
	want := create(t, c, "s1", "ns", 9)
	cases := []struct {
		from  int64
		first int // index in want of the first event expected
	}{{0, 0}, {1, 0}, {2, 1}, {5, 4}, {10, 9}, {11, 10}, {100, 10}}
	for _, tc := range cases {
		got := readAll(t, c, "s1", tc.from)
		if len(got) != len(want)-tc.first {
			t.Fatalf("read from %d: %d events, want %d", tc.from, len(got), len(want)-tc.first)
		}
		for i, e := range got {
			if err := sameEvent(want[tc.first+i], e); err != nil {
				t.Fatalf("read from %d, event %d: %v", tc.from, i, err)
			}
		}
	}
}

func testReadStoppedEarly(t *testing.T, b Backend) {
	c := fresh(t, b)
	want := create(t, c, "s1", "ns", 20)
	head := int64(len(want))
	// Stop many times in a row, at different points: a backend that leaks a
	// connection, a lock or an open file per abandoned Read runs out of them
	// or blocks the writes below.
	for i := range 40 {
		stop := i%5 + 1
		n := 0
		for e, err := range c.Read(t.Context(), "s1", int64(i%3+1)) {
			if err != nil {
				t.Fatalf("read %d: %v", i, err)
			}
			if e.Seq == 0 {
				t.Fatalf("read %d yielded an event without seq", i)
			}
			n++
			if n == stop {
				break
			}
		}
		if n != stop {
			t.Fatalf("read %d stopped after %d events, want %d", i, n, stop)
		}
		if i%4 == 0 {
			e := reply(fmt.Sprintf("after break %d", i))
			head = mustAppend(t, c, "s1", head, e)
			want = append(want, numbered(head-1, e)...)
		}
		if _, err := c.Head(t.Context(), "s1"); err != nil {
			t.Fatalf("head after stopped read %d: %v", i, err)
		}
	}
	if _, err := c.Truncate(t.Context(), "s1", head, head); err != nil {
		t.Fatalf("truncate after stopped reads: %v", err)
	}
	if _, err := c.List(t.Context(), "ns", checkpoint.ListOptions{}); err != nil {
		t.Fatalf("list after stopped reads: %v", err)
	}
	checkLog(t, c, "s1", want)
}

func testRoundTrip(t *testing.T, b Backend) {
	c := fresh(t, b)
	base := time.Date(2026, 11, 30, 22, 10, 0, 123456000, time.UTC)
	events := []session.Event{
		started("s1", "ns"),
		prompt("héllo, wörld — \"quoted\" \\ back\\slash\ttab\nnewline \u2028 \U0001F600"),
		reply("plain"),
		toolStarted("call-1"),
		session.MustNew(session.TypeFileSnapshot, session.FileSnapshot{CallID: "call-1", Path: "a/b.go", Existed: true, Mode: 0o644, Content: []byte{0, 1, 2, 0xff, '\n'}}),
		toolFinished("call-1"),
		completed(),
	}
	times := []time.Time{
		base,
		base.Add(time.Microsecond),
		time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2099, 12, 31, 23, 59, 59, 999999000, time.UTC),
		base.Add(-time.Hour),
		base, // equal times are kept as they are
		session.Now(),
	}
	for i := range events {
		events[i].Time = times[i]
	}
	mustAppend(t, c, "s1", 0, events...)
	want := numbered(0, events...)
	checkLog(t, c, "s1", want)

	// A zero time is set to now, in UTC, to the microsecond.
	before := session.Now()
	e := reply("no time")
	e.Time = time.Time{}
	mustAppend(t, c, "s1", int64(len(want)), e)
	after := session.Now()
	got := readAll(t, c, "s1", int64(len(want))+1)
	if len(got) != 1 {
		t.Fatalf("read of the last event: %d events", len(got))
	}
	tm := got[0].Time
	if tm.Before(before) || tm.After(after) || tm.Location() != time.UTC || tm.Nanosecond()%1000 != 0 {
		t.Fatalf("event appended with a zero time came back with %v (location %v), want a UTC time to the microsecond between %v and %v", tm, tm.Location(), before, after)
	}
	// Events keep their payloads whatever else is in the log.
	var snap session.FileSnapshot
	if err := readAll(t, c, "s1", 5)[0].Decode(&snap); err != nil || string(snap.Content) != "\x00\x01\x02\xff\n" {
		t.Fatalf("file snapshot content = %q, %v", snap.Content, err)
	}
}

func testUnknownType(t *testing.T, b Backend) {
	c := fresh(t, b)
	datas := []string{
		`{"z":1,"a":[1.50,2e3,-0,null,true],"m":{"y":"é","x":"\u00e9\n"},"s":"\u003ctag\u003e"}`,
		`[]`,
		`"just a string"`,
		`12345678901234567890`,
	}
	events := []session.Event{started("s1", "ns")}
	for i, d := range datas {
		events = append(events, session.Event{Type: session.Type(fmt.Sprintf("x_future_%d", i)), Time: session.Now(), Data: []byte(d)})
	}
	// An event without data at all.
	events = append(events, session.Event{Type: "x_future_empty", Time: session.Now()})
	mustAppend(t, c, "s1", 0, events...)
	want := numbered(0, events...)
	checkLog(t, c, "s1", want)
	checkHead(t, c, "s1", want)
	for _, e := range readAll(t, c, "s1", 2) {
		if e.Known() {
			t.Fatalf("event %d read back as known type %s", e.Seq, e.Type)
		}
	}
}

func testCallerOwnsEvents(t *testing.T, b Backend) {
	c := fresh(t, b)
	events := []session.Event{started("s1", "ns"), prompt("original")}
	want := numbered(0, events...)
	for i := range want {
		want[i].Data = bytes.Clone(events[i].Data)
	}
	mustAppend(t, c, "s1", 0, events...)
	// The store must not keep the caller's buffers …
	for i := range events[1].Data {
		events[1].Data[i] = 'X'
	}
	// … nor hand out its own.
	for e, err := range c.Read(t.Context(), "s1", 1) {
		if err != nil {
			t.Fatal(err)
		}
		for i := range e.Data {
			e.Data[i] = 'Y'
		}
	}
	s, err := c.Head(t.Context(), "s1")
	if err != nil {
		t.Fatal(err)
	}
	s.Open = append(s.Open, "scribble")
	checkLog(t, c, "s1", want)
	checkHead(t, c, "s1", want)
}

func testCancelledContext(t *testing.T, b Backend) {
	c := fresh(t, b)
	want := create(t, c, "s1", "ns", 1)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	batch := []session.Event{prompt("cancelled"), reply("r")}
	// A cancelled call either fails with the context's error and changes
	// nothing, or completes: never half of it.
	head, err := c.Append(ctx, "s1", 2, batch)
	switch {
	case err == nil:
		if head != 4 {
			t.Fatalf("append with a cancelled context returned head %d, want 4", head)
		}
		want = append(want, numbered(2, batch...)...)
	default:
		wantErr(t, "append with a cancelled context", err, context.Canceled)
	}
	checkLog(t, c, "s1", want)
	checkHead(t, c, "s1", want)
}

func testClosed(t *testing.T, b Backend) {
	loc := b.NewLocation(t)
	c, err := b.Open(loc)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	create(t, c, "s1", "ns", 1)
	if err := c.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	ctx := t.Context()
	_, err = c.Append(ctx, "s1", 2, []session.Event{prompt("late")})
	wantErr(t, "append after close", err, checkpoint.ErrClosed)
	_, err = c.Append(ctx, "s2", 0, []session.Event{started("s2", "ns")})
	wantErr(t, "create after close", err, checkpoint.ErrClosed)
	_, err = c.Head(ctx, "s1")
	wantErr(t, "head after close", err, checkpoint.ErrClosed)
	_, err = c.List(ctx, "ns", checkpoint.ListOptions{})
	wantErr(t, "list after close", err, checkpoint.ErrClosed)
	_, err = c.Truncate(ctx, "s1", 1, 2)
	wantErr(t, "truncate after close", err, checkpoint.ErrClosed)
	wantErr(t, "delete after close", c.Delete(ctx, "s1"), checkpoint.ErrClosed)
	wantReadErr(t, c, "s1", checkpoint.ErrClosed)
	for i := range 2 {
		if err := c.Close(); err != nil {
			t.Fatalf("close again (%d): %v, want nil", i+1, err)
		}
	}
	if b.Persistent {
		// Nothing was lost or changed by the rejected calls.
		c2 := open(t, b, loc)
		if got := readAll(t, c2, "s1", 1); len(got) != 2 {
			t.Fatalf("after reopening: %d events, want 2", len(got))
		}
		wantNotFound(t, c2, "s2")
	}
}

func testLargeEvents(t *testing.T, b Backend) {
	c := fresh(t, b)
	want := create(t, c, "s1", "ns", 0)
	size := 1 << 20
	if b.MaxEventBytes > 0 && b.MaxEventBytes < size {
		size = b.MaxEventBytes
	}
	big := blob(size, 'a')
	after := prompt("after")
	head := mustAppend(t, c, "s1", 1, big, after)
	want = append(want, numbered(1, big, after)...)
	checkLog(t, c, "s1", want)
	if b.MaxEventBytes == 0 {
		return
	}
	if b.MaxEventBytes < 1<<20 {
		t.Logf("%s stores events of up to %d bytes, less than 1 MiB", b.Name, b.MaxEventBytes)
	}
	over := blob(b.MaxEventBytes+1, 'b')
	_, err := c.Append(t.Context(), "s1", head, []session.Event{prompt("before"), over})
	wantErr(t, fmt.Sprintf("append of a %d-byte event", len(over.Data)), err, checkpoint.ErrTooLarge)
	checkLog(t, c, "s1", want)
	_, err = c.Append(t.Context(), "s2", 0, []session.Event{started("s2", "ns"), over})
	wantErr(t, fmt.Sprintf("create with a %d-byte event", len(over.Data)), err, checkpoint.ErrTooLarge)
	wantNotFound(t, c, "s2")
	mustAppend(t, c, "s1", head, prompt("still fine"))
}
