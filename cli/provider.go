package cli

import (
	"fmt"
	"os"
	"time"

	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/provider/anthropic"
	"github.com/lite-agent/lite-agent/provider/openai"
)

// Default models per provider.
const (
	defaultAnthropicModel = "claude-sonnet-4-6"
	defaultOpenAIModel    = "gpt-4.1"
)

// newProvider builds the model provider from flags and the environment.
func newProvider(c *config) (provider.Provider, string, error) {
	name := c.provider
	if name == "" {
		name = "anthropic"
		if os.Getenv("ANTHROPIC_API_KEY") == "" && os.Getenv("OPENAI_API_KEY") != "" {
			name = "openai"
		}
	}
	switch name {
	case "openai":
		model := c.model
		if model == "" {
			model = defaultOpenAIModel
		}
		base := c.baseURL
		if base == "" {
			base = os.Getenv("OPENAI_BASE_URL")
		}
		key := os.Getenv("OPENAI_API_KEY")
		if key == "" && base == "" {
			return nil, "", missingKey("OPENAI_API_KEY", "openai")
		}
		p, err := openai.New(&openai.Options{APIKey: key, BaseURL: base, IdleTimeout: idleTimeout(c), NoStream: c.noStream})
		return p, model, err
	default:
		if c.noStream {
			return nil, "", usagef("--no-stream (no_stream in a config file) is for the openai provider; the anthropic provider always streams: drop it, or add --provider openai")
		}
		model := c.model
		if model == "" {
			model = defaultAnthropicModel
		}
		base := c.baseURL
		if base == "" {
			base = os.Getenv("ANTHROPIC_BASE_URL")
		}
		key := os.Getenv("ANTHROPIC_API_KEY")
		if key == "" {
			if base == "" {
				return nil, "", missingKey("ANTHROPIC_API_KEY", "anthropic")
			}
			key = "none" // a local server (such as the fake model) may not check it
		}
		p, err := anthropic.New(&anthropic.Options{APIKey: key, BaseURL: base, IdleTimeout: idleTimeout(c)})
		return p, model, err
	}
}

func missingKey(env, name string) error {
	return fmt.Errorf("no API key for the %s provider: set %s (or --base-url for a local server); to try lite-agent without a key or network, run: lite-agent --demo", name, env)
}

// idleTimeout is --idle-timeout as the providers take it: 0 (never) is
// negative there, where 0 means the default.
func idleTimeout(c *config) time.Duration {
	if c.idleTimeout == 0 {
		return -1
	}
	return c.idleTimeout
}
