package liteagent_test

import (
	"testing"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/checkpoint/memory"
	"github.com/lite-agent/lite-agent/models"
	"github.com/lite-agent/lite-agent/session"
)

func TestSpend(t *testing.T) {
	a, err := liteagent.New(&liteagent.Options{Workdir: t.TempDir(), Checkpointer: memory.New(), Model: "claude-haiku-4-5",
		Models: models.Table{"local": {Window: 32_768}}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	total := session.Usage{InputTokens: 1_500_000, OutputTokens: 20_000, CacheReadTokens: 1_200_000, CacheWriteTokens: 100_000}
	last := session.Usage{InputTokens: 30_000, OutputTokens: 500}
	tests := []struct {
		model string
		line  string
	}{
		// 200k uncached ×$1 + 100k ×$1.25 + 1.2M ×$0.10 + 20k ×$5 = $0.545.
		{"", "ctx 15% of 200k · $0.5450 (cache 80%)"},
		{"local", "ctx 93% of 32.8k"},
		{"unknown-model", "1.5M tokens"},
	}
	for _, tt := range tests {
		if got := a.Spend(tt.model, total, last).String(); got != tt.line {
			t.Errorf("Spend(%q) = %q, want %q", tt.model, got, tt.line)
		}
	}
	if s := a.Spend("", session.Usage{}, session.Usage{}); s.String() != "ctx 0% of 200k · $0.0000" {
		t.Errorf("an unused session: %q", s)
	}
}
