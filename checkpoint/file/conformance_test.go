package file_test

import (
	"path/filepath"
	"testing"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/checkpointtest"
	"github.com/lite-agent/lite-agent/checkpoint/file"
)

// backend describes the file store with the given encoding to the suite.
func backend(encoding string) checkpointtest.Backend {
	return checkpointtest.Backend{
		Name: "file (" + encoding + ")",
		NewLocation: func(tb testing.TB) string {
			return filepath.Join(tb.TempDir(), "store")
		},
		Open: func(loc string) (checkpoint.Checkpointer, error) {
			return file.Open(loc, &file.Options{Encoding: encoding})
		},
		Persistent:    true,
		MaxEventBytes: file.DefaultMaxEventBytes,
	}
}

func TestMain(m *testing.M) { checkpointtest.Main(m, backend(file.EncodingJSON)) }

func TestConformance(t *testing.T) {
	for _, enc := range []string{file.EncodingJSON, file.EncodingZstd} {
		t.Run(enc, func(t *testing.T) { checkpointtest.Run(t, backend(enc)) })
	}
}

func TestCrashConformance(t *testing.T) {
	checkpointtest.RunCrash(t, backend(file.EncodingJSON), 50)
}

func BenchmarkFile(b *testing.B) {
	for _, enc := range []string{file.EncodingJSON, file.EncodingZstd} {
		b.Run(enc, func(b *testing.B) { checkpointtest.Bench(b, backend(enc)) })
	}
}
