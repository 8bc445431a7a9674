//go:build tools

package tools

import (
	_ "charm.land/bubbles/v2"
	_ "charm.land/bubbletea/v2"
	_ "charm.land/glamour/v2"
	_ "charm.land/lipgloss/v2"
	_ "github.com/anthropics/anthropic-sdk-go/v2"
	_ "github.com/gofrs/flock"
	_ "github.com/google/go-cmp/cmp"
	_ "github.com/jackc/pgx/v5"
	_ "github.com/klauspost/compress/zstd"
	_ "github.com/openai/openai-go/v3"
	_ "go.uber.org/goleak"
	_ "golang.org/x/sys/unix"
	_ "modernc.org/sqlite"
	_ "pgregory.net/rapid"
)
