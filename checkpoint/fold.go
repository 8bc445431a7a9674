package checkpoint

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/lite-agent/lite-agent/session"
)

// Fold is a saved session.State: the replay of a log through one event, so
// that a resume replays only the events after it. It is derived, never the
// source of truth: it is checked against the log before use and ignored
// (the log folded again) when stale, damaged, or of another version.
type Fold struct {
	// Seq is the last event the fold covers.
	Seq int64
	// Check is FoldCheck of the event at Seq: a log truncated and written
	// again past Seq has another event there.
	Check string
	// State is session.EncodeState of the state after Seq.
	State []byte
}

// FoldKeeper is the optional ability of a Checkpointer to keep one Fold
// per session beside its log. The fallback, for a store without it, is to
// replay the whole log (LoadState does either).
type FoldKeeper interface {
	// SaveFold stores f as session id's fold, replacing the one kept. It is
	// not durable (no fsync of its own): a crash may lose it or leave a
	// damaged one, which LoadState detects. A session without a log, or f
	// past the head, is ErrNotFound and nothing is kept; a read-only store
	// returns ErrReadOnly. Safe for concurrent use: the last save wins.
	SaveFold(ctx context.Context, id string, f Fold) error
	// LoadFold returns session id's fold, ErrNotFound when none is kept.
	// The State bytes are the caller's. Delete drops a session's fold, and
	// Truncate a fold past the cut.
	LoadFold(ctx context.Context, id string) (Fold, error)
}

// FoldCheck returns the check a Fold carries for e, the last event it
// covers: a digest of its seq, type, time and payload.
func FoldCheck(e session.Event) string {
	h := sha256.New()
	var n [16]byte
	binary.LittleEndian.PutUint64(n[:8], uint64(e.Seq))
	binary.LittleEndian.PutUint64(n[8:], uint64(e.Time.UnixMicro()))
	h.Write(n[:])
	h.Write([]byte(e.Type))
	h.Write([]byte{0})
	h.Write(e.Data)
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// FoldEvery is how many events past the kept fold (or a whole replay) make
// a new fold worth saving.
const FoldEvery = 64

// Loaded is what LoadState did.
type Loaded struct {
	// From is the seq of the fold it started from, 0 for the whole log.
	From int64
	// Replayed is how many events it folded from the log.
	Replayed int
	// Ignored says why a kept fold was not used ("" when it was, or when
	// there was none): stale, damaged, of another version or not matching
	// the log.
	Ignored string
	// Last is the last event folded from the log (the zero Event when
	// none was), what a new fold of the state would be checked against.
	Last session.Event
}

// LoadState replays session id from c: from its kept fold when c is a
// FoldKeeper with a fold that matches the log, else the whole log. A
// session without a log is ErrNotFound (wrapped, from Read).
func LoadState(ctx context.Context, c Checkpointer, id string) (*session.State, Loaded, error) {
	var info Loaded
	if fk, ok := c.(FoldKeeper); ok {
		st, n, last, why, err := fromFold(ctx, c, fk, id)
		if err != nil {
			return nil, info, err
		}
		if st != nil {
			info.From, info.Replayed, info.Last = st.Summary.Head-int64(n), n, last
			return st, info, nil
		}
		info.Ignored = why
	}
	st := &session.State{}
	for e, err := range c.Read(ctx, id, 1) {
		if err != nil {
			return nil, info, err
		}
		st.Apply(e)
		info.Replayed++
		info.Last = e
	}
	return st, info, nil
}

// fromFold folds session id on from its kept fold. A nil State with why
// set means the fold is not usable (nil and "" when none is kept); err is
// an error reading the log itself.
func fromFold(ctx context.Context, c Checkpointer, fk FoldKeeper, id string) (st *session.State, n int, last session.Event, why string, err error) {
	f, err := fk.LoadFold(ctx, id)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return nil, 0, last, "", nil
		}
		if ctx.Err() != nil {
			return nil, 0, last, "", err
		}
		return nil, 0, last, fmt.Sprintf("it does not load: %v", err), nil
	}
	st, err = session.DecodeState(f.State)
	if err != nil {
		return nil, 0, last, err.Error(), nil
	}
	if st.Summary.Head != f.Seq || f.Seq < 1 {
		return nil, 0, last, fmt.Sprintf("it covers seq %d but says %d", st.Summary.Head, f.Seq), nil
	}
	first := true
	for e, err := range c.Read(ctx, id, f.Seq) {
		if err != nil {
			return nil, 0, last, "", err
		}
		if first {
			first = false
			if e.Seq != f.Seq || FoldCheck(e) != f.Check {
				return nil, 0, last, fmt.Sprintf("the log's event %d is not the one it was saved after", f.Seq), nil
			}
			continue
		}
		st.Apply(e)
		n++
		last = e
	}
	if first {
		return nil, 0, last, fmt.Sprintf("the log ends before its seq %d", f.Seq), nil
	}
	return st, n, last, "", nil
}

// SaveState saves st, the replay of session id through last (its last
// event applied), as the session's fold when c is a FoldKeeper; else it
// does nothing. Errors are the store's: the fold is derived, so callers
// may ignore them.
func SaveState(ctx context.Context, c Checkpointer, id string, st *session.State, last session.Event) error {
	fk, ok := c.(FoldKeeper)
	if !ok {
		return nil
	}
	f, err := NewFold(st, last)
	if err != nil {
		return fmt.Errorf("save the fold of %s: %w", id, err)
	}
	return fk.SaveFold(ctx, id, f)
}

// NewFold returns the Fold of st, the replay of a log through last (its
// last event applied). A last event that is not st's head is ErrInvalid.
func NewFold(st *session.State, last session.Event) (Fold, error) {
	if last.Seq != st.Summary.Head || last.Seq < 1 {
		return Fold{}, fmt.Errorf("the last event %d is not the state's head %d: %w", last.Seq, st.Summary.Head, ErrInvalid)
	}
	return Fold{Seq: last.Seq, Check: FoldCheck(last), State: session.EncodeState(nil, st)}, nil
}
