package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/checkpoint/memory"
	"github.com/lite-agent/lite-agent/server"
)

// A server over an agent: the agent asks the server's Approvals, and
// every request carries the server's token.
func Example() {
	store := memory.New()
	approvals := server.NewApprovals()
	agent, err := liteagent.New(&liteagent.Options{Checkpointer: store, Approve: approvals.Approve, Input: approvals.Input, Workdir: os.TempDir()})
	if err != nil {
		panic(err)
	}
	defer agent.Close()
	srv, err := server.New(agent, &server.Options{Store: store, Approvals: approvals})
	if err != nil {
		panic(err)
	}
	hs := httptest.NewServer(srv) // or http.Server{Handler: srv} on a loopback listener
	defer hs.Close()
	defer srv.Shutdown(context.Background())

	get := func(token string) {
		req, _ := http.NewRequest("GET", hs.URL+"/api/sessions", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		fmt.Println(resp.StatusCode, strings.TrimSpace(string(body)))
	}
	get(srv.Token())
	get("")
	// Output:
	// 200 {"sessions":[]}
	// 401 {"error":"this server needs its token: send Authorization: Bearer TOKEN, or open the link it printed when it started","code":"no_token"}
}
