package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
	"github.com/lite-agent/lite-agent/tool"
)

// doctor is --doctor [ID] [--repair]: one JSON line per problem, then one
// with the counts. Without --repair the store is opened read-only.
func doctor(ctx context.Context, c *config, std IO) error {
	store, err := openStore(ctx, c.sessionDB, !c.repair)
	if err != nil {
		return err
	}
	defer store.Close()
	only := strings.TrimSpace(c.prompt)
	rep, err := checkpoint.Doctor(ctx, store, checkpoint.DoctorOptions{Session: only, Repair: c.repair})
	if err != nil {
		return err
	}
	strays, err := strayTemps(ctx, store, only, c.repair)
	if err != nil {
		return err
	}
	rep.Problems = append(rep.Problems, strays...)
	enc := json.NewEncoder(std.Stdout)
	left := 0
	for _, p := range rep.Problems {
		if err := enc.Encode(p); err != nil {
			return err
		}
		if !p.Repaired {
			left++
		}
	}
	if err := enc.Encode(map[string]any{"sessions": rep.Sessions, "events": rep.Events, "problems": len(rep.Problems), "left": left}); err != nil {
		return err
	}
	if left > 0 {
		hint := "see each line's fix"
		if !c.repair {
			hint = "run lite-agent --session-db " + c.sessionDB + " --doctor --repair"
		}
		return fmt.Errorf("the store has %d problem(s); %s", left, hint)
	}
	return nil
}

// problemStrayTemp is a temporary file a write cut off by a crash left in
// a session's workdir.
const problemStrayTemp = "stray_temp_file"

// strayTemps looks, for every session with interrupted calls (only the
// session only, if set) whose workdir is on this machine, beside the files
// those calls were writing for the temporary files a crash left
// (".NAME.lite-agent-*.tmp", see tool.Root.FindStrayTemps), and with
// repair removes them. Damaged logs are the store check's to report.
func strayTemps(ctx context.Context, store checkpoint.Checkpointer, only string, repair bool) ([]checkpoint.Problem, error) {
	var list []session.Summary
	if only != "" {
		sum, err := store.Head(ctx, only)
		if err != nil {
			return nil, nil
		}
		list = []session.Summary{sum}
	} else {
		var err error
		if list, err = store.List(ctx, "", checkpoint.ListOptions{}); err != nil {
			return nil, err
		}
	}
	var out []checkpoint.Problem
	for _, sum := range list {
		if len(sum.Open) == 0 || sum.Workdir == "" {
			continue
		}
		events, err := checkpoint.ReadAll(ctx, store, sum.ID)
		if err != nil {
			continue
		}
		var paths []string
		for _, h := range session.Replay(events).Hazards() {
			paths = append(paths, h.Paths...)
		}
		if len(paths) == 0 {
			continue
		}
		root, err := tool.OpenRoot(sum.Workdir)
		if err != nil {
			continue // not on this machine
		}
		found, _ := root.FindStrayTemps(paths)
		var removed []string
		if repair && len(found) > 0 {
			removed, _ = root.RemoveStrayTemps(paths)
		}
		root.Close()
		for _, p := range found {
			out = append(out, checkpoint.Problem{Session: sum.ID, Kind: problemStrayTemp,
				Detail:   fmt.Sprintf("%s in %s is a partial write left by an interrupted call of this session", p, sum.Workdir),
				Fix:      "run --doctor --repair to remove it, or acknowledge the call (--resume ID --acknowledge TOKEN); the file it was written for is untouched by it",
				Repaired: slices.Contains(removed, p)})
		}
	}
	return out, nil
}
