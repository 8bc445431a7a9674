package checkpoint

import (
	"context"
	"errors"
	"fmt"

	"github.com/lite-agent/lite-agent/session"
)

// ErrNewer is session.ErrNewer: what a store holds was written by a newer
// lite-agent (a summary entry, index or log format, or a fold version,
// that this build does not know). Stores return it, as a
// *session.NewerError naming the version, instead of reading such data as
// damage, and change nothing: a newer build reads it.
var ErrNewer = session.ErrNewer

// Stale reports whether a stored summary was folded by another version of
// the fold than this code's (session.FoldVersion), so that it must not be
// trusted: a change to the fold never leaves a listing wrong.
func Stale(s *session.Summary) bool { return s.Fold != session.FoldVersion }

// Refold recomputes, in place, each summary of sums that Stale reports,
// from its log read through c. Stores call it on what List and Head read
// (and write the result back where they can), so callers always get the
// current fold. A log deleted meanwhile keeps the summary read; a log that
// does not read back whole is an error (a *CorruptError for damage). A
// summary of a newer fold version is not recomputed (this build's fold
// would lose what the newer one computes): it is an ErrNewer error.
func Refold(ctx context.Context, c Checkpointer, sums []session.Summary) error {
	return RefoldWith(ctx, sums, func(ctx context.Context, id string) (session.Summary, bool, error) {
		fold := session.Summary{ID: id}
		for e, err := range c.Read(ctx, id, 1) {
			if errors.Is(err, ErrNotFound) {
				return fold, false, nil
			}
			if err != nil {
				return fold, false, err
			}
			fold.Apply(e)
		}
		return fold, true, nil
	})
}

// RefoldWith is Refold with a store's own recompute of one session, fold,
// which may also store what it computes: ok false (the session is gone)
// keeps the summary read.
func RefoldWith(ctx context.Context, sums []session.Summary, fold func(ctx context.Context, id string) (_ session.Summary, ok bool, _ error)) error {
	for i := range sums {
		if !Stale(&sums[i]) {
			continue
		}
		id := sums[i].ID
		if err := session.CheckFold(&sums[i]); err != nil {
			return fmt.Errorf("the summary of session %s: %w", id, err)
		}
		sum, ok, err := fold(ctx, id)
		switch {
		case err != nil:
			return fmt.Errorf("recompute the summary of %s from its log: %w", id, err)
		case ok:
			sums[i] = sum
		}
	}
	return nil
}

// OldFoldProblem is the doctor's report of session id's stored summary,
// folded by fold version v: reads recompute it (Refold), a repair or the
// session's next write stores the recomputed one.
func OldFoldProblem(id string, v int, repaired bool) Problem {
	return Problem{Session: id, Kind: ProblemSummaryOld, Repaired: repaired,
		Detail: fmt.Sprintf("the stored summary was folded by fold version %d, not %d: listings recompute it from the log each time", v, session.FoldVersion),
		Fix:    "run --doctor --repair to store the recomputed summary"}
}

// RefoldedHead is a store's Head over head, its read of the stored
// summary: a summary of another fold version is recomputed by refold
// (Refold, or a store's own that also writes the result back).
func RefoldedHead(ctx context.Context, id string, head func(context.Context, string) (session.Summary, error), refold func(context.Context, []session.Summary) error) (session.Summary, error) {
	sum, err := head(ctx, id)
	if err != nil || !Stale(&sum) {
		return sum, err
	}
	one := []session.Summary{sum}
	if err := refold(ctx, one); err != nil {
		return session.Summary{}, err
	}
	return one[0], nil
}

// RefoldedList is a store's List over what its read of the stored
// summaries returned (sums, err), recomputed as RefoldedHead does.
func RefoldedList(ctx context.Context, sums []session.Summary, err error, refold func(context.Context, []session.Summary) error) ([]session.Summary, error) {
	if err != nil {
		return nil, err
	}
	return sums, refold(ctx, sums)
}
