package checkpoint

import (
	"fmt"

	"github.com/lite-agent/lite-agent/session"
)

// Prepare validates an Append request and returns a copy of events with seqs
// expectedHead+1 … assigned and zero times set to now. Backends call it
// before touching storage so every backend rejects the same requests with
// the same ErrInvalid errors. maxEventBytes (0: no limit) caps one event's
// data; a larger event is ErrTooLarge.
func Prepare(id string, expectedHead int64, events []session.Event, maxEventBytes int) ([]session.Event, error) {
	switch {
	case id == "":
		return nil, fmt.Errorf("append: %w: empty session id", ErrInvalid)
	case expectedHead < 0:
		return nil, fmt.Errorf("append %s: %w: negative expected head %d", id, ErrInvalid, expectedHead)
	case len(events) == 0:
		return nil, fmt.Errorf("append %s: %w: no events", id, ErrInvalid)
	case expectedHead == 0 && events[0].Type != session.TypeSessionStarted:
		return nil, fmt.Errorf("append %s: %w: a new session must start with a %s event, not %q", id, ErrInvalid, session.TypeSessionStarted, events[0].Type)
	}
	out := make([]session.Event, len(events))
	now := session.Now()
	for i, e := range events {
		if e.Type == "" {
			return nil, fmt.Errorf("append %s: %w: event %d has no type", id, ErrInvalid, i)
		}
		if maxEventBytes > 0 && len(e.Data) > maxEventBytes {
			return nil, fmt.Errorf("append %s: %w: a %s event of %d bytes is over this store's limit of %d bytes; store large content outside the log", id, ErrTooLarge, e.Type, len(e.Data), maxEventBytes)
		}
		e.Seq = expectedHead + int64(i) + 1
		if e.Time.IsZero() {
			e.Time = now
		}
		out[i] = e
	}
	return out, nil
}
