package provider

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var errBoom = errors.New("boom")

// outcome is one scripted result of an attempt.
type outcome struct {
	streamed bool
	err      error
}

func transient(after time.Duration) error {
	return &TransientError{Err: errors.New("overloaded"), RetryAfter: after}
}

func TestDo(t *testing.T) {
	tests := []struct {
		name       string
		policy     RetryPolicy
		outcomes   []outcome
		wantCalls  int
		wantSleeps []time.Duration // only checked where retryAfter fixes them
		wantErr    string          // "" for success
		wantIs     error
	}{
		{
			name:      "success at once",
			outcomes:  []outcome{{}},
			wantCalls: 1,
		},
		{
			name:      "transient then success, honouring retry-after",
			outcomes:  []outcome{{err: transient(3 * time.Second)}, {err: transient(time.Second)}, {}},
			wantCalls: 3, wantSleeps: []time.Duration{3 * time.Second, time.Second},
		},
		{
			name:      "not transient: no retry",
			outcomes:  []outcome{{err: errBoom}, {}},
			wantCalls: 1, wantErr: "boom", wantIs: errBoom,
		},
		{
			name:      "transient after streaming: no retry",
			outcomes:  []outcome{{streamed: true, err: transient(time.Second)}, {}},
			wantCalls: 1, wantErr: "overloaded",
		},
		{
			name:      "retries run out",
			policy:    RetryPolicy{MaxRetries: 2},
			outcomes:  []outcome{{err: transient(time.Millisecond)}, {err: transient(time.Millisecond)}, {err: transient(time.Millisecond)}, {}},
			wantCalls: 3, wantSleeps: []time.Duration{time.Millisecond, time.Millisecond},
			wantErr: "overloaded (gave up after 3 attempts)",
		},
		{
			name:      "retries off",
			policy:    RetryPolicy{MaxRetries: -1},
			outcomes:  []outcome{{err: transient(time.Millisecond)}, {}},
			wantCalls: 1, wantErr: "overloaded",
		},
		{
			name:      "retry-after too long",
			policy:    RetryPolicy{MaxRetryAfter: time.Minute},
			outcomes:  []outcome{{err: transient(2 * time.Minute)}, {}},
			wantCalls: 1, wantErr: "overloaded (the server asks to wait 2m0s, more than 1m0s: try again later)",
		},
		{
			name:      "wrapped transient",
			outcomes:  []outcome{{err: errors.Join(errBoom, transient(time.Second))}, {}},
			wantCalls: 2, wantSleeps: []time.Duration{time.Second},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var sleeps []time.Duration
			p := tt.policy
			p.sleep = func(_ context.Context, d time.Duration) error {
				sleeps = append(sleeps, d)
				return nil
			}
			calls := 0
			err := p.Do(t.Context(), func(context.Context) (bool, error) {
				o := tt.outcomes[calls]
				calls++
				return o.streamed, o.err
			})
			if calls != tt.wantCalls {
				t.Errorf("attempts = %d, want %d", calls, tt.wantCalls)
			}
			if tt.wantSleeps != nil {
				if diff := cmp.Diff(tt.wantSleeps, sleeps); diff != "" {
					t.Errorf("sleeps (-want +got):\n%s", diff)
				}
			}
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Do = %v", err)
				}
				return
			}
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("Do = %v, want %q", err, tt.wantErr)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("Do = %v, does not wrap %v", err, tt.wantIs)
			}
		})
	}
}

func TestDoStopsWhenCancelled(t *testing.T) {
	t.Run("during the wait", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		calls := 0
		p := RetryPolicy{BaseDelay: time.Hour}
		err := p.Do(ctx, func(context.Context) (bool, error) {
			calls++
			cancel() // the real wait of an hour must end now
			return false, transient(0)
		})
		// The attempt saw ctx cancelled and returned; Do must not wait.
		if !errors.Is(err, context.Canceled) || calls != 1 {
			t.Fatalf("Do = %v after %d attempts, want context.Canceled after 1", err, calls)
		}
	})
	t.Run("in the sleep", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		p := RetryPolicy{}
		p.sleep = func(ctx context.Context, d time.Duration) error {
			cancel()
			return sleepCtx(ctx, time.Hour)
		}
		err := p.Do(ctx, func(context.Context) (bool, error) { return false, transient(0) })
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Do = %v, want context.Canceled", err)
		}
	})
}

func TestDelay(t *testing.T) {
	tests := []struct {
		name       string
		policy     RetryPolicy
		n          int
		retryAfter time.Duration
		lo, hi     time.Duration
	}{
		{"default first", RetryPolicy{}, 0, 0, 250 * time.Millisecond, 500 * time.Millisecond},
		{"default third", RetryPolicy{}, 2, 0, time.Second, 2 * time.Second},
		{"capped", RetryPolicy{}, 20, 0, 15 * time.Second, 30 * time.Second},
		{"huge n does not overflow", RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: time.Second}, 1000, 0, 500 * time.Millisecond, time.Second},
		{"configured base", RetryPolicy{BaseDelay: time.Millisecond}, 1, 0, time.Millisecond, 2 * time.Millisecond},
		{"retry-after wins", RetryPolicy{}, 3, 7 * time.Second, 7 * time.Second, 7 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seen := map[time.Duration]bool{}
			for range 200 {
				d := tt.policy.Delay(tt.n, tt.retryAfter)
				if d < tt.lo || d > tt.hi {
					t.Fatalf("Delay = %s, want within [%s, %s]", d, tt.lo, tt.hi)
				}
				seen[d] = true
			}
			if tt.lo != tt.hi && len(seen) < 2 {
				t.Errorf("Delay has no jitter: always %v", seen)
			}
		})
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name   string
		header map[string]string
		want   time.Duration
	}{
		{"none", nil, 0},
		{"seconds", map[string]string{"Retry-After": "3"}, 3 * time.Second},
		{"fractional seconds", map[string]string{"Retry-After": "0.5"}, 500 * time.Millisecond},
		{"milliseconds win", map[string]string{"Retry-After": "2", "Retry-After-Ms": "1500"}, 1500 * time.Millisecond},
		{"bad milliseconds fall back", map[string]string{"Retry-After": "2", "Retry-After-Ms": "soon"}, 2 * time.Second},
		{"http date", map[string]string{"Retry-After": now.Add(90 * time.Second).Format(http.TimeFormat)}, 90 * time.Second},
		{"date in the past", map[string]string{"Retry-After": now.Add(-time.Minute).Format(http.TimeFormat)}, 0},
		{"negative", map[string]string{"Retry-After": "-4"}, 0},
		{"garbage", map[string]string{"Retry-After": "later"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.header {
				h.Set(k, v)
			}
			if got := RetryAfter(h, now); got != tt.want {
				t.Errorf("RetryAfter = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestShouldRetry(t *testing.T) {
	tests := []struct {
		status int
		header string
		want   bool
	}{
		{400, "", false},
		{401, "", false},
		{404, "", false},
		{408, "", true},
		{429, "", true},
		{500, "", true},
		{503, "", true},
		{529, "", true},
		{529, "false", false},
		{400, "true", true},
	}
	for _, tt := range tests {
		h := http.Header{}
		if tt.header != "" {
			h.Set("x-should-retry", tt.header)
		}
		if got := ShouldRetry(tt.status, h); got != tt.want {
			t.Errorf("ShouldRetry(%d, x-should-retry=%q) = %v, want %v", tt.status, tt.header, got, tt.want)
		}
	}
}
