package liteagent_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent"
	"pgregory.net/rapid"
)

// shellSim tracks the files a random sequence of shell commands leaves, so
// the generator only draws commands that succeed.
type shellSim map[string]bool

func (s shellSim) existing() []string { return slices.Sorted(maps.Keys(s)) }

// drawShellOp draws one command that creates, modifies, deletes, chmods
// or renames a file (nested directories included) and applies it to sim.
func drawShellOp(rt *rapid.T, sim shellSim) string {
	names := []string{"a.txt", "b.txt", "sub/c.txt", "sub/deep/d.txt", "other/e.txt"}
	content := rapid.StringMatching(`[a-z]{1,8}`).Draw(rt, "content")
	have := sim.existing()
	kinds := []string{"create"}
	if len(have) > 0 {
		kinds = append(kinds, "modify", "delete", "chmod", "rename")
	}
	switch rapid.SampledFrom(kinds).Draw(rt, "kind") {
	case "modify":
		p := rapid.SampledFrom(have).Draw(rt, "path")
		return fmt.Sprintf("printf '%s\\n' >> %s", content, p)
	case "delete":
		p := rapid.SampledFrom(have).Draw(rt, "path")
		delete(sim, p)
		return "rm " + p
	case "chmod":
		p := rapid.SampledFrom(have).Draw(rt, "path")
		mode := rapid.SampledFrom([]string{"600", "640", "755", "700"}).Draw(rt, "mode")
		return fmt.Sprintf("chmod %s %s", mode, p)
	case "rename":
		from := rapid.SampledFrom(have).Draw(rt, "from")
		to := rapid.SampledFrom(names).Draw(rt, "to")
		if sim[to] {
			return fmt.Sprintf("printf '%s\\n' > %s", content, from) // a move over a file is a change of it
		}
		delete(sim, from)
		sim[to] = true
		return fmt.Sprintf("mkdir -p %s && mv %s %s", path.Dir(to), from, to)
	}
	p := rapid.SampledFrom(names).Draw(rt, "path")
	sim[p] = true
	return fmt.Sprintf("mkdir -p %s && printf '%s\\n' > %s", path.Dir(p), content, p)
}

// TestRestorePropertyShellCommands: random shell commands over several
// prompts, then a restore to a random checkpoint: the tree (files, modes
// and directories) equals the tree at that checkpoint. With a concurrent
// edit by someone else of a file the session changed, the restore refuses
// and changes nothing.
func TestRestorePropertyShellCommands(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		sim := shellSim{}
		var prompts [][]op
		for range rapid.IntRange(1, 3).Draw(rt, "prompts") {
			// One bash call per prompt running 0 to 4 commands: the calls
			// are what costs, the commands are what varies.
			var cmds []string
			for range rapid.IntRange(0, 4).Draw(rt, "commands") {
				cmds = append(cmds, drawShellOp(rt, sim))
			}
			var ops []op
			if len(cmds) > 0 {
				ops = append(ops, op{kind: "bash", content: strings.Join(cmds, " && ")})
			}
			prompts = append(prompts, ops)
		}
		var dirsBefore [][]string
		f := runPromptsObserving(t, rt, prompts, func(dir string) { dirsBefore = append(dirsBefore, dirs(rt, dir)) })
		cps := f.checkpoints(rt)
		i := rapid.IntRange(0, len(cps)-1).Draw(rt, "checkpoint")
		ctx := context.Background()
		id := f.agent.SessionID()

		now := tree(rt, f.dir)
		changed := changedPaths(now, f.before[i])
		if len(changed) > 0 && rapid.Bool().Draw(rt, "someone else edits") {
			p := rapid.SampledFrom(changed).Draw(rt, "edited")
			full := filepath.Join(f.dir, p)
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				rt.Fatal(err)
			}
			if err := os.WriteFile(full, []byte("someone else's edit\n"), 0o644); err != nil {
				rt.Fatal(err)
			}
			edited, dirsEdited := tree(rt, f.dir), dirs(rt, f.dir)
			_, err := f.agent.Restore(ctx, id, cps[i], nil)
			var de *liteagent.DriftError
			if !errors.As(err, &de) || !slices.Contains(de.Files, p) {
				rt.Fatalf("restore over someone else's edit of %s: %v, want a *DriftError naming it", p, err)
			}
			sameTree(rt, "tree after the refused restore", tree(rt, f.dir), edited)
			if got := dirs(rt, f.dir); !slices.Equal(got, dirsEdited) {
				rt.Fatalf("directories after the refused restore: %v, want %v", got, dirsEdited)
			}
			return
		}
		if _, err := f.agent.Restore(ctx, id, cps[i], nil); err != nil {
			rt.Fatalf("restore to checkpoint %d: %v", i, err)
		}
		sameTree(rt, "tree after restore", tree(rt, f.dir), f.before[i])
		if got := dirs(rt, f.dir); !slices.Equal(got, dirsBefore[i]) {
			rt.Fatalf("directories after restore: %v, want %v", got, dirsBefore[i])
		}
	})
}

// changedPaths lists the files that differ between two trees.
func changedPaths(a, b map[string]file) []string {
	var out []string
	for p, fa := range a {
		if fb, ok := b[p]; !ok || fa != fb {
			out = append(out, p)
		}
	}
	for p := range b {
		if _, ok := a[p]; !ok {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}
