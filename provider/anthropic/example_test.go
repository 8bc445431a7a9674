package anthropic_test

import (
	"context"
	"fmt"
	"log"

	"github.com/lite-agent/lite-agent/internal/fakemodel"
	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/provider/anthropic"
	"github.com/lite-agent/lite-agent/session"
)

// Stream a tool call from a model: here the fake model server, which
// speaks the Messages API on 127.0.0.1.
func Example() {
	script, err := fakemodel.ParseScript([]byte(`{"replies": [{
		"text": "Creating it.",
		"tool_calls": [{"id": "toolu_1", "name": "write", "input": {"path": "hello.txt", "content": "hi\n"}}]
	}]}`))
	if err != nil {
		log.Fatal(err)
	}
	srv, err := fakemodel.Start(script)
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	// With a nil *Options: ANTHROPIC_API_KEY and api.anthropic.com.
	p, err := anthropic.New(&anthropic.Options{APIKey: "unused by the fake", BaseURL: srv.URL()})
	if err != nil {
		log.Fatal(err)
	}
	req := provider.Request{
		Model:    "claude-sonnet-4-5",
		Tools:    []provider.ToolSpec{{Name: "write", Description: "Write a file."}},
		Messages: []provider.Message{{Role: session.RoleUser, Blocks: []session.Block{{Type: session.BlockText, Text: "Create hello.txt"}}}},
	}
	resp, err := p.Stream(context.Background(), req, func(d provider.Delta) {
		if d.Kind == provider.DeltaText {
			fmt.Print(d.Text) // as it arrives
		}
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println()
	call := resp.Blocks[1]
	fmt.Println(resp.StopReason, call.Name, string(call.Input))
	// Output:
	// Creating it.
	// tool_use write {"content":"hi\n","path":"hello.txt"}
}
