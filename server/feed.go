package server

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
)

// Kinds of stream messages (the SSE event field).
const (
	kindEvent    = "event"    // a persisted event; its SSE id is its seq
	kindDelta    = "delta"    // a streaming piece of the model's answer (never persisted)
	kindApproval = "approval" // a tool call waits for approval
	kindQuestion = "question" // the model asks the user (ask_user)
	kindTurn     = "turn"     // a turn of this server started or ended
	kindReset    = "reset"    // the log was rewound (or deleted): reload it
	kindResync   = "resync"   // this client fell behind: what it missed follows from the log
)

// msg is one message of a session's stream, encoded once for every
// client.
type msg struct {
	kind string
	seq  int64 // events: the seq; reset: the new head
	data []byte
}

// feeds are the live feeds of the sessions clients follow.
type feeds struct {
	s  *Server
	mu sync.Mutex
	m  map[string]*feed
}

// feed fans one session's messages out to its stream clients. It exists
// while a client follows the session; while it does, a poller reads the
// store's head so turns of other processes reach the clients too.
type feed struct {
	id   string
	mu   sync.Mutex
	subs map[*sub]struct{}
	head int64 // the highest seq handed out (or the head after a reset)
	stop context.CancelFunc
}

// sub is one stream client's queue. A full queue never blocks the
// publisher: the client is cut from the feed (lagged closes) and resyncs
// from the log.
type sub struct {
	ch     chan msg
	lagged chan struct{}
	once   sync.Once
}

func (u *sub) lag() { u.once.Do(func() { close(u.lagged) }) }

// subscribe adds a client to session id's feed, creating it (and its
// poller) if needed. head is the store's head as the caller just read it.
func (fs *feeds) subscribe(id string, head int64) (*sub, func()) {
	u := &sub{ch: make(chan msg, fs.s.opts.SubscriberBuffer), lagged: make(chan struct{})}
	fs.mu.Lock()
	f, ok := fs.m[id]
	if !ok {
		ctx, stop := context.WithCancel(context.Background())
		f = &feed{id: id, subs: map[*sub]struct{}{}, head: head, stop: stop}
		fs.m[id] = f
		go fs.poll(ctx, f)
	}
	f.mu.Lock()
	f.subs[u] = struct{}{}
	f.mu.Unlock()
	fs.mu.Unlock()
	return u, func() { fs.unsubscribe(f, u) }
}

func (fs *feeds) unsubscribe(f *feed, u *sub) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	f.mu.Lock()
	delete(f.subs, u)
	empty := len(f.subs) == 0
	f.mu.Unlock()
	if empty && fs.m[f.id] == f {
		delete(fs.m, f.id)
		f.stop()
	}
}

func (fs *feeds) get(id string) *feed {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.m[id]
}

// publish hands m to every client of session id's feed, if it has one.
// Events already handed out (by seq) are dropped, so a local turn's events
// and the poller's copies of them reach each client once.
func (fs *feeds) publish(id string, m msg) {
	if f := fs.get(id); f != nil {
		f.publish(m)
	}
}

func (f *feed) publish(m msg) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch m.kind {
	case kindEvent:
		if m.seq <= f.head {
			return
		}
		f.head = m.seq
	case kindReset:
		f.head = m.seq
	}
	for u := range f.subs {
		select {
		case u.ch <- m:
		default:
			delete(f.subs, u)
			u.lag()
		}
	}
}

// poll follows the store's head for session f.id until ctx ends: events
// other processes appended are read and published; a head that went back
// (a rewind elsewhere) or a deleted log is published as a reset.
//
// On a store that is a checkpoint.Watcher the head is read when the store
// says the session changed, and on the ticks only while it cannot hear.
func (fs *feeds) poll(ctx context.Context, f *feed) {
	t := time.NewTicker(fs.s.opts.PollInterval)
	defer t.Stop()
	var changes <-chan struct{}
	watcher, _ := fs.s.store.(checkpoint.Watcher)
	if watcher != nil {
		ch, stop := watcher.Watch(f.id)
		defer stop()
		changes = ch
	}
	gone := false
	for first := watcher != nil; ; first = false {
		if !first { // a change between the subscriber's read and Watch is read at once
			select {
			case <-ctx.Done():
				return
			case <-changes:
			case <-t.C:
				if watcher != nil && watcher.Listening() {
					continue
				}
			}
		}
		sum, err := fs.s.store.Head(ctx, f.id)
		if errors.Is(err, checkpoint.ErrNotFound) {
			if !gone { // said once, not at every tick
				f.publish(resetMsg(0))
			}
			gone = true
			continue
		}
		gone = false
		if err != nil {
			continue // the next tick tries again
		}
		f.mu.Lock()
		head := f.head
		f.mu.Unlock()
		switch {
		case sum.Head < head:
			f.publish(resetMsg(sum.Head))
		case sum.Head > head:
			for e, err := range fs.s.store.Read(ctx, f.id, head+1) {
				if err != nil {
					break
				}
				f.publish(eventMsg(e))
			}
		}
	}
}

func eventMsg(e session.Event) msg {
	b, _ := json.Marshal(e)
	return msg{kind: kindEvent, seq: e.Seq, data: b}
}

func resetMsg(head int64) msg {
	b, _ := json.Marshal(map[string]int64{"head": head})
	return msg{kind: kindReset, seq: head, data: b}
}

// dataMsg encodes v as a message of kind.
func dataMsg(kind string, v any) msg {
	b, _ := json.Marshal(v)
	return msg{kind: kind, data: b}
}
