package provider

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Retry defaults.
const (
	DefaultMaxRetries    = 4
	DefaultBaseDelay     = 500 * time.Millisecond
	DefaultMaxDelay      = 30 * time.Second
	DefaultMaxRetryAfter = 60 * time.Second
)

// RetryPolicy is how providers retry transient failures: HTTP 408, 429
// and 5xx (529 "overloaded" included), and error events of those kinds
// that arrive before anything was streamed. Waits grow exponentially from
// BaseDelay, with jitter, unless the server says how long to wait
// (Retry-After, retry-after-ms), which is honoured. A request is never
// retried once a delta has been passed on: the caller has seen part of
// an answer, and only it can decide what to do.
//
// The zero value is the default policy. Providers turn their SDK's own
// retries off, so this is the one policy.
type RetryPolicy struct {
	// MaxRetries is how many times a request is sent again after the
	// first attempt: 0 means DefaultMaxRetries, negative means never.
	MaxRetries int
	// BaseDelay is the first wait; each later one doubles. 0 means
	// DefaultBaseDelay.
	BaseDelay time.Duration
	// MaxDelay caps one wait computed by backoff. 0 means DefaultMaxDelay.
	MaxDelay time.Duration
	// MaxRetryAfter is the longest wait a server may ask for: a longer
	// Retry-After ends the retries at once, with the error. 0 means
	// DefaultMaxRetryAfter.
	MaxRetryAfter time.Duration
	// IdleTimeout gives a stream up as stalled when nothing arrives for
	// this long (see StallError): 0 means DefaultIdleTimeout, negative
	// means never.
	IdleTimeout time.Duration

	// sleep replaces the wait in tests.
	sleep func(ctx context.Context, d time.Duration) error
}

// TransientError marks a failure that may pass if the same request is
// sent again.
type TransientError struct {
	Err error
	// RetryAfter is how long the server asked to wait; 0 if it did not say.
	RetryAfter time.Duration
}

func (e *TransientError) Error() string { return e.Err.Error() }

// Unwrap returns the failure.
func (e *TransientError) Unwrap() error { return e.Err }

// RetryableStatus reports whether a response with this HTTP status is
// worth sending again: 408, 429 and 5xx (529 "overloaded" included).
func RetryableStatus(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status >= 500
}

// ShouldRetry says whether a failed response is worth sending again: an
// explicit x-should-retry header ("true" or "false") decides, else the
// status does.
func ShouldRetry(status int, h http.Header) bool {
	switch strings.ToLower(h.Get("x-should-retry")) {
	case "true":
		return true
	case "false":
		return false
	}
	return RetryableStatus(status)
}

// RetryAfter reads how long a response asks the client to wait before
// trying again: the retry-after-ms header (milliseconds), or Retry-After
// in seconds or as an HTTP date (relative to now). It returns 0 when
// there is no usable header.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if v := strings.TrimSpace(h.Get("retry-after-ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("retry-after"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s > 0 {
			return time.Duration(s * float64(time.Second))
		}
		return 0
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// Do calls attempt until it succeeds, fails for good, or the retries run
// out. attempt reports whether it passed anything on to the caller
// (streamed); a failure after that is never retried. Only failures
// wrapping a *TransientError are retried. When ctx is done, Do returns
// ctx's error at once, waits included. The error returned is attempt's
// last one, noting how many attempts were made when there were several.
func (p RetryPolicy) Do(ctx context.Context, attempt func(ctx context.Context) (streamed bool, err error)) error {
	maxRetries := p.MaxRetries
	if maxRetries == 0 {
		maxRetries = DefaultMaxRetries
	}
	for n := 0; ; n++ {
		streamed, err := attempt(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var te *TransientError
		if streamed || !errors.As(err, &te) {
			return err
		}
		if n >= maxRetries {
			if n == 0 {
				return err
			}
			return fmt.Errorf("%w (gave up after %d attempts)", err, n+1)
		}
		if limit := p.maxRetryAfter(); te.RetryAfter > limit {
			return fmt.Errorf("%w (the server asks to wait %s, more than %s: try again later)", err, te.RetryAfter.Round(time.Second), limit)
		}
		sleep := p.sleep
		if sleep == nil {
			sleep = sleepCtx
		}
		if err := sleep(ctx, p.Delay(n, te.RetryAfter)); err != nil {
			return err
		}
	}
}

// Delay is the wait before retry number n+1 (n counts from 0): what the
// server asked for if it did (retryAfter > 0), else BaseDelay·2ⁿ capped at
// MaxDelay, of which a random half is jitter, so clients that failed
// together do not all come back together.
func (p RetryPolicy) Delay(n int, retryAfter time.Duration) time.Duration {
	if retryAfter > 0 {
		return retryAfter
	}
	base, maxDelay := p.BaseDelay, p.MaxDelay
	if base <= 0 {
		base = DefaultBaseDelay
	}
	if maxDelay <= 0 {
		maxDelay = DefaultMaxDelay
	}
	d := base
	for i := 0; i < n && d < maxDelay; i++ {
		d *= 2
	}
	d = min(d, maxDelay)
	half := d / 2
	return d - half + rand.N(half+1)
}

func (p RetryPolicy) maxRetryAfter() time.Duration {
	if p.MaxRetryAfter > 0 {
		return p.MaxRetryAfter
	}
	return DefaultMaxRetryAfter
}

// sleepCtx waits d or until ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Stream runs a streaming model call under the policy: attempt sends one
// request and passes each delta to its emit function; once a delta has
// been passed on to onDelta (which may be nil), a failure is no longer
// retried. An attempt that passes nothing on for the idle timeout is
// cancelled: retried if nothing was streamed, else a *StallError. A
// cancelled ctx returns ctx's error.
func (p RetryPolicy) Stream(ctx context.Context, onDelta func(Delta), attempt func(ctx context.Context, emit func(Delta)) (Response, error)) (Response, error) {
	var resp Response
	limit := p.idleTimeout()
	err := p.Do(ctx, func(ctx context.Context) (bool, error) {
		var streamed bool
		actx, dog, stop := watch(ctx, limit)
		defer stop()
		r, err := attempt(actx, func(d Delta) {
			dog.touch()
			streamed = true
			if onDelta != nil {
				onDelta(d)
			}
		})
		resp = r
		return streamed, stalled(actx, limit, streamed, err)
	})
	if err != nil {
		if ctx.Err() != nil {
			return Response{}, ctx.Err()
		}
		return Response{}, err
	}
	return resp, nil
}
