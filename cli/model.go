package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/models"
)

// switchModel is /model: with a name it switches the run's session to
// that model (recorded in its log, so a resume goes on with it); alone it
// shows the current model and the known ones.
func switchModel(ctx context.Context, e *env, arg string, w io.Writer) error {
	if e.sess == nil {
		if err := e.use(ctx, ""); err != nil {
			return err
		}
	}
	if arg == "" {
		printModels(w, e.sess.Model(), e.agent.Models())
		return nil
	}
	if err := e.sess.SetModel(ctx, arg); err != nil {
		return err
	}
	note := ""
	if _, known := e.agent.Models().Lookup(arg); !known {
		note = " (not in the table of known models: no context window or price is known for it, and the server must take the name)"
	}
	fmt.Fprintf(w, "model: %s from the next prompt on%s\n", arg, note)
	return nil
}

// printModels lists the current model and the table of known ones.
func printModels(w io.Writer, current string, t models.Table) {
	fmt.Fprintf(w, "model: %s\n", current)
	names := make([]string, 0, len(t))
	for name := range t {
		names = append(names, name)
	}
	slices.Sort(names)
	fmt.Fprintln(w, "known models (a * stands for any ending; other names the server takes work too):")
	for _, name := range names {
		i := t[name]
		line := fmt.Sprintf("  %-22s", name)
		if i.Window > 0 {
			line += fmt.Sprintf(" %5s window", windowSize(i.Window))
		}
		if i.Priced() {
			line += fmt.Sprintf("  $%s in / $%s out per million tokens", price(i.Input), price(i.Output))
		}
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
	fmt.Fprintln(w, "switch with /model NAME")
}

func windowSize(n int) string {
	if n >= 1_000_000 {
		return strconv.FormatFloat(float64(n)/1e6, 'f', 1, 64) + "M"
	}
	return strconv.Itoa(n/1000) + "K"
}

func price(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// resumeModel makes an explicit --model win over the model a resumed
// session was switched to, recording the switch.
func resumeModel(ctx context.Context, c *config, s *liteagent.Session) error {
	if !c.modelGiven || c.model == "" || s.Model() == c.model {
		return nil
	}
	return s.SetModel(ctx, c.model)
}
