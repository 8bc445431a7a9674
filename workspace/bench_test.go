package workspace_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/workspace"
)

// tree10k makes 10,000 small files in 100 directories and lists them.
func tree10k(b *testing.B) (string, []string) {
	b.Helper()
	dir := b.TempDir()
	var paths []string
	for d := range 100 {
		sub := filepath.Join(dir, fmt.Sprintf("pkg%03d", d))
		if err := os.Mkdir(sub, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range 100 {
			p := filepath.Join(sub, fmt.Sprintf("file%03d.go", f))
			if err := os.WriteFile(p, []byte(fmt.Sprintf("package pkg%03d // %d\n", d, f)), 0o644); err != nil {
				b.Fatal(err)
			}
			paths = append(paths, p)
		}
	}
	return dir, paths
}

// BenchmarkManifest10k compares, in one run, a warm manifest of a
// 10,000-file tree where nothing changed (target: ≤ 1.5× a bare lstat of
// every file) with that bare lstat, sequential and split over as many
// goroutines as the scan uses (the floor for a parallel scan's wall time),
// and with a cold manifest (everything read). WarmSequential is the warm
// manifest with one worker (the sequential walk). cpu-ms/op is the
// process's CPU time (user and system), which parallel goroutines add up.
func BenchmarkManifest10k(b *testing.B) {
	dir, paths := tree10k(b)
	r := openRoot(b, dir)
	workers := min(runtime.GOMAXPROCS(0), 8)
	lstat := func(b *testing.B, paths []string) {
		for _, p := range paths {
			if _, err := os.Lstat(p); err != nil {
				b.Error(err)
				return
			}
		}
	}
	b.Run("BareStat", func(b *testing.B) {
		cpu := cpuTime(b)
		for b.Loop() {
			lstat(b, paths)
		}
		reportCPU(b, cpu)
	})
	b.Run("BareStatParallel", func(b *testing.B) {
		cpu := cpuTime(b)
		for b.Loop() {
			var wg sync.WaitGroup
			for w := range workers {
				wg.Go(func() { lstat(b, paths[w*len(paths)/workers:(w+1)*len(paths)/workers]) })
			}
			wg.Wait()
		}
		reportCPU(b, cpu)
	})
	warm := func(workers int) func(b *testing.B) {
		return func(b *testing.B) {
			prev, err := workspace.Scan(b.Context(), r, nil, &workspace.Options{Now: later})
			if err != nil {
				b.Fatal(err)
			}
			cpu := cpuTime(b)
			for b.Loop() {
				if _, err := workspace.Scan(b.Context(), r, prev, &workspace.Options{Now: later, Workers: workers}); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, cpu)
		}
	}
	b.Run("Warm", warm(0))
	// WarmVsBare alternates a sequential bare lstat, a parallel one, a
	// warm scan and a sequential warm scan in each iteration, so the
	// ratios it reports are of the same moments of a loaded machine:
	// x-bare-cpu and x-bare-wall (warm ÷ sequential bare), x-parbare-wall
	// (warm ÷ parallel bare), seq-x-bare-* (the sequential walk's).
	b.Run("WarmVsBare", func(b *testing.B) {
		prev, err := workspace.Scan(b.Context(), r, nil, &workspace.Options{Now: later})
		if err != nil {
			b.Fatal(err)
		}
		var bareWall, parWall, warmWall, seqWall, bareCPU, warmCPU, seqCPU time.Duration
		for b.Loop() {
			t0, c0 := time.Now(), cpuTime(b)
			lstat(b, paths)
			t1, c1 := time.Now(), cpuTime(b)
			var wg sync.WaitGroup
			for w := range workers {
				wg.Go(func() { lstat(b, paths[w*len(paths)/workers:(w+1)*len(paths)/workers]) })
			}
			wg.Wait()
			t2, c2 := time.Now(), cpuTime(b)
			if _, err := workspace.Scan(b.Context(), r, prev, &workspace.Options{Now: later}); err != nil {
				b.Fatal(err)
			}
			t3, c3 := time.Now(), cpuTime(b)
			if _, err := workspace.Scan(b.Context(), r, prev, &workspace.Options{Now: later, Workers: 1}); err != nil {
				b.Fatal(err)
			}
			t4, c4 := time.Now(), cpuTime(b)
			bareWall, parWall, warmWall, seqWall = bareWall+t1.Sub(t0), parWall+t2.Sub(t1), warmWall+t3.Sub(t2), seqWall+t4.Sub(t3)
			bareCPU, warmCPU, seqCPU = bareCPU+c1-c0, warmCPU+c3-c2, seqCPU+c4-c3
		}
		b.ReportMetric(float64(warmCPU)/float64(bareCPU), "x-bare-cpu")
		b.ReportMetric(float64(warmWall)/float64(bareWall), "x-bare-wall")
		b.ReportMetric(float64(warmWall)/float64(parWall), "x-parbare-wall")
		b.ReportMetric(float64(seqCPU)/float64(bareCPU), "seq-x-bare-cpu")
		b.ReportMetric(float64(seqWall)/float64(bareWall), "seq-x-bare-wall")
	})
	b.Run("WarmSequential", warm(1))
	b.Run("Cold", func(b *testing.B) {
		cpu := cpuTime(b)
		for b.Loop() {
			if _, err := workspace.Scan(b.Context(), r, nil, nil); err != nil {
				b.Fatal(err)
			}
		}
		reportCPU(b, cpu)
	})
}

// reportCPU reports the CPU time used since cpu per iteration.
func reportCPU(b *testing.B, cpu time.Duration) {
	b.ReportMetric(float64((cpuTime(b)-cpu).Microseconds())/1000/float64(b.N), "cpu-ms/op")
}

// BenchmarkUpdate10k measures what a shell command's manifest costs with
// the watcher: three files of a 10,000-file tree written, then Changed
// (reading the kernel's queue to its end) and Update, against a warm Scan
// of the same tree in the same run.
func BenchmarkUpdate10k(b *testing.B) {
	dir, paths := tree10k(b)
	r := openRoot(b, dir)
	w, err := workspace.NewWatcher(dir, nil)
	if err != nil {
		b.Skip(err)
	}
	defer w.Close()
	prev, err := workspace.Scan(b.Context(), r, nil, &workspace.Options{Dir: w.Watch})
	if err != nil {
		b.Fatal(err)
	}
	touched := []string{paths[0], paths[5000], paths[9999]}
	b.Run("Watched", func(b *testing.B) {
		i := 0
		var inChanged, inUpdate time.Duration
		for b.Loop() {
			for _, p := range touched {
				i++
				if err := os.WriteFile(p, fmt.Appendf(nil, "%d\n", i), 0o644); err != nil {
					b.Fatal(err)
				}
			}
			t0 := time.Now()
			changed, err := w.Changed(b.Context())
			if err != nil {
				b.Fatal(err)
			}
			t1 := time.Now()
			if prev, err = workspace.Update(b.Context(), r, prev, changed, &workspace.Options{Dir: w.Watch}); err != nil {
				b.Fatal(err)
			}
			inChanged, inUpdate = inChanged+t1.Sub(t0), inUpdate+time.Since(t1)
		}
		b.ReportMetric(float64(inChanged.Microseconds())/float64(b.N), "changed-µs/op")
		b.ReportMetric(float64(inUpdate.Microseconds())/float64(b.N), "update-µs/op")
	})
	b.Run("Scanned", func(b *testing.B) {
		for b.Loop() {
			if _, err := workspace.Scan(b.Context(), r, prev, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}
