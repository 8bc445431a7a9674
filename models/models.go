// Package models is lite-agent's small table of what it knows about
// models: the context window and the list price, in US dollars per
// million tokens, of input, output, prompt-cache writes and prompt-cache
// reads. The SDK uses the window to decide when to compact a session and
// the prices to estimate what a session cost; a model the table does not
// know gets neither (token counts are still shown, and no cost is
// guessed).
//
// The built-in prices are Anthropic's and OpenAI's published list prices
// as of late 2026, for the standard (5-minute) cache; they are estimates,
// not a bill. Options.Models in the SDK (and the --models FILE flag of the
// command line) add models or override entries.
package models

import (
	"fmt"
	"os"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/lite-agent/lite-agent/session"
)

// Info is what the table knows about one model.
type Info struct {
	// Window is the context window in tokens; 0 means unknown.
	Window int `toml:"window" json:"window,omitempty"`
	// Prices in US dollars per million tokens; all zero means unknown.
	Input      float64 `toml:"input" json:"input,omitempty"`
	Output     float64 `toml:"output" json:"output,omitempty"`
	CacheWrite float64 `toml:"cache_write" json:"cache_write,omitempty"`
	CacheRead  float64 `toml:"cache_read" json:"cache_read,omitempty"`
}

// Priced reports whether the entry has prices.
func (i Info) Priced() bool { return i.Input > 0 || i.Output > 0 }

// Cost estimates what usage cost at these prices, in US dollars: uncached
// input at Input, cache writes at CacheWrite, cache reads at CacheRead and
// output at Output. It reports false when the model has no prices.
func (i Info) Cost(u session.Usage) (float64, bool) {
	if !i.Priced() {
		return 0, false
	}
	c := float64(u.Uncached())*i.Input + float64(u.CacheWriteTokens)*i.CacheWrite +
		float64(u.CacheReadTokens)*i.CacheRead + float64(u.OutputTokens)*i.Output
	return c / 1e6, true
}

// Table maps model names, or name prefixes ending in "*", to what is known
// of them.
type Table map[string]Info

// Builtin returns the built-in table (a new map each call).
func Builtin() Table {
	sonnet := Info{Window: 200_000, Input: 3, Output: 15, CacheWrite: 3.75, CacheRead: 0.30}
	return Table{
		"claude-opus-4*":     {Window: 200_000, Input: 15, Output: 75, CacheWrite: 18.75, CacheRead: 1.50},
		"claude-sonnet-4*":   sonnet,
		"claude-3-7-sonnet*": sonnet,
		"claude-haiku-4*":    {Window: 200_000, Input: 1, Output: 5, CacheWrite: 1.25, CacheRead: 0.10},
		"claude-3-5-haiku*":  {Window: 200_000, Input: 0.80, Output: 4, CacheWrite: 1, CacheRead: 0.08},
		"gpt-4.1":            {Window: 1_047_576, Input: 2, Output: 8, CacheRead: 0.50},
		"gpt-4.1-mini*":      {Window: 1_047_576, Input: 0.40, Output: 1.60, CacheRead: 0.10},
		"gpt-4o*":            {Window: 128_000, Input: 2.50, Output: 10, CacheRead: 1.25},
		"o3*":                {Window: 200_000, Input: 2, Output: 8, CacheRead: 0.50},
		"o4-mini*":           {Window: 200_000, Input: 1.10, Output: 4.40, CacheRead: 0.275},
	}
}

// Lookup returns the entry for model: an exact name first, else the
// longest matching prefix pattern. It reports false for an unknown model.
func (t Table) Lookup(model string) (Info, bool) {
	if i, ok := t[model]; ok {
		return i, true
	}
	best, found := "", false
	var out Info
	for pat, i := range t {
		p, ok := strings.CutSuffix(pat, "*")
		// Two patterns of one length cannot both be prefixes of model,
		// so the longest is unique.
		if ok && strings.HasPrefix(model, p) && (!found || len(p) > len(best)) {
			best, out, found = p, i, true
		}
	}
	return out, found
}

// With returns a copy of t with over's entries added or replacing t's.
func (t Table) With(over Table) Table {
	out := make(Table, len(t)+len(over))
	for k, v := range t {
		out[k] = v
	}
	for k, v := range over {
		out[k] = v
	}
	return out
}

// Load reads a table from a TOML file, one table per model:
//
//	["my-local-model"]
//	window = 32768
//
//	["claude-sonnet-4*"]
//	window = 200000
//	input = 3.0
//	output = 15.0
//	cache_write = 3.75
//	cache_read = 0.30
func Load(path string) (Table, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the model table: %w", err)
	}
	var t Table
	md, err := toml.Decode(string(data), &t)
	if err != nil {
		return nil, fmt.Errorf("model table %s: %w", path, err)
	}
	if un := md.Undecoded(); len(un) > 0 {
		return nil, fmt.Errorf("model table %s: unknown key %s (the keys are window, input, output, cache_write and cache_read)", path, un[0])
	}
	for name, i := range t {
		if i.Window < 0 || i.Input < 0 || i.Output < 0 || i.CacheWrite < 0 || i.CacheRead < 0 {
			return nil, fmt.Errorf("model table %s: %q has a negative value", path, name)
		}
	}
	return t, nil
}
