package sqlite

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
)

// BenchmarkReadVerify10k reads one log of 10,000 1 KiB events, alternating
// rounds with the integrity checks on (each row's crc column read and
// compared with checkpoint.Checksum, seqs and head checked) and with only
// the seq and head checks (the path a read-only store takes over a
// schema-1 database, without the crc column). It reports the median time
// per event of each and the checksum's share of a read: alternating keeps
// the comparison fair on a shared machine. Each round also times
// checkpoint.Checksum alone over the events read (ns/event-crc), which
// splits the cost between computing the CRC and reading the crc column.
func BenchmarkReadVerify10k(b *testing.B) {
	s, err := Open(filepath.Join(b.TempDir(), "sessions.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := b.Context()
	text := strings.Repeat("lorem ipsum ", 100)[:1<<10]
	e := session.MustNew(session.TypeAssistantMessage, session.AssistantMessage{Blocks: []session.Block{{Type: session.BlockText, Text: text}}})
	head, err := s.Append(ctx, "bench", 0, []session.Event{session.MustNew(session.TypeSessionStarted, session.SessionStarted{ID: "bench", Namespace: "bench"})})
	if err != nil {
		b.Fatal(err)
	}
	const n = 10_000
	for head < n {
		if head, err = s.Append(ctx, "bench", head, slices.Repeat([]session.Event{e}, int(min(100, n-head)))); err != nil {
			b.Fatal(err)
		}
	}
	read := func(verify bool) time.Duration {
		s.noChecksums = !verify
		start := time.Now()
		got := 0
		for _, err := range s.Read(ctx, "bench", 1) {
			if err != nil {
				b.Fatal(err)
			}
			got++
		}
		if got != n {
			b.Fatalf("read %d events, want %d", got, n)
		}
		return time.Since(start)
	}
	var events []session.Event
	for e, err := range s.Read(ctx, "bench", 1) {
		if err != nil {
			b.Fatal(err)
		}
		events = append(events, e)
	}
	var sink uint32
	crc := func() time.Duration {
		start := time.Now()
		for _, e := range events {
			sink ^= checkpoint.Checksum(e)
		}
		return time.Since(start)
	}
	var on, off, crcs []time.Duration
	for b.Loop() {
		on = append(on, read(true))
		off = append(off, read(false))
		crcs = append(crcs, crc())
	}
	_ = sink
	s.noChecksums = false
	median := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2].Nanoseconds()) / n
	}
	mOn, mOff := median(on), median(off)
	b.ReportMetric(mOn, "ns/event-verified")
	b.ReportMetric(mOff, "ns/event-unverified")
	b.ReportMetric(median(crcs), "ns/event-crc")
	b.ReportMetric(100*(mOn-mOff)/mOff, "%-checksum-cost")
}
