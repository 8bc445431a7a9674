package server_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/internal/fakemodel"
)

// BenchmarkFirstStreamByte measures, per turn, the time from the prompt
// request to the first delta on the session's stream (sse-ttfb-ms),
// beside the fake model's own time to its first streamed byte for a
// request sent to it directly (model-ttfb-ms, and to its first delta
// event, model-first-delta-ms), the body of the server's previous turn
// (the fake model reads and checks the whole body before it answers, so
// the model's own time grows with the transcript as the turn's does,
// one more turn per iteration); overhead-ms is sse-ttfb-ms less
// model-ttfb-ms. It includes the SDK's turn before the model call (the
// durable append of the prompt in SQLite: prompt-stored-ms is the time to
// the 202), so sdk-first-delta-ms measures the same turn through
// Session.Send alone and http-over-sdk-ms what HTTP and SSE add to it.
//
// It runs against a model that answers at once (model-0ms: the fake
// model's only delay is its reading the request, on this machine's CPU)
// and one that takes 20 ms to its first byte (model-20ms; a real model
// takes hundreds), where the turn's own work before the model call can
// overlap the model's.
func BenchmarkFirstStreamByte(b *testing.B) {
	for _, delay := range []int{0, 20} {
		b.Run("model-"+strconv.Itoa(delay)+"ms", func(b *testing.B) { benchFirstStreamByte(b, delay) })
	}
}

func benchFirstStreamByte(b *testing.B, delayMS int) {
	m, err := fakemodel.Start(&fakemodel.Script{Replies: []fakemodel.Reply{{Text: "a short answer", DelayMS: delayMS}}, WhenDone: fakemodel.WhenDoneRepeatLast})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	w := startWorker(b, workerOptions{model: m})
	c := w.newSession("warm up")
	client := &http.Client{}
	direct := `{"model":"claude-test","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}`

	sdkSess, err := w.agent.NewSession(context.Background(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer sdkSess.Close()
	var sse, sdk, model, modelDelta, accepted time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// The model's own first byte.
		t0 := time.Now()
		req, _ := http.NewRequest("POST", m.URL()+"/v1/messages", strings.NewReader(direct))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("x-api-key", "test")
		req.Header.Set("anthropic-version", "2023-06-01")
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		one := make([]byte, 1)
		if _, err := io.ReadFull(resp.Body, one); err != nil {
			b.Fatal(err)
		}
		model += time.Since(t0)
		br := bufio.NewReader(resp.Body)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				b.Fatal(err)
			}
			if strings.HasPrefix(line, "event: content_block_delta") {
				modelDelta += time.Since(t0)
				break
			}
		}
		io.Copy(io.Discard, br)
		resp.Body.Close()

		// The SDK alone: Send in a session of the same agent, to its
		// first delta.
		t2 := time.Now()
		var first time.Duration
		if _, err := sdkSess.Send(context.Background(), "again", &liteagent.SendOptions{OnUpdate: func(u liteagent.Update) {
			if u.Delta != nil && first == 0 {
				first = time.Since(t2)
			}
		}}); err != nil {
			b.Fatal(err)
		}
		sdk += first

		// Through the server: the stream is open before the prompt.
		var info struct{ Head int64 }
		w.must(200, "GET", "/api/sessions/"+c.Session, nil).decode(b, &info)
		ctx, cancel := context.WithCancel(context.Background())
		sreq, _ := http.NewRequestWithContext(ctx, "GET", w.http.URL+"/api/sessions/"+c.Session+"/stream?after="+strconv.FormatInt(info.Head, 10), nil)
		sreq.Header.Set("Authorization", "Bearer "+w.srv.Token())
		sresp, err := client.Do(sreq)
		if err != nil {
			b.Fatal(err)
		}
		lines := bufio.NewReader(sresp.Body)
		if _, err := lines.ReadString('\n'); err != nil { // the stream's opening comment
			b.Fatal(err)
		}
		t1 := time.Now()
		preq, _ := http.NewRequest("POST", w.http.URL+"/api/sessions/"+c.Session+"/prompts", bytes.NewReader([]byte(`{"prompt":"again"}`)))
		preq.Header.Set("Authorization", "Bearer "+w.srv.Token())
		presp, err := client.Do(preq)
		if err != nil || presp.StatusCode != 202 {
			b.Fatalf("prompt: %v %v", err, presp)
		}
		presp.Body.Close()
		accepted += time.Since(t1)
		for {
			line, err := lines.ReadString('\n')
			if err != nil {
				b.Fatal(err)
			}
			if line == "event: delta\n" {
				sse += time.Since(t1)
				break
			}
		}
		for {
			line, err := lines.ReadString('\n')
			if err != nil {
				b.Fatal(err)
			}
			if strings.HasPrefix(line, "data: ") && strings.Contains(line, `"state":"ended"`) {
				break
			}
		}
		cancel()
		sresp.Body.Close()
		// The next iteration's model's own first byte is measured with
		// the body of this turn's request, the size the next turn's is.
		if r := m.Requests(); len(r) > 0 {
			direct = string(r[len(r)-1].Body)
		}
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(model.Microseconds())/1000/n, "model-ttfb-ms")
	b.ReportMetric(float64(modelDelta.Microseconds())/1000/n, "model-first-delta-ms")
	b.ReportMetric(float64(sse.Microseconds())/1000/n, "sse-ttfb-ms")
	b.ReportMetric(float64((sse-model).Microseconds())/1000/n, "overhead-ms")
	b.ReportMetric(float64(sdk.Microseconds())/1000/n, "sdk-first-delta-ms")
	b.ReportMetric(float64((sse-sdk).Microseconds())/1000/n, "http-over-sdk-ms")
	b.ReportMetric(float64(accepted.Microseconds())/1000/n, "prompt-stored-ms")
}

// BenchmarkSessionInfo50Clients measures GET /api/sessions/{id} with 50
// concurrent keep-alive clients against one worker (SQLite store, a
// session of one tool-free turn): req/s, and the CPU per request.
func BenchmarkSessionInfo50Clients(b *testing.B) {
	m, err := fakemodel.Start(&fakemodel.Script{Replies: []fakemodel.Reply{{Text: "an answer"}}})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	w := startWorker(b, workerOptions{model: m})
	c := w.newSession("one turn")
	url := w.http.URL + "/api/sessions/" + c.Session
	tr := &http.Transport{MaxIdleConnsPerHost: 64, MaxConnsPerHost: 64}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	var failed atomic.Int64
	b.SetParallelism(max(1, 50/runtime.GOMAXPROCS(0))) // 50 goroutines in all
	b.ResetTimer()
	start, cpu0 := time.Now(), cpuTime()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, _ := http.NewRequest("GET", url, nil)
			req.Header.Set("Authorization", "Bearer "+w.srv.Token())
			resp, err := client.Do(req)
			if err != nil {
				failed.Add(1)
				continue
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				failed.Add(1)
			}
		}
	})
	elapsed, cpu := time.Since(start), cpuTime()-cpu0
	b.StopTimer()
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d requests failed", n)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
	// The process's CPU per request, the client's included: on a loaded
	// machine req/s says how much CPU the benchmark got; this does not.
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/req")
}

// cpuTime is the CPU time this process has used (user and system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
