package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/internal/fakemodel"
)

// TestSessionInfoShowsContextAndCost: --session-info of a session of a
// model the table knows gives the tokens by kind, the share of the window
// the latest call used and the estimated cost, as figures and as the
// status line's text; a model it does not know gets tokens only.
func TestSessionInfoShowsContextAndCost(t *testing.T) {
	// Anthropic counts: 2,730 uncached + 10,000 written + 54,270 read =
	// 67,000 input; 1,000 output. 68,000 of claude-sonnet-4's 200k is 34%;
	// 2,730×$3 + 10,000×$3.75 + 54,270×$0.30 + 1,000×$15 per million is
	// $0.076971; 54,270 of 67,000 read from the cache is 81%.
	u := &fakemodel.Usage{InputTokens: 2_730, CacheCreationInputTokens: 10_000, CacheReadInputTokens: 54_270, OutputTokens: 1_000}
	for _, tt := range []struct {
		model, line string
		window      int
		priced      bool
	}{
		{"claude-sonnet-4-5", "ctx 34% of 200k · $0.0770 (cache 81%)", 200_000, true},
		{"my-local-model", "68k tokens", 0, false},
	} {
		t.Run(tt.model, func(t *testing.T) {
			srv := startModel(t, fakemodel.Reply{Text: "It is an agent.", Usage: u})
			work, db := t.TempDir(), filepath.Join(t.TempDir(), "s.db")
			if code, _, errs := run(t, srv, work, "--session-db", db, "--model", tt.model, "explain the repository"); code != 0 {
				t.Fatalf("run: %d %s", code, errs)
			}
			code, out, errs := run(t, nil, work, "--session-db", db, "--session-info", onlySession(t, work, db))
			if code != 0 {
				t.Fatalf("--session-info: %d %s", code, errs)
			}
			var in struct {
				Usage map[string]int64 `json:"usage"`
				Spend struct {
					Model         string  `json:"model"`
					ContextTokens int64   `json:"context_tokens"`
					Window        int     `json:"window"`
					ContextShare  float64 `json:"context_share"`
					CacheShare    float64 `json:"cache_read_share"`
					CostUSD       float64 `json:"cost_usd"`
					Priced        bool    `json:"priced"`
					Line          string  `json:"line"`
				} `json:"spend"`
			}
			if err := json.Unmarshal([]byte(out), &in); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			want := map[string]int64{"input_tokens": 67_000, "output_tokens": 1_000, "cache_write_tokens": 10_000, "cache_read_tokens": 54_270}
			for k, v := range want {
				if in.Usage[k] != v {
					t.Errorf("usage %s = %d, want %d (%s)", k, in.Usage[k], v, out)
				}
			}
			s := in.Spend
			if s.Model != tt.model || s.ContextTokens != 68_000 || s.Window != tt.window || s.Priced != tt.priced || s.Line != tt.line {
				t.Fatalf("spend = %+v, want model %s, 68000 context tokens, window %d, priced %v, line %q", s, tt.model, tt.window, tt.priced, tt.line)
			}
			if tt.priced && (s.CostUSD < 0.076970 || s.CostUSD > 0.076972 || s.ContextShare != 0.34 || s.CacheShare < 0.81 || s.CacheShare > 0.8101) {
				t.Fatalf("spend figures %+v, want cost 0.076971, context share 0.34, cache share 0.81", s)
			}
			if !tt.priced && strings.Contains(out, "cost_usd") {
				t.Fatalf("an unknown model got a cost: %s", out)
			}
		})
	}
}
