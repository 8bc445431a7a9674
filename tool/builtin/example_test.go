package builtin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lite-agent/lite-agent/tool"
	"github.com/lite-agent/lite-agent/tool/builtin"
)

// A tool call from the model: find the tool by name, check whether it
// changes files, and run it confined to the workdir.
func Example() {
	dir, _ := os.MkdirTemp("", "workdir")
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "hello.go"), []byte("package hello\n\n// Greetings.\nconst (\n\tName     = \"world\"\n\tGreeting = \"hi\"\n)\n"), 0o644)

	root, err := tool.OpenRoot(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer root.Close()

	tools := map[string]tool.Tool{}
	for _, t := range builtin.All() {
		tools[t.Spec().Name] = t
	}
	input := json.RawMessage(`{"path": "hello.go", "old_string": "\"hi\"", "new_string": "\"hello\""}`)
	edit := tools["edit"]
	if m, ok := edit.(tool.Mutator); ok {
		paths, _ := m.Paths(root, input)
		fmt.Println("will change:", paths) // snapshot these first
	}
	res := edit.Run(context.Background(), tool.Call{ID: "call_1", Input: input, Root: root})
	fmt.Println(res.Output)
	// Output:
	// will change: [hello.go]
	// edited hello.go: replaced 1 occurrence
	// --- hello.go
	// +++ hello.go
	// @@ -3,5 +3,5 @@
	//  // Greetings.
	//  const (
	//  	Name     = "world"
	// -	Greeting = "hi"
	// +	Greeting = "hello"
	//  )
}
