package sqlite_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/sqlite"
	"github.com/lite-agent/lite-agent/session"
)

func ExampleOpen() {
	dir, err := os.MkdirTemp("", "sessions")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "sessions.db")
	ctx := context.Background()

	store, err := sqlite.Open(path, nil) // creates the file, mode 0600
	if err != nil {
		panic(err)
	}
	head, err := store.Append(ctx, "s1", 0, []session.Event{
		session.MustNew(session.TypeSessionStarted, session.SessionStarted{ID: "s1", Namespace: "myproject"}),
		session.MustNew(session.TypeUserPrompt, session.UserPrompt{Text: "Hello!"}),
	})
	if err != nil {
		panic(err)
	}
	// A stale writer is refused.
	_, err = store.Append(ctx, "s1", 1, []session.Event{session.MustNew(session.TypeUserPrompt, session.UserPrompt{Text: "late"})})
	fmt.Println("head", head, "conflict:", checkpoint.IsConflict(err))
	if err := store.Close(); err != nil {
		panic(err)
	}

	// An inspection command opens the database read-only: nothing changes.
	ro, err := sqlite.Open(path, &sqlite.Options{ReadOnly: true})
	if err != nil {
		panic(err)
	}
	defer ro.Close()
	list, err := ro.List(ctx, "myproject", checkpoint.ListOptions{})
	if err != nil {
		panic(err)
	}
	for _, s := range list {
		fmt.Printf("%s %q head=%d messages=%d\n", s.ID, s.Title, s.Head, s.Messages)
	}
	// Output:
	// head 2 conflict: true
	// s1 "Hello!" head=2 messages=1
}

func ExampleOpen_memory() {
	store, err := sqlite.Open(sqlite.Memory, nil) // nothing outlives Close
	if err != nil {
		panic(err)
	}
	defer store.Close()
	ctx := context.Background()
	if _, err := store.Append(ctx, "s1", 0, []session.Event{
		session.MustNew(session.TypeSessionStarted, session.SessionStarted{ID: "s1", Namespace: "ns"}),
	}); err != nil {
		panic(err)
	}
	for e, err := range store.Read(ctx, "s1", 1) {
		if err != nil {
			panic(err)
		}
		fmt.Println(e.Seq, e.Type)
	}
	// Output:
	// 1 session_started
}
