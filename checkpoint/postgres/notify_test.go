package postgres_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/session"
)

// TestWatchSurvivesALostConnection: when the server ends the listening
// connection, Listening reports false (callers poll meanwhile), the
// watches are woken for what they may have missed, and the store listens
// again and hears the next append.
func TestWatchSurvivesALostConnection(t *testing.T) {
	loc := newSchema(t)
	s, writer := openStore(t, loc, nil), openStore(t, loc, nil)
	ch, stop := s.Watch("s1")
	defer stop()
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitFor("the store to listen", s.Listening)
	drain := func() {
		for {
			select {
			case <-ch:
			default:
				return
			}
		}
	}
	drain()
	app := "lite-agent listen " + strconv.Itoa(os.Getpid())
	if n := queryInt(t, loc, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, app); n < 1 {
		t.Fatalf("%d listening connections named %q", n, app)
	}
	// Every Store of this process that listens goes; only this test's
	// stores watch.
	execSQL(t, loc, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`, app)
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatal("the watch was not woken when the connection went")
	}
	waitFor("the store to listen again", s.Listening)
	drain()
	start := session.MustNew(session.TypeSessionStarted, session.SessionStarted{ID: "s1", Namespace: "ns", Workdir: "/w"})
	if _, err := writer.Append(context.Background(), "s1", 0, []session.Event{start}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatal("no word of an append after the store listened again")
	}
}
