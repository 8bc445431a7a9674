package postgres

import (
	"context"
	"fmt"
)

// WriteBackAfter recomputes the summary of session id as a read of a stale
// summary does, runs between after reading the log and before storing the
// fold, then stores it if the row is unchanged since; it reports whether
// it stored it. Compiled into tests only.
func WriteBackAfter(ctx context.Context, s *Store, id string, between func()) (bool, error) {
	r, err := s.readRefold(ctx, id)
	if err != nil || r == nil || !r.write {
		return false, fmt.Errorf("nothing to write back for %s (%v)", id, err)
	}
	between()
	return s.writeRefold(ctx, r)
}
