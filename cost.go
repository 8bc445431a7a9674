package liteagent

import (
	"fmt"
	"math"
	"strings"

	"github.com/lite-agent/lite-agent/session"
)

// Spend is what a session's model calls used and what they cost: the
// tokens by kind, how full the model's context window was at the latest
// call, and an estimated price from the model table (package models). A
// model the table does not know has no window and no price: the tokens are
// all there is, and nothing is guessed.
type Spend struct {
	// Model is the model the figures are for.
	Model string `json:"model,omitempty"`
	// Usage is every model call of the session so far, summaries and
	// titles included.
	Usage session.Usage `json:"usage"`
	// ContextTokens is the size of the latest request with its answer (0
	// before the first call and right after a compaction).
	ContextTokens int64 `json:"context_tokens"`
	// Window is the model's context window in tokens; 0 when unknown.
	Window int `json:"window,omitempty"`
	// ContextShare is ContextTokens over Window; 0 when the window is
	// unknown.
	ContextShare float64 `json:"context_share,omitempty"`
	// CacheShare is the share of the input tokens read from the prompt
	// cache.
	CacheShare float64 `json:"cache_read_share"`
	// CostUSD is the estimated cost in US dollars; meaningful only when
	// Priced.
	CostUSD float64 `json:"cost_usd,omitempty"`
	Priced  bool    `json:"priced"`
	// Line is String's summary, for clients that show it as it is.
	Line string `json:"line"`
}

// Spend returns the figures of a session of model whose calls used total
// in all and last at the latest call (see session.State.LastUsage). The
// window is Options.ContextWindow when set, else the model table's.
func (a *Agent) Spend(model string, total, last session.Usage) Spend {
	if model == "" {
		model = a.opts.Model
	}
	info, _ := a.models.Lookup(model)
	if a.opts.ContextWindow > 0 {
		info.Window = a.opts.ContextWindow
	}
	s := Spend{Model: model, Usage: total, ContextTokens: last.InputTokens + last.OutputTokens, Window: info.Window}
	if s.Window > 0 {
		s.ContextShare = float64(s.ContextTokens) / float64(s.Window)
	}
	if total.InputTokens > 0 {
		s.CacheShare = float64(total.CacheReadTokens) / float64(total.InputTokens)
	}
	s.CostUSD, s.Priced = info.Cost(total)
	s.Line = s.String()
	return s
}

// String is the one-line summary the clients show, such as
// "ctx 34% of 200k · $0.0123 (cache 81%)"; a part whose figure is unknown
// is left out, and tokens are shown when neither window nor price is known.
func (s Spend) String() string {
	var parts []string
	if s.Window > 0 {
		parts = append(parts, fmt.Sprintf("ctx %d%% of %s", int(math.Round(100*s.ContextShare)), compactCount(int64(s.Window))))
	}
	if s.Priced {
		p := fmt.Sprintf("$%.4f", s.CostUSD)
		if s.Usage.CacheReadTokens > 0 {
			p += fmt.Sprintf(" (cache %d%%)", int(math.Round(100*s.CacheShare)))
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		parts = append(parts, compactCount(s.Usage.InputTokens+s.Usage.OutputTokens)+" tokens")
	}
	return strings.Join(parts, " · ")
}

// compactCount writes n as 950, 34.5k, 200k or 1.2M.
func compactCount(n int64) string {
	trim := func(f float64) string { return strings.TrimSuffix(fmt.Sprintf("%.1f", f), ".0") }
	switch {
	case n >= 1_000_000:
		return trim(float64(n)/1e6) + "M"
	case n >= 1_000:
		return trim(float64(n)/1e3) + "k"
	}
	return fmt.Sprint(n)
}
