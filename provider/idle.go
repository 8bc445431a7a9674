package provider

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// DefaultIdleTimeout is how long a model stream may send nothing before it
// is given up as stalled.
const DefaultIdleTimeout = 120 * time.Second

// StallError is a model stream that sent nothing for Idle. Before anything
// was streamed it is retried like a cut stream (it wraps a
// *TransientError then); after, the caller has part of an answer and gets
// this error.
type StallError struct {
	Idle     time.Duration
	Streamed bool // part of the answer had been streamed
}

func (e *StallError) Error() string {
	if e.Streamed {
		return fmt.Sprintf("the model stream stalled: nothing arrived for %s after part of the answer was streamed; the partial answer was dropped (send the prompt again, or raise the idle timeout if the model is just slow)", e.Idle)
	}
	return fmt.Sprintf("the model stream stalled: nothing arrived for %s", e.Idle)
}

var errIdle = errors.New("model stream idle")

// idleTimeout is the policy's idle limit; 0 when there is none.
func (p RetryPolicy) idleTimeout() time.Duration {
	switch {
	case p.IdleTimeout < 0:
		return 0
	case p.IdleTimeout == 0:
		return DefaultIdleTimeout
	}
	return p.IdleTimeout
}

// watchdog cancels an attempt's context when nothing arrived for limit:
// touch on every delta (and on any other sign of life) rearms it.
type watchdog struct {
	mu     sync.Mutex
	timer  *time.Timer
	limit  time.Duration
	cancel context.CancelCauseFunc
}

// watch returns ctx for one attempt, cancelled with errIdle after limit of
// silence (never if limit is 0), and the watchdog; stop releases it.
func watch(ctx context.Context, limit time.Duration) (context.Context, *watchdog, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	w := &watchdog{limit: limit, cancel: cancel}
	if limit > 0 {
		w.timer = time.AfterFunc(limit, func() { cancel(errIdle) })
	}
	return ctx, w, func() {
		if w.timer != nil {
			w.timer.Stop()
		}
		cancel(context.Canceled)
	}
}

func (w *watchdog) touch() {
	if w.timer == nil {
		return
	}
	w.mu.Lock()
	w.timer.Reset(w.limit)
	w.mu.Unlock()
}

// stalled turns an attempt's failure into a *StallError when the watchdog
// ended it: transient (retried) if nothing was streamed yet.
func stalled(actx context.Context, limit time.Duration, streamed bool, err error) error {
	if err == nil || !errors.Is(context.Cause(actx), errIdle) {
		return err
	}
	se := &StallError{Idle: limit, Streamed: streamed}
	if streamed {
		return se
	}
	return &TransientError{Err: se}
}
