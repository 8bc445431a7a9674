package file_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/checkpoint/file"
	"github.com/lite-agent/lite-agent/session"
)

// BenchmarkRead10k reads a log of 10,000 1 KiB events without folding it:
// the store's own share of the suite's ReadRebuild10k.
func BenchmarkRead10k(b *testing.B) {
	for _, enc := range []string{file.EncodingJSON, file.EncodingZstd} {
		b.Run(enc, func(b *testing.B) {
			s := openStore(b, b.TempDir(), &file.Options{Encoding: enc})
			text := strings.Repeat("lorem ipsum ", 86)[:1024]
			head := appendOK(b, s, "r", 0, started("r", "bench"))
			for head < 10_000 {
				batch := make([]session.Event, 0, 100)
				for range min(100, 10_000-int(head)) {
					batch = append(batch, session.MustNew(session.TypeAssistantMessage, session.AssistantMessage{
						Blocks: []session.Block{{Type: session.BlockText, Text: text}},
					}))
				}
				head = appendOK(b, s, "r", head, batch...)
			}
			for b.Loop() {
				n := 0
				for _, err := range s.Read(b.Context(), "r", 1) {
					if err != nil {
						b.Fatal(err)
					}
					n++
				}
				if n != 10_000 {
					b.Fatal(fmt.Sprint("read ", n))
				}
			}
		})
	}
}

// BenchmarkAppendCPU measures one Append of one 1 KiB event on the
// directory in $FILE_BENCH_DIR (a tmpfs makes fsync free, leaving the
// store's own cost). It is skipped when the variable is unset.
func BenchmarkAppendCPU(b *testing.B) {
	dir := os.Getenv("FILE_BENCH_DIR")
	if dir == "" {
		b.Skip("set FILE_BENCH_DIR to a (tmpfs) directory")
	}
	root, err := os.MkdirTemp(dir, "bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(root) })
	s := openStore(b, root, nil)
	head := appendOK(b, s, "a", 0, started("a", "bench"))
	e := prompt(strings.Repeat("x", 1000))
	for b.Loop() {
		head = appendOK(b, s, "a", head, e)
	}
}

// BenchmarkAppendVsFloor interleaves the floor (a bare 1 KiB write and fsync
// to a file next to the store) with a durable Append of one 1 KiB event, so
// that both meet the same disk weather, and reports the medians and their
// ratio (the target is at most 1.2).
func BenchmarkAppendVsFloor(b *testing.B) {
	for _, enc := range []string{file.EncodingJSON, file.EncodingZstd} {
		b.Run(enc, func(b *testing.B) {
			dir := b.TempDir()
			s := openStore(b, filepath.Join(dir, "store"), &file.Options{Encoding: enc})
			floor, err := os.Create(filepath.Join(dir, "floor"))
			if err != nil {
				b.Fatal(err)
			}
			defer floor.Close()
			text := strings.Repeat("lorem ipsum ", 86)[:1024]
			buf := []byte(text)
			e := prompt(text)
			head := appendOK(b, s, "a", 0, started("a", "bench"))
			var floors, appends []time.Duration
			for b.Loop() {
				t0 := time.Now()
				if _, err := floor.Write(buf); err != nil {
					b.Fatal(err)
				}
				if err := floor.Sync(); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				head = appendOK(b, s, "a", head, e)
				appends = append(appends, time.Since(t1))
				floors = append(floors, t1.Sub(t0))
			}
			slices.Sort(floors)
			slices.Sort(appends)
			f50, a50 := floors[len(floors)/2], appends[len(appends)/2]
			b.ReportMetric(float64(f50.Nanoseconds()), "floor-p50-ns")
			b.ReportMetric(float64(a50.Nanoseconds()), "append-p50-ns")
			b.ReportMetric(float64(a50)/float64(f50), "p50-ratio")
		})
	}
}
