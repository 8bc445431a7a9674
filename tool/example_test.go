package tool_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/lite-agent/lite-agent/tool"
)

// Check a path from the model, then reach the file only through the
// returned os.Root.
func ExampleRoot_Locate() {
	dir, _ := os.MkdirTemp("", "workdir")
	defer os.RemoveAll(dir)
	root, err := tool.OpenRoot(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer root.Close()

	loc, err := root.Locate("./notes/../notes/todo.txt")
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := loc.WriteFile([]byte("ship it\n"), 0o644); err != nil {
		fmt.Println(err)
		return
	}
	b, _ := loc.FS.ReadFile(loc.Name)
	fmt.Printf("%s: %s", loc.Path, b)

	_, err = root.Locate("../elsewhere")
	fmt.Println(err != nil)
	_, err = root.Locate(filepath.Join(os.TempDir(), "x"))
	fmt.Println(err != nil)
	// Output:
	// notes/todo.txt: ship it
	// true
	// true
}
