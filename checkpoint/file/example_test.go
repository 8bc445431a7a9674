package file_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/file"
	"github.com/lite-agent/lite-agent/session"
)

func ExampleOpen() {
	dir, err := os.MkdirTemp("", "sessions-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()

	store, err := file.Open(filepath.Join(dir, "sessions"), nil) // nil: JSON records, 16 MiB events
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	// A session starts with session_started, which names its namespace.
	head, err := store.Append(ctx, "s1", 0, []session.Event{
		session.MustNew(session.TypeSessionStarted, session.SessionStarted{ID: "s1", Namespace: "/home/ann/shop"}),
		session.MustNew(session.TypeUserPrompt, session.UserPrompt{Text: "Add tests for the cart"}),
	})
	if err != nil {
		log.Fatal(err)
	}
	// A writer that is not at the head gets a conflict, and nothing is written.
	_, err = store.Append(ctx, "s1", 1, []session.Event{session.MustNew(session.TypeUserPrompt, session.UserPrompt{Text: "stale"})})
	fmt.Println("head", head, "conflict:", checkpoint.IsConflict(err))

	for e, err := range store.Read(ctx, "s1", 1) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(e.Seq, e.Type)
	}
	list, err := store.List(ctx, "/home/ann/shop", checkpoint.ListOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s %q %s\n", list[0].ID, list[0].Title, list[0].Status)
	// Output:
	// head 2 conflict: true
	// 1 session_started
	// 2 user_prompt
	// s1 "Add tests for the cart" running
}

func ExampleOpen_readOnly() {
	dir, err := os.MkdirTemp("", "sessions-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	root := filepath.Join(dir, "sessions")
	w, err := file.Open(root, &file.Options{Encoding: file.EncodingZstd})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	if _, err := w.Append(ctx, "s1", 0, []session.Event{
		session.MustNew(session.TypeSessionStarted, session.SessionStarted{ID: "s1", Namespace: "ns"}),
	}); err != nil {
		log.Fatal(err)
	}
	w.Close()

	// Inspection opens the store read-only: nothing on disk changes.
	ro, err := file.Open(root, &file.Options{ReadOnly: true})
	if err != nil {
		log.Fatal(err)
	}
	defer ro.Close()
	s, err := ro.Head(ctx, "s1")
	fmt.Println(s.Head, s.Status, err)
	_, err = ro.Append(ctx, "s1", 1, []session.Event{session.MustNew(session.TypeUserPrompt, session.UserPrompt{Text: "hi"})})
	fmt.Println(err)
	// Output:
	// 1 new <nil>
	// append s1: checkpointer is read-only
}
