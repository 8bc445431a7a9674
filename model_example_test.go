package liteagent_test

import (
	"context"
	"fmt"
	"os"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/checkpoint/memory"
	"github.com/lite-agent/lite-agent/internal/fakemodel"
)

// A session switched to another model asks for it from then on, and a
// session opened again later goes on with it.
func ExampleSession_SetModel() {
	p, stop := exampleModel(
		fakemodel.Reply{Expect: &fakemodel.Expect{Model: "claude-haiku-4-5"}, Text: "Short answer."},
		fakemodel.Reply{Expect: &fakemodel.Expect{Model: "claude-haiku-4-5"}, Text: "Still haiku."},
	)
	defer stop()
	dir, _ := os.MkdirTemp("", "liteagent-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	store := memory.New()

	agent, err := liteagent.New(&liteagent.Options{Provider: p, Model: "claude-sonnet-4-6", Workdir: dir, Checkpointer: store})
	if err != nil {
		panic(err)
	}
	s, _ := agent.NewSession(ctx, nil)
	if err := s.SetModel(ctx, "claude-haiku-4-5"); err != nil {
		panic(err)
	}
	res, err := s.Send(ctx, "In one line: what is a goroutine?", nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Text)
	agent.Close()

	again, _ := liteagent.New(&liteagent.Options{Provider: p, Model: "claude-sonnet-4-6", Workdir: dir, Checkpointer: store})
	defer again.Close()
	s2, _ := again.OpenSession(ctx, s.ID(), nil)
	fmt.Println("model:", s2.Model())
	res, err = s2.Send(ctx, "And a channel?", nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Text)
	// Output:
	// Short answer.
	// model: claude-haiku-4-5
	// Still haiku.
}
