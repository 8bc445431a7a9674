package liteagent_test

import (
	"context"
	"testing"

	"pgregory.net/rapid"
)

// TestRestorePropertyRandomOperations: random file operations over several
// prompts, then a restore to a random checkpoint: the tree equals the tree
// as it was at that checkpoint.
func TestRestorePropertyRandomOperations(t *testing.T) {
	names := []string{"a.txt", "b.txt", "sub/c.txt", "sub/deep/d.txt"}
	rapid.Check(t, func(rt *rapid.T) {
		// Simulate the tree to choose only operations the tools accept.
		cur := map[string]string{}
		nPrompts := rapid.IntRange(1, 4).Draw(rt, "prompts")
		var prompts [][]op
		for p := range nPrompts {
			nOps := rapid.IntRange(0, 3).Draw(rt, "ops")
			var ops []op
			for range nOps {
				name := rapid.SampledFrom(names).Draw(rt, "name")
				content, exists := cur[name]
				kind := "write"
				if exists {
					kind = rapid.SampledFrom([]string{"write", "edit", "delete"}).Draw(rt, "kind")
				}
				next := rapid.StringMatching(`[a-z]{1,8}\n`).Draw(rt, "content")
				switch kind {
				case "delete":
					delete(cur, name)
					ops = append(ops, op{kind: "delete", path: name})
				case "edit":
					if content == next {
						next += "x"
					}
					ops = append(ops, op{kind: "edit", path: name, old: content, content: next})
					cur[name] = next
				default:
					ops = append(ops, op{kind: "write", path: name, content: next})
					cur[name] = next
				}
			}
			_ = p
			prompts = append(prompts, ops)
		}
		f := runPromptsFailing(t, rt, nil, prompts)
		cps := f.checkpoints(rt)
		i := rapid.IntRange(0, len(cps)-1).Draw(rt, "checkpoint")
		if _, err := f.agent.Restore(context.Background(), f.agent.SessionID(), cps[i], nil); err != nil {
			rt.Fatalf("restore to checkpoint %d: %v", i, err)
		}
		sameTree(rt, "tree after restore", tree(rt, f.dir), f.before[i])
	})
}
