package server_test

import (
	"bufio"
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/server"
	"github.com/lite-agent/lite-agent/session"
)

// noWatch hides a store's Watcher (and every other optional ability), so
// a stream over it polls, as it does on stores without one.
type noWatch struct{ checkpoint.Checkpointer }

// BenchmarkStreamFromAnotherWorker measures, on PostgreSQL, the time from
// an append by one process (a second Store on the same database, as
// another worker's turn makes it) to that event's arrival on a worker's
// stream (hear-ms, the mean; hear-ms-max the worst): "notify" with the
// store's LISTEN/NOTIFY, "poll" with the default 250 ms polling it falls
// back to. Each iteration appends one event and reads the stream up to it.
func BenchmarkStreamFromAnotherWorker(b *testing.B) {
	for _, mode := range []string{"notify", "poll"} {
		b.Run(mode, func(b *testing.B) {
			loc := postgresURL(b)
			st := openPostgres(b, loc)
			writer := openPostgres(b, loc)
			var store checkpoint.Checkpointer = st
			if mode == "poll" {
				store = noWatch{st}
			}
			w := startWorker(b, workerOptions{store: store, noModel: true, server: &server.Options{}})
			id := "bench-stream"
			start := session.MustNew(session.TypeSessionStarted, session.SessionStarted{ID: id, Namespace: "ns", Workdir: w.work})
			head, err := writer.Append(context.Background(), id, 0, []session.Event{start})
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "GET", w.http.URL+"/api/sessions/"+id+"/stream?after="+strconv.FormatInt(head, 10), nil)
			req.Header.Set("Authorization", "Bearer "+w.srv.Token())
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			// The stream's first comment says it is live.
			for sc.Scan() && !strings.HasPrefix(sc.Text(), ": lite-agent session") {
			}
			time.Sleep(100 * time.Millisecond) // the feed's watch is in place
			var total, worst time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				head, err = writer.Append(context.Background(), id, head, []session.Event{session.MustNew(session.TypeUserPrompt, session.UserPrompt{Text: "p" + strconv.Itoa(i)})})
				if err != nil {
					b.Fatal(err)
				}
				want := "id: " + strconv.FormatInt(head, 10)
				for sc.Scan() && sc.Text() != want {
				}
				if sc.Err() != nil {
					b.Fatal(sc.Err())
				}
				d := time.Since(t0)
				total += d
				worst = max(worst, d)
			}
			b.StopTimer()
			b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "hear-ms")
			b.ReportMetric(float64(worst.Microseconds())/1000, "hear-ms-max")
		})
	}
}
