// Command mcptestserver is a tiny stdio MCP server, built with the official
// Go SDK, that lite-agent's tests start to check the cases real servers do
// not show on demand: a slow call cut off by a crash or a cancel, children
// left in the process group, a server that ignores its closed stdin, and
// servers that exit at start, never answer initialize or write garbage.
//
// Usage: mcptestserver [-mode normal|exit|silent|garbage] [-dir DIR]
// [-child] [-ignore-stdin] [-ignore-term]
//
// With -dir, the slow tool writes DIR/slow.started when it starts and
// DIR/slow.cancelled when the client cancels it, and -child writes the
// pid of the child it starts to DIR/child.pid; the server writes its own
// pid to DIR/server.pid.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	mode := flag.String("mode", "normal", "normal, exit, silent or garbage")
	dir := flag.String("dir", "", "where the slow tool and -child write their markers")
	child := flag.Bool("child", false, "start a child process that sleeps, in the same process group")
	ignoreStdin := flag.Bool("ignore-stdin", false, "keep running after stdin closes")
	ignoreTerm := flag.Bool("ignore-term", false, "ignore SIGTERM")
	flag.Parse()
	mark := func(name, text string) {
		if *dir != "" {
			_ = os.WriteFile(filepath.Join(*dir, name), []byte(text), 0o644)
		}
	}
	mark("server.pid", strconv.Itoa(os.Getpid()))
	if *ignoreTerm {
		signal.Ignore(syscall.SIGTERM)
	}
	if *child {
		c := exec.Command("sleep", "600")
		if err := c.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "start child:", err)
			os.Exit(1)
		}
		mark("child.pid", strconv.Itoa(c.Process.Pid))
	}
	switch *mode {
	case "exit":
		fmt.Fprintln(os.Stderr, "mcptestserver: cannot open the config file /nonexistent/db.toml")
		os.Exit(3)
	case "silent":
		fmt.Fprintln(os.Stderr, "mcptestserver: reading requests but never answering")
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
		}
		time.Sleep(time.Hour)
	case "garbage":
		bufio.NewReader(os.Stdin).ReadString('\n')
		fmt.Println("this is not JSON-RPC {{{")
		time.Sleep(time.Hour)
	}

	s := mcp.NewServer(&mcp.Implementation{Name: "mcptestserver", Version: "1"}, nil)
	type echoIn struct {
		Text string `json:"text" jsonschema:"the text to echo"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echoes text back.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + in.Text}}}, nil, nil
		})
	type slowIn struct {
		Seconds float64 `json:"seconds" jsonschema:"how long to run"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "slow", Description: "Runs for a while, like a deploy."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in slowIn) (*mcp.CallToolResult, any, error) {
			mark("slow.started", "started")
			select {
			case <-time.After(time.Duration(in.Seconds * float64(time.Second))):
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "slow: done"}}}, nil, nil
			case <-ctx.Done():
				mark("slow.cancelled", "cancelled")
				return nil, nil, ctx.Err()
			}
		})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Always fails, as a tool error."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			r := &mcp.CallToolResult{}
			r.SetError(fmt.Errorf("the ticket tracker refused: project FOO is archived"))
			return r, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "add_tool", Description: "Adds a tool named added (the server then sends tools/list_changed)."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			mcp.AddTool(s, &mcp.Tool{Name: "added", Description: "A tool added at run time."},
				func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "added: here"}}}, nil, nil
				})
			// The SDK sends tools/list_changed after a 10 ms debounce:
			// waiting past it puts the notification before this result,
			// as a server that changes its tools at once would.
			time.Sleep(200 * time.Millisecond)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "added the tool added"}}}, nil, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "review", Description: "Review a file.", Arguments: []*mcp.PromptArgument{{Name: "file", Required: true}, {Name: "focus"}}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			text := "Review " + req.Params.Arguments["file"] + " carefully"
			if f := req.Params.Arguments["focus"]; f != "" {
				text += ", looking at " + f
			}
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: text + "."}}}}, nil
		})
	runCtx := context.Background()
	if *ignoreStdin {
		go func() { _ = s.Run(runCtx, &mcp.StdioTransport{}) }()
		time.Sleep(time.Hour)
	}
	if err := s.Run(runCtx, &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "mcptestserver:", err)
	}
}
