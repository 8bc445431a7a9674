package fakemodel

import (
	_ "embed"
	"fmt"
)

//go:embed demo.json
var demoJSON []byte

// DemoScript returns the bundled demo script (demo.json in this package),
// a fresh copy on every call, for the CLI's offline demo:
//
//   - turn 1: the model says what it will do and calls the write tool with
//     {"path": "hello.txt", "content": "Hello from lite-agent\n"} (call id
//     "toolu_demo_write_1"); after the tool result it answers with a
//     short text;
//   - turn 2: it answers a text mentioning hello.txt;
//   - it repeats that last answer for every later prompt.
func DemoScript() *Script {
	s, err := ParseScript(demoJSON)
	if err != nil {
		panic(fmt.Sprintf("fakemodel: the bundled demo script is broken: %v", err)) // pinned by TestDemoScript
	}
	return s
}
