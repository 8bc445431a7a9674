package liteagent_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/memory"
	"github.com/lite-agent/lite-agent/checkpoint/sqlite"
	"github.com/lite-agent/lite-agent/internal/fakemodel"
)

// fillTree writes n small files in directories of 100 under dir.
func fillTree(b *testing.B, dir string, n int) {
	b.Helper()
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("d%03d", i/100), fmt.Sprintf("f%04d.txt", i))
		if i%100 == 0 {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.WriteFile(p, fmt.Appendf(nil, "file %d\n", i), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBashCall10k measures one bash call that changes 3 files in a
// 10,000-file workdir, as one model reply of a long turn: Tracked with the
// workspace manifests before and after it (blobs in a memory store),
// Untracked on a store without blobs, where the call is not bracketed. The
// difference is the added cost of tracking (target ≤ 20 ms).
func BenchmarkBashCall10k(b *testing.B) {
	for _, tc := range []struct {
		name  string
		store func() checkpoint.Checkpointer
	}{
		{"Tracked", func() checkpoint.Checkpointer { return memory.New() }},
		{"Untracked", func() checkpoint.Checkpointer { return struct{ checkpoint.Checkpointer }{memory.New()} }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			dir := b.TempDir()
			fillTree(b, dir, 10000)
			cmd := "echo $RANDOM > d000/f0000.txt; echo $RANDOM > d050/f5000.txt; echo $RANDOM > d099/f9999.txt"
			// A warm-up turn of one call (the session's first manifest reads
			// every file), then a turn of b.N measured ones.
			bash := fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{call("", "bash", map[string]string{"command": cmd})}}
			replies := []fakemodel.Reply{bash, {Text: "warm"}}
			replies = append(replies, repeat([]fakemodel.Reply{bash}, b.N)...)
			replies = append(replies, fakemodel.Reply{Text: "done"})
			srv, err := fakemodel.Start(&fakemodel.Script{Replies: replies})
			if err != nil {
				b.Fatal(err)
			}
			defer srv.Close()
			p, err := newProvider["anthropic"](srv)
			if err != nil {
				b.Fatal(err)
			}
			a, err := liteagent.New(&liteagent.Options{Provider: p, Model: "m", Workdir: dir, Checkpointer: tc.store(), MaxModelCalls: b.N + 10})
			if err != nil {
				b.Fatal(err)
			}
			defer a.Close()
			if _, err := a.Send(context.Background(), "change three files"); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			res, err := a.Send(context.Background(), "change three files, many times")
			if err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			if res.ModelCalls != b.N+1 {
				b.Fatalf("%d model calls, want %d", res.ModelCalls, b.N+1)
			}
		})
	}
}

// BenchmarkRestore1000ShellFiles measures a restore that puts back 1,000
// files one bash command changed (their prior content from blobs in a
// SQLite store): drift check, the undo fork, the writes and the truncation
// (target ≤ 300 ms).
func BenchmarkRestore1000ShellFiles(b *testing.B) {
	ctx := context.Background()
	var cpu time.Duration
	for range b.N {
		b.StopTimer()
		dir := b.TempDir()
		fillTree(b, dir, 1000)
		srv, err := fakemodel.Start(&fakemodel.Script{Replies: []fakemodel.Reply{
			{ToolCalls: []fakemodel.ToolCall{call("b1", "bash", map[string]string{"command": "for f in d*/*.txt; do echo changed >> $f; done"})}},
			{Text: "done"},
		}})
		if err != nil {
			b.Fatal(err)
		}
		p, err := newProvider["anthropic"](srv)
		if err != nil {
			b.Fatal(err)
		}
		store, err := sqlite.Open(filepath.Join(b.TempDir(), "s.db"), nil)
		if err != nil {
			b.Fatal(err)
		}
		a, err := liteagent.New(&liteagent.Options{Provider: p, Model: "m", Workdir: dir, Checkpointer: store})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := a.Send(ctx, "change every file"); err != nil {
			b.Fatal(err)
		}
		cps, err := a.ListCheckpoints(ctx, a.SessionID())
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		before := cpuTime(b)
		res, err := a.Restore(ctx, a.SessionID(), cps[0].Seq, nil)
		if err != nil {
			b.Fatal(err)
		}
		cpu += cpuTime(b) - before
		b.StopTimer()
		if len(res.Files) != 1000 {
			b.Fatalf("restored %d files, want 1,000", len(res.Files))
		}
		a.Close()
		store.Close()
		srv.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
}
