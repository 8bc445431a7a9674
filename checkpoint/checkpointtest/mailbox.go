package checkpointtest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/checkpoint"
)

// mailbox returns c's checkpoint.Mailbox; the mailbox checks are skipped
// for a backend without one.
func mailbox(t *testing.T, b Backend, c checkpoint.Checkpointer) checkpoint.Mailbox {
	t.Helper()
	mb, ok := c.(checkpoint.Mailbox)
	if !ok {
		t.Skipf("%s does not implement checkpoint.Mailbox", b.Name)
	}
	return mb
}

// mailCalls lists the calls of session id's mailbox, with "=answer" after
// the answered ones, in the order Mail returns them.
func mailCalls(tb testing.TB, mb checkpoint.Mailbox, id string) string {
	tb.Helper()
	mail, err := mb.Mail(tb.Context(), id)
	if err != nil {
		tb.Fatalf("mail %s: %v", id, err)
	}
	out := ""
	for _, m := range mail {
		if m.Session != id {
			tb.Fatalf("mail %s holds an entry of session %q", id, m.Session)
		}
		out += " " + m.Kind + ":" + m.Call
		if m.Answer != nil {
			out += "=" + string(m.Answer)
		}
	}
	return out
}

// testMailbox checks checkpoint.Mailbox: post, answer once, kinds,
// replacing, unposting, the mailboxes list, and Delete taking a session's
// entries with it.
func testMailbox(t *testing.T, b Backend) {
	c := fresh(t, b)
	mb := mailbox(t, b, c)
	ctx := t.Context()
	if err := mb.Post(ctx, "nope", "c1", "approval", []byte(`{}`)); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("post to a session that does not exist: %v, want ErrNotFound", err)
	}
	if err := mb.Post(ctx, "", "c1", "approval", nil); !errors.Is(err, checkpoint.ErrInvalid) {
		t.Fatalf("post without a session id: %v, want ErrInvalid", err)
	}
	if got := mailCalls(t, mb, "nope"); got != "" {
		t.Fatalf("mail of a session that does not exist: %q", got)
	}
	if err := mb.Answer(ctx, "s1", "c1", "approval", []byte(`"x"`)); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("answer in an empty store: %v, want ErrNotFound", err)
	}
	create(t, c, "s1", "ns", 1)
	create(t, c, "s2", "ns", 1)
	req := []byte(`{"tool":"bash","input":{"command":"ls"}}`)
	if err := mb.Post(ctx, "s1", "c1", "approval", req); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Millisecond) // Posted orders them
	if err := mb.Post(ctx, "s1", "c2", "question", []byte(`{"question":"which?"}`)); err != nil {
		t.Fatal(err)
	}
	if err := mb.Post(ctx, "s2", "c1", "approval", req); err != nil {
		t.Fatal(err)
	}
	mail, err := mb.Mail(ctx, "s1")
	if err != nil || len(mail) != 2 {
		t.Fatalf("mail s1 = %d entries, %v; want 2", len(mail), err)
	}
	if m := mail[0]; m.Call != "c1" || m.Kind != "approval" || string(m.Request) != string(req) || m.Answer != nil ||
		m.Posted.IsZero() || m.Posted.Location() != time.UTC || time.Since(m.Posted) > time.Hour {
		t.Fatalf("first entry of s1 = %+v", m)
	}
	if err := mb.Answer(ctx, "s1", "c1", "question", []byte(`"yes"`)); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("answer an approval as a question: %v, want ErrNotFound", err)
	}
	if err := mb.Answer(ctx, "s1", "c1", "approval", []byte(`"once"`)); err != nil {
		t.Fatal(err)
	}
	if err := mb.Answer(ctx, "s1", "c1", "approval", []byte(`"deny"`)); !errors.Is(err, checkpoint.ErrAnswered) {
		t.Fatalf("second answer: %v, want ErrAnswered", err)
	}
	if got, want := mailCalls(t, mb, "s1"), ` approval:c1="once" question:c2`; got != want {
		t.Fatalf("mail s1 = %q, want %q", got, want)
	}
	if got, want := mailCalls(t, mb, "s2"), " approval:c1"; got != want {
		t.Fatalf("mail s2 = %q, want %q (an answer in s1 is not one in s2)", got, want)
	}
	// Posting again replaces the entry and drops its answer.
	if err := mb.Post(ctx, "s1", "c1", "approval", req); err != nil {
		t.Fatal(err)
	}
	if got, want := mailCalls(t, mb, "s1"), " question:c2 approval:c1"; got != want {
		t.Fatalf("mail s1 after posting c1 again = %q, want %q", got, want)
	}
	if err := mb.Answer(ctx, "s1", "c2", "question", nil); err != nil {
		t.Fatalf("an empty answer: %v", err)
	}
	if mail, _ := mb.Mail(ctx, "s1"); len(mail) != 2 || mail[0].Answer == nil || len(mail[0].Answer) != 0 {
		t.Fatalf("an empty answer reads as %+v; want answered, empty", mail)
	}
	if got, err := mb.Mailboxes(ctx); err != nil || fmt.Sprint(got) != "[s1 s2]" {
		t.Fatalf("mailboxes = %v, %v; want [s1 s2]", got, err)
	}
	if err := mb.Unpost(ctx, "s1", "c1"); err != nil {
		t.Fatal(err)
	}
	if err := mb.Unpost(ctx, "s1", "c1"); err != nil {
		t.Fatalf("unpost again: %v, want nil", err)
	}
	if got, want := mailCalls(t, mb, "s1"), ` question:c2=`; got != want {
		t.Fatalf("mail s1 after unposting c1 = %q, want %q", got, want)
	}
	if err := mb.Unpost(ctx, "s1", ""); err != nil {
		t.Fatal(err)
	}
	if got := mailCalls(t, mb, "s1"); got != "" {
		t.Fatalf("mail s1 after unposting all = %q", got)
	}
	// Delete takes the session's entries with it, and only its own.
	if err := mb.Post(ctx, "s1", "c3", "approval", req); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	if got, err := mb.Mailboxes(ctx); err != nil || fmt.Sprint(got) != "[s2]" {
		t.Fatalf("mailboxes after deleting s1 = %v, %v; want [s2]", got, err)
	}
	create(t, c, "s1", "ns", 0)
	if got := mailCalls(t, mb, "s1"); got != "" {
		t.Fatalf("a new session under a deleted one's id has its mail: %q", got)
	}
}

// testMailboxRace: of many answers to one call at once, from two handles
// where the backend is persistent, exactly one takes.
func testMailboxRace(t *testing.T, b Backend) {
	loc := b.NewLocation(t)
	handles := []checkpoint.Checkpointer{open(t, b, loc)}
	mailbox(t, b, handles[0])
	if b.Persistent {
		handles = append(handles, open(t, b, loc))
	}
	create(t, handles[0], "s1", "ns", 1)
	ctx := t.Context()
	for round := range 5 {
		call := fmt.Sprintf("c%d", round)
		if err := handles[0].(checkpoint.Mailbox).Post(ctx, "s1", call, "approval", []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
		const answers = 8
		errs := make([]error, answers)
		var wg sync.WaitGroup
		for i := range answers {
			wg.Go(func() {
				mb := handles[i%len(handles)].(checkpoint.Mailbox)
				errs[i] = mb.Answer(ctx, "s1", call, "approval", fmt.Appendf(nil, "%d", i))
			})
		}
		wg.Wait()
		won := -1
		for i, err := range errs {
			switch {
			case err == nil && won >= 0:
				t.Fatalf("round %d: answers %d and %d both took", round, won, i)
			case err == nil:
				won = i
			case !errors.Is(err, checkpoint.ErrAnswered):
				t.Fatalf("round %d: answer %d: %v, want nil or ErrAnswered", round, i, err)
			}
		}
		if won < 0 {
			t.Fatalf("round %d: no answer took", round)
		}
		for _, h := range handles {
			mail, err := h.(checkpoint.Mailbox).Mail(ctx, "s1")
			if err != nil {
				t.Fatal(err)
			}
			last := mail[len(mail)-1]
			if last.Call != call || string(last.Answer) != fmt.Sprint(won) {
				t.Fatalf("round %d: the stored answer is %+v, want %d's", round, last, won)
			}
		}
	}
}

// testWatch checks checkpoint.Watcher: a change through another handle
// (appends, a mailbox post, a truncation, the delete) wakes a watch of the
// session.
func testWatch(t *testing.T, b Backend) {
	loc := b.NewLocation(t)
	c1, c2 := open(t, b, loc), open(t, b, loc)
	w, ok := c1.(checkpoint.Watcher)
	if !ok {
		t.Skipf("%s does not implement checkpoint.Watcher", b.Name)
	}
	create(t, c2, "s1", "ns", 0)
	ch, stop := w.Watch("s1")
	defer stop()
	deadline := time.Now().Add(30 * time.Second)
	for !w.Listening() {
		if time.Now().After(deadline) {
			t.Fatal("the store is not listening 30 s after its first Watch")
		}
		time.Sleep(5 * time.Millisecond)
	}
	drain := func() {
		for {
			select {
			case <-ch:
			default:
				return
			}
		}
	}
	wake := func(what string, change func()) {
		t.Helper()
		drain()
		change()
		select {
		case <-ch:
		case <-time.After(30 * time.Second):
			t.Fatalf("no word of %s in 30 s", what)
		}
	}
	wake("an append", func() { mustAppend(t, c2, "s1", 1, prompt("one")) })
	if mb, ok := c2.(checkpoint.Mailbox); ok {
		wake("a mailbox post", func() {
			if err := mb.Post(t.Context(), "s1", "c1", "approval", []byte(`{}`)); err != nil {
				t.Fatal(err)
			}
		})
		wake("a mailbox answer", func() {
			if err := mb.Answer(t.Context(), "s1", "c1", "approval", []byte(`1`)); err != nil {
				t.Fatal(err)
			}
		})
	}
	wake("a truncation", func() {
		if _, err := c2.Truncate(t.Context(), "s1", 1, 2); err != nil {
			t.Fatal(err)
		}
	})
	wake("the delete", func() {
		if err := c2.Delete(t.Context(), "s1"); err != nil {
			t.Fatal(err)
		}
	})
	stop()
	stop()
}
