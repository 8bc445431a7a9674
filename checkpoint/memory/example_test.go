package memory_test

import (
	"context"
	"fmt"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/memory"
	"github.com/lite-agent/lite-agent/session"
)

func ExampleNew() {
	ctx := context.Background()
	store := memory.New()
	defer store.Close()

	head, err := store.Append(ctx, "s1", 0, []session.Event{
		session.MustNew(session.TypeSessionStarted, session.SessionStarted{ID: "s1", Namespace: "demo"}),
		session.MustNew(session.TypeUserPrompt, session.UserPrompt{Text: "Fix the failing test"}),
	})
	if err != nil {
		panic(err)
	}
	// A writer that lost track of the head is turned away.
	_, err = store.Append(ctx, "s1", 1, []session.Event{
		session.MustNew(session.TypeTurnCompleted, session.TurnCompleted{}),
	})
	fmt.Println("head:", head, "stale append is a conflict:", checkpoint.IsConflict(err))

	for e, err := range store.Read(ctx, "s1", 1) {
		if err != nil {
			panic(err)
		}
		fmt.Println(e.Seq, e.Type)
	}
	list, _ := store.List(ctx, "demo", checkpoint.ListOptions{})
	fmt.Printf("%s %q %s messages=%d\n", list[0].ID, list[0].Title, list[0].Status, list[0].Messages)
	// Output:
	// head: 2 stale append is a conflict: true
	// 1 session_started
	// 2 user_prompt
	// s1 "Fix the failing test" running messages=1
}
