package models

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/session"
)

func TestLookupAndCost(t *testing.T) {
	tb := Builtin()
	i, ok := tb.Lookup("claude-sonnet-4-6")
	if !ok || i.Window != 200_000 {
		t.Fatalf("claude-sonnet-4-6: %+v %v", i, ok)
	}
	if mini, _ := tb.Lookup("gpt-4.1-mini-2025"); mini.Input != 0.40 {
		t.Fatalf("the longest prefix wins: gpt-4.1-mini-2025 got %+v", mini)
	}
	if _, ok := tb.Lookup("qwen3"); ok {
		t.Fatal("an unknown model was found")
	}
	// 1M uncached input at $3, 1M cache writes at $3.75, 1M cache reads at
	// $0.30 and 1M output at $15.
	u := session.Usage{InputTokens: 3_000_000, CacheWriteTokens: 1_000_000, CacheReadTokens: 1_000_000, OutputTokens: 1_000_000}
	if c, ok := i.Cost(u); !ok || c < 22.05-1e-9 || c > 22.05+1e-9 {
		t.Fatalf("cost %v %v, want 22.05", c, ok)
	}
	if _, ok := (Info{Window: 1000}).Cost(u); ok {
		t.Fatal("a model without prices got a cost")
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "m.toml")
	os.WriteFile(good, []byte("[\"fake-30k\"]\nwindow = 30000\n\n[\"claude-sonnet-4*\"]\nwindow = 100\ninput = 1.0\n"), 0o644)
	over, err := Load(good)
	if err != nil {
		t.Fatal(err)
	}
	tb := Builtin().With(over)
	if i, _ := tb.Lookup("fake-30k"); i.Window != 30000 {
		t.Fatalf("fake-30k: %+v", i)
	}
	if i, _ := tb.Lookup("claude-sonnet-4-6"); i.Window != 100 || i.Input != 1 {
		t.Fatalf("override: %+v", i)
	}
	bad := filepath.Join(dir, "bad.toml")
	os.WriteFile(bad, []byte("[\"x\"]\nwindw = 3\n"), 0o644)
	if _, err := Load(bad); err == nil || !strings.Contains(err.Error(), "unknown key") {
		t.Fatalf("misspelt key: %v", err)
	}
}
