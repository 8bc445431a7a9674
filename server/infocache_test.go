package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/checkpoint/sqlite"
	"github.com/lite-agent/lite-agent/internal/fakemodel"
	"github.com/lite-agent/lite-agent/session"
)

// slowHead is a SQLite store whose Head answers 5 ms after it read, so that
// a check of the head begun before a turn ended is still running when
// the next info request comes.
type slowHead struct{ *sqlite.Store }

func (s slowHead) Head(ctx context.Context, id string) (session.Summary, error) {
	sum, err := s.Store.Head(ctx, id)
	time.Sleep(5 * time.Millisecond) // what it read may be old by now
	return sum, err
}

// TestConcurrentInfoSeesEveryAppend: while 16 clients ask worker A for a
// session's info without pause (so their checks of the store's head are
// shared), every turn worker B runs on the same SQLite file shows in the
// next info A answers, and no client ever sees the head go back.
func TestConcurrentInfoSeesEveryAppend(t *testing.T) {
	m := startModel(t, fakemodel.Reply{Text: "an answer"})
	db, work := filepath.Join(t.TempDir(), "s.db"), t.TempDir()
	a := startWorker(t, workerOptions{model: m, store: slowHead{openSQLite(t, db).(*sqlite.Store)}, work: work})
	b := startWorker(t, workerOptions{model: m, store: openSQLite(t, db), work: work})
	c := a.newSession("first")
	url := a.http.URL + "/api/sessions/" + c.Session

	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan string, 16)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var last int64
			for !stop.Load() {
				req, _ := http.NewRequest("GET", url, nil)
				req.Header.Set("Authorization", "Bearer "+a.srv.Token())
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					errs <- err.Error()
					return
				}
				var in struct{ Head int64 }
				err = json.NewDecoder(resp.Body).Decode(&in)
				resp.Body.Close()
				if err != nil || resp.StatusCode != 200 || in.Head < last {
					errs <- "info: status " + resp.Status + ", head went back or unreadable"
					return
				}
				last = in.Head
			}
		}()
	}
	for i := range 10 {
		var done created
		b.must(200, "POST", "/api/sessions/"+c.Session+"/prompts", map[string]any{"prompt": "turn on B", "wait": true}).decode(t, &done)
		if done.Result == nil {
			t.Fatalf("turn %d on B: %+v", i, done)
		}
		var in struct{ Head int64 }
		a.must(200, "GET", "/api/sessions/"+c.Session, nil).decode(t, &in)
		if in.Head < done.Result.Head {
			t.Fatalf("after B's turn %d ended at head %d, A's info says head %d", i, done.Result.Head, in.Head)
		}
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
}
