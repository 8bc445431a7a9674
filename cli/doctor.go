package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/lite-agent/lite-agent/checkpoint"
)

// doctor is --doctor [ID] [--repair]: one JSON line per problem, then one
// with the counts. Without --repair the store is opened read-only.
func doctor(ctx context.Context, c *config, std IO) error {
	store, err := openStore(ctx, c.sessionDB, !c.repair)
	if err != nil {
		return err
	}
	defer store.Close()
	rep, err := checkpoint.Doctor(ctx, store, checkpoint.DoctorOptions{Session: strings.TrimSpace(c.prompt), Repair: c.repair})
	if err != nil {
		return err
	}
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
