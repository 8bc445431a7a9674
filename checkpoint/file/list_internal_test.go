package file

import (
	"fmt"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
)

// BenchmarkListMemory10k lists 10,000 summaries already in memory: the CPU
// share of List10k, without the disk.
func BenchmarkListMemory10k(b *testing.B) {
	s := newStore(b, b.TempDir())
	mustAppend(b, s, "s0", 0, startedEv("s0", "bench"))
	n := s.ns(folderFor("bench"))
	if err := n.ensure(b.Context()); err != nil {
		b.Fatal(err)
	}
	base := time.Now()
	n.mu.Lock()
	for i := range 10_000 {
		id := fmt.Sprintf("s%05d", i)
		n.entries[id] = &entry{id: id, has: true, st: logState{sum: session.Summary{
			ID: id, Namespace: "bench", Workdir: "/work/bench", Model: "m", Title: "prompt of session",
			Head: 4, Messages: 2, Status: session.StatusCompleted, Created: base, Updated: base.Add(time.Duration(i) * time.Millisecond)}}}
	}
	n.dirty = true
	n.mu.Unlock()
	for b.Loop() {
		list, err := n.list(b.Context(), "bench", checkpoint.ListOptions{})
		if err != nil || len(list) != 10_001 {
			b.Fatal(len(list), err)
		}
	}
}
