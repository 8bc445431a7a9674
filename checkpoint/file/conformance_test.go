package file_test

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/checkpointtest"
	"github.com/lite-agent/lite-agent/checkpoint/file"
	"github.com/lite-agent/lite-agent/session"
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
		Damage:        damage,
		StoreSummary: func(tb testing.TB, c checkpoint.Checkpointer, _, id string, s session.Summary) {
			if err := file.StoreSummary(c.(*file.Store), id, s); err != nil {
				tb.Fatal(err)
			}
		},
		Quarantined: func(tb testing.TB, c checkpoint.Checkpointer, _, id string, from int64) []session.Event {
			events, err := file.Quarantined(c.(*file.Store), id, from)
			if err != nil {
				tb.Fatal(err)
			}
			return events
		},
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

// frames returns the offset and size of each frame of the log at path, by
// the seq of its first event. The layout is the one doc.go documents.
func frames(tb testing.TB, path string) (b []byte, off, size map[int64]int64) {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	off, size = map[int64]int64{}, map[int64]int64{}
	for o := int64(16); o+32 <= int64(len(b)); {
		n := 32 + int64(binary.LittleEndian.Uint32(b[o+8:]))
		seq := int64(binary.LittleEndian.Uint64(b[o+16:]))
		off[seq], size[seq] = o, n
		o += n
	}
	return b, off, size
}

// damage changes the log file of session id under the store's root loc, as
// a bad disk or a careless copy could.
func damage(tb testing.TB, _ checkpoint.Checkpointer, loc, id string, d checkpointtest.Damage, seq int64) {
	tb.Helper()
	target, err := os.Readlink(filepath.Join(loc, "ids", id))
	if err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(loc, "ids", target)
	b, off, size := frames(tb, path)
	o, ok := off[seq]
	if !ok {
		tb.Fatalf("no frame starts with seq %d in %s", seq, path)
	}
	switch d {
	case checkpointtest.FlipByte:
		b[o+32+size[seq]/2-16] ^= 0x20
	case checkpointtest.DropEvent:
		b = append(b[:o:o], b[o+size[seq]:]...)
	case checkpointtest.CutLog:
		b = b[:o]
	default:
		tb.Fatalf("unknown damage %v", d)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		tb.Fatal(err)
	}
}
