package tui

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/provider"
)

// answerMD is a typical answer: a paragraph, a list and a code block.
const answerMD = "I looked at `main.go`: the greeting is built in **one** place.\n\n" +
	"- the flag is parsed in `parseFlags`\n- the output goes through `fmt.Fprintln`\n\n" +
	"```go\nfmt.Fprintln(w, greeting(name))\n```\n"

// transcriptOf returns updates for a session of n messages: prompts,
// answers, and a tool call in every fifth turn.
func transcriptOf(n int) []liteagent.Update {
	l := &logBuilder{session: sid}
	us := []liteagent.Update{l.start()}
	for i := 0; len(us) < n; i++ {
		us = append(us, l.prompt(fmt.Sprintf("Prompt number %d: change the greeting and explain", i)))
		if i%5 == 4 {
			us = append(us, l.message(text("Reading it."), toolUse(fmt.Sprintf("c%d", i), "read", `{"path":"main.go"}`)),
				l.started(fmt.Sprintf("c%d", i), "read", `{"path":"main.go"}`),
				l.finished(fmt.Sprintf("c%d", i), "read", strings.Repeat("package main\n", 30), false, false))
		}
		us = append(us, l.message(text(answerMD)), l.completed())
	}
	return us
}

// A key typed while a long answer streams in: Update and View per key
// (the target is 16 ms, one frame at 60 Hz). The answer's Markdown is
// rendered off the UI goroutine, so it does not count here.
func BenchmarkKeystrokeWhileStreaming(b *testing.B) {
	m := newViewModel(b, 100, 40)
	feed(m, transcriptOf(500)...)
	l := &logBuilder{session: sid, seq: m.tr.head}
	feed(m, l.prompt("Write a long explanation"))
	m.busy, m.started = true, time.Now()
	long := strings.Repeat(answerMD, 100) // ~20 KB
	chunks := strings.SplitAfter(long, " ")
	feed(m, l.delta(strings.Join(chunks[:len(chunks)/2], "")))
	// The renderer's last result, as a render command would deliver it.
	e := m.tr.live
	r, err := newGlamour(&m.theme, m.width)
	if err != nil {
		b.Fatal(err)
	}
	m.Update(mdMsg{e: e, lines: renderMarkdown(r, e.text, m.width), width: m.width, version: e.version})
	e.md.started = time.Now().Add(time.Hour) // keep the throttle closed: renders run elsewhere
	key := runeKey('x')
	next := len(chunks) / 2
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		if next < len(chunks) {
			feed(m, liteagent.Update{Session: sid, Delta: &provider.Delta{Kind: provider.DeltaText, Text: chunks[next]}})
			next++
		}
		if i%200 == 199 {
			m.input.Reset()
		}
		b.StartTimer()
		m.Update(key)
		_ = m.View()
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/key")
}

// Drawing a frame after a scroll step, at the end and in the middle of a
// transcript, with 100 and with 10,000 messages: the time and the bytes
// allocated per frame must not grow with the transcript.
func BenchmarkFrame(b *testing.B) {
	for _, n := range []int{100, 10_000} {
		m := newViewModel(b, 100, 40)
		feed(m, transcriptOf(n)...)
		for _, where := range []string{"end", "middle"} {
			b.Run(fmt.Sprintf("messages=%d/%s", n, where), func(b *testing.B) {
				m.view = anchor{follow: true}
				if where == "middle" {
					m.view = anchor{idx: len(m.tr.entries) / 2}
				}
				_ = m.View()
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					// Up and down again: the same window, drawn afresh.
					m.Update(keyPgUp)
					_ = m.View()
					m.Update(keyPgDown)
					_ = m.View()
				}
			})
		}
	}
}

// The memory rendering keeps after scrolling through a whole transcript,
// with 10,000 messages against 100 (the target is at most 2×), and the
// heap of the whole model for comparison (that holds the transcript's
// text, which does grow with it).
func BenchmarkTranscriptMemory(b *testing.B) {
	measure := func(n int) (render, total uint64) {
		base := heap()
		m := newViewModel(b, 100, 40)
		feed(m, transcriptOf(n)...)
		loaded := heap()
		// From the top to the end, a page at a time.
		m.view = anchor{idx: 0}
		for !m.view.follow {
			_ = m.View()
			m.Update(keyPgDown)
		}
		_ = m.View()
		done := heap()
		runtime.KeepAlive(m)
		return sub(done, loaded), sub(done, base)
	}
	var r100, r10k, t100, t10k uint64
	for i := 0; i < b.N; i++ {
		r100, t100 = measure(100)
		r10k, t10k = measure(10_000)
	}
	b.ReportMetric(float64(r100)/1024, "render-KiB@100")
	b.ReportMetric(float64(r10k)/1024, "render-KiB@10000")
	b.ReportMetric(float64(r10k)/float64(max(r100, 1)), "render-ratio")
	b.ReportMetric(float64(t10k)/float64(max(t100, 1)), "heap-ratio")
}

func heap() uint64 {
	runtime.GC()
	runtime.GC()
	var s runtime.MemStats
	runtime.ReadMemStats(&s)
	return s.HeapAlloc
}

func sub(a, b uint64) uint64 {
	if a < b {
		return 0
	}
	return a - b
}
