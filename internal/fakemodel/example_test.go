package fakemodel_test

import (
	"context"
	"fmt"
	"log"

	"github.com/lite-agent/lite-agent/internal/fakemodel"
	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/provider/openai"
	"github.com/lite-agent/lite-agent/session"
)

// A script with one reply and a check on the request; any client of
// either API can talk to the server.
func ExampleStart() {
	script, err := fakemodel.ParseScript([]byte(`{"replies": [
		{"expect": {"last_user_contains": ["hello"]}, "text": "Hi there!"}
	]}`))
	if err != nil {
		log.Fatal(err)
	}
	srv, err := fakemodel.Start(script)
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	p, err := openai.New(&openai.Options{BaseURL: srv.OpenAIURL()})
	if err != nil {
		log.Fatal(err)
	}
	resp, err := p.Stream(context.Background(), provider.Request{
		Model:    "any-model",
		Messages: []provider.Message{{Role: session.RoleUser, Blocks: []session.Block{{Type: session.BlockText, Text: "hello"}}}},
	}, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.Blocks[0].Text)
	r := srv.Requests()[0]
	fmt.Println(r.Method, r.Path, r.Status, srv.Err())
	// Output:
	// Hi there!
	// POST /v1/chat/completions 200 <nil>
}
