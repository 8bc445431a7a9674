package liteagent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/checkpoint/memory"
	"github.com/lite-agent/lite-agent/internal/fakemodel"
	"github.com/lite-agent/lite-agent/provider/anthropic"
)

// exampleModel starts the in-repo fake model with replies and returns a
// provider talking to it over HTTP, and a function that stops it.
func exampleModel(replies ...fakemodel.Reply) (*anthropic.Provider, func()) {
	srv, err := fakemodel.Start(&fakemodel.Script{Replies: replies})
	if err != nil {
		panic(err)
	}
	p, err := anthropic.New(&anthropic.Options{APIKey: "example", BaseURL: srv.URL()})
	if err != nil {
		panic(err)
	}
	return p, func() { srv.Close() }
}

// The seed's flow: two prompts in one conversation, then list, resume,
// checkpoints and a restore that takes the tools' file change back.
func Example() {
	p, stop := exampleModel(
		fakemodel.Reply{Text: "Creating it.", ToolCalls: []fakemodel.ToolCall{{ID: "c1", Name: "write", Input: json.RawMessage(`{"path": "hello.txt", "content": "hi\n"}`)}}},
		fakemodel.Reply{Text: "Created hello.txt."},
		fakemodel.Reply{Text: "I wrote hello.txt with a greeting."},
	)
	defer stop()
	dir, _ := os.MkdirTemp("", "liteagent-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()

	agent, err := liteagent.New(&liteagent.Options{Provider: p, Model: "example-model", Workdir: dir, Checkpointer: memory.New()})
	if err != nil {
		panic(err)
	}
	defer agent.Close()
	res, err := agent.Send(ctx, "Create hello.txt with a greeting")
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Text)
	res, err = agent.Send(ctx, "What did you just do?") // same session, full context
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Text)

	sessions, _ := agent.ListSessions(ctx)
	fmt.Println(len(sessions), "session:", sessions[0].Title)
	if err := agent.Resume(ctx, sessions[0].ID); err != nil {
		panic(err)
	}
	cps, _ := agent.ListCheckpoints(ctx, agent.SessionID())
	for _, cp := range cps {
		fmt.Println("checkpoint:", cp.Prompt)
	}
	r, err := agent.Restore(ctx, agent.SessionID(), cps[0].Seq, nil)
	if err != nil {
		panic(err)
	}
	_, statErr := os.Stat(filepath.Join(dir, "hello.txt"))
	fmt.Println("restore:", r.Files[0].Action, r.Files[0].Path, "- still there:", statErr == nil)
	// Output:
	// Created hello.txt.
	// I wrote hello.txt with a greeting.
	// 1 session: Create hello.txt with a greeting
	// checkpoint: Create hello.txt with a greeting
	// checkpoint: What did you just do?
	// restore: remove hello.txt - still there: false
}

// A Session is one conversation; an Agent serves many at once. Send
// delivers the turn's updates to OnUpdate before it returns.
func ExampleAgent_NewSession() {
	p, stop := exampleModel(fakemodel.Reply{Text: "Hello."})
	defer stop()
	dir, _ := os.MkdirTemp("", "liteagent-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	agent, err := liteagent.New(&liteagent.Options{Provider: p, Model: "example-model", Workdir: dir, Checkpointer: memory.New()})
	if err != nil {
		panic(err)
	}
	defer agent.Close()

	s, err := agent.NewSession(ctx, nil)
	if err != nil {
		panic(err)
	}
	defer s.Close()
	res, err := s.Send(ctx, "Say hello", &liteagent.SendOptions{OnUpdate: func(u liteagent.Update) {
		if u.Event != nil {
			fmt.Println(u.Event.Seq, u.Event.Type)
		}
	}})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Text, "head", res.Head)
	// Output:
	// 1 session_started
	// 2 project_context
	// 3 user_prompt
	// 4 assistant_message
	// 5 turn_completed
	// Hello. head 5
}
