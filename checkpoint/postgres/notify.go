package postgres

import (
	"context"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/lite-agent/lite-agent/checkpoint"
)

// notifyChannel is the channel every change to a session is notified on,
// with the session's id as the payload.
const notifyChannel = "lite_agent_sessions"

// queueNotify adds a notification of changes to the sessions ids to b, so
// it is sent when b's transaction commits (and not at all if it does not).
func queueNotify(b *pgx.Batch, ids ...string) {
	b.Queue(`SELECT pg_notify('`+notifyChannel+`', id) FROM unnest($1::text[]) AS id`, ids)
}

// notifyTx notifies changes to session id from within tx.
func notifyTx(ctx context.Context, tx pgx.Tx, id string) error {
	_, err := tx.Exec(ctx, `SELECT pg_notify('`+notifyChannel+`', $1)`, id)
	return err
}

var _ checkpoint.Watcher = (*Store)(nil)

// listener holds one connection that LISTENs on notifyChannel for the
// Store's watches, and hands each notification to the watches of its
// session. It runs from the first Watch until Close, and connects again,
// with backoff, when its connection breaks; every watch is woken when it
// does, for what it may have missed.
type listener struct {
	mu      sync.Mutex
	watches map[string]map[*watch]struct{}
	cancel  context.CancelFunc // nil until it starts
	done    chan struct{}
	up      atomic.Bool
}

type watch struct{ ch chan struct{} }

func (w *watch) wake() {
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

// Watch implements checkpoint.Watcher: the Store's first Watch starts its
// listening connection.
func (s *Store) Watch(id string) (<-chan struct{}, func()) {
	l := &s.listen
	w := &watch{ch: make(chan struct{}, 1)}
	l.mu.Lock()
	if l.watches == nil {
		l.watches = map[string]map[*watch]struct{}{}
	}
	if l.watches[id] == nil {
		l.watches[id] = map[*watch]struct{}{}
	}
	l.watches[id][w] = struct{}{}
	if l.cancel == nil {
		s.mu.RLock()
		closed := s.closed
		s.mu.RUnlock()
		if !closed {
			ctx, cancel := context.WithCancel(context.Background())
			l.cancel, l.done = cancel, make(chan struct{})
			go s.listenLoop(ctx, l)
		}
	}
	l.mu.Unlock()
	var once sync.Once
	return w.ch, func() {
		once.Do(func() {
			l.mu.Lock()
			delete(l.watches[id], w)
			if len(l.watches[id]) == 0 {
				delete(l.watches, id)
			}
			l.mu.Unlock()
		})
	}
}

// Listening implements checkpoint.Watcher.
func (s *Store) Listening() bool { return s.listen.up.Load() }

// stopListening ends the listening connection, if it runs (Close).
func (s *Store) stopListening() {
	l := &s.listen
	l.mu.Lock()
	cancel, done := l.cancel, l.done
	l.cancel = func() {} // no new start after Close
	l.mu.Unlock()
	if cancel != nil && done != nil {
		cancel()
		<-done
	}
}

// listenLoop keeps a connection listening until ctx ends.
func (s *Store) listenLoop(ctx context.Context, l *listener) {
	defer close(l.done)
	backoff := 50 * time.Millisecond
	for ctx.Err() == nil {
		s.listenOnce(ctx, l) // its error is the broken connection: connect again
		l.up.Store(false)
		l.wakeAll() // what happened while it was down is for the watchers to read
		if ctx.Err() != nil {
			return
		}
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

// listenOnce connects, listens and hands notifications out until the
// connection breaks or ctx ends.
func (s *Store) listenOnce(ctx context.Context, l *listener) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	cfg := s.pool.Config().ConnConfig.Copy()
	// Named so that pg_stat_activity tells it from the pool's.
	cfg.RuntimeParams["application_name"] = "lite-agent listen " + strconv.Itoa(os.Getpid())
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, `LISTEN `+notifyChannel); err != nil {
		return err
	}
	l.up.Store(true)
	l.wakeAll() // changes between the watches' start and now
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		l.wakeSession(n.Payload)
	}
}

func (l *listener) wakeSession(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for w := range l.watches[id] {
		w.wake()
	}
}

func (l *listener) wakeAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ws := range l.watches {
		for w := range ws {
			w.wake()
		}
	}
}
