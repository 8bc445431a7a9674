package session

import (
	"errors"
	"fmt"
)

// ErrNewer reports stored data that a newer lite-agent wrote in a format,
// or folded with a fold, that this build does not know: an event envelope,
// a store's summary entry or index, a summary's fold version. It is never
// damage. Nothing past it was read and nothing was changed; a newer build
// reads it. Test with errors.Is; the error is a *NewerError.
var ErrNewer = errors.New("written by a newer lite-agent")

// NewerError is an ErrNewer with the version found. Its message says what
// to do: upgrade. Whoever returns it names the data it was reading.
type NewerError struct {
	// Format names what Version numbers: "summary entry format", "fold
	// version", "index format", "log format", "event envelope version".
	Format string
	// Version is what the stored data says; Known the newest this build
	// reads.
	Version, Known int
}

func (e *NewerError) Error() string {
	return fmt.Sprintf("written by a newer lite-agent (%s %d; this build knows %d and older): upgrade lite-agent to use it; nothing was changed", e.Format, e.Version, e.Known)
}

// Is makes errors.Is(err, ErrNewer) hold.
func (e *NewerError) Is(target error) bool { return target == ErrNewer }

// CheckFold returns a *NewerError when s was folded by a newer fold than
// this build's (FoldVersion): such a summary may hold what this build's
// fold cannot compute, so it is neither trusted nor recomputed here.
func CheckFold(s *Summary) error {
	if s.Fold > FoldVersion {
		return &NewerError{Format: "fold version", Version: s.Fold, Known: FoldVersion}
	}
	return nil
}
