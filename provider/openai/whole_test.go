package openai_test

import (
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/lite-agent/lite-agent/internal/fakemodel"
	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/provider/openai"
	"github.com/lite-agent/lite-agent/session"
)

// A server that cannot stream tool calls answers the stream with nothing:
// the provider asks again without streaming and gets the call.
func TestFallbackWhenTheStreamIsEmpty(t *testing.T) {
	call := fakemodel.ToolCall{ID: "call_1", Name: "read", Input: []byte(`{"path":"a.txt"}`)}
	reply := fakemodel.Reply{Text: "Reading it.", ToolCalls: []fakemodel.ToolCall{call}, NoStreamToolCalls: true}
	srv, err := fakemodel.Start(&fakemodel.Script{Replies: []fakemodel.Reply{reply, reply}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	p := newProvider(t, srv, 0)
	var deltas []provider.Delta
	resp, err := p.Stream(t.Context(), provider.Request{Model: "m", Messages: []provider.Message{userText("read a.txt")}}, func(d provider.Delta) { deltas = append(deltas, d) })
	if err != nil {
		t.Fatal(err)
	}
	want := []session.Block{
		{Type: session.BlockText, Text: "Reading it."},
		{Type: session.BlockToolUse, ID: "call_1", Name: "read", Input: []byte(`{"path":"a.txt"}`)},
	}
	if diff := cmp.Diff(want, resp.Blocks); diff != "" || resp.StopReason != provider.StopToolUse {
		t.Errorf("blocks (-want +got):\n%s\nstop reason %q", diff, resp.StopReason)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 || decode(t, reqs[0].Body)["stream"] != true || decode(t, reqs[1].Body)["stream"] != nil && decode(t, reqs[1].Body)["stream"] != false {
		t.Errorf("want a streamed request, then one without streaming; got %d requests", len(reqs))
	}
	if len(deltas) != 3 || deltas[0].Text != "Reading it." {
		t.Errorf("deltas of the whole answer = %+v", deltas)
	}
}

// With NoStream every request asks for a whole answer.
func TestNoStream(t *testing.T) {
	srv, err := fakemodel.Start(&fakemodel.Script{Replies: []fakemodel.Reply{{Text: "whole"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	p, err := openai.New(&openai.Options{APIKey: "k", BaseURL: srv.OpenAIURL(), HTTPClient: &http.Client{}, NoStream: true})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := p.Stream(t.Context(), provider.Request{Model: "m", Messages: []provider.Message{userText("hi")}}, nil)
	if err != nil || len(resp.Blocks) != 1 || resp.Blocks[0].Text != "whole" {
		t.Fatalf("NoStream answer %+v, %v", resp, err)
	}
	if s := decode(t, srv.Requests()[0].Body)["stream"]; s == true {
		t.Error("NoStream sent a streaming request")
	}
}

func userText(s string) provider.Message {
	return provider.Message{Role: session.RoleUser, Blocks: []session.Block{{Type: session.BlockText, Text: s}}}
}
