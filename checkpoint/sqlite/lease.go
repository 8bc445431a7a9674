package sqlite

import (
	"context"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/lockfile"
)

var _ checkpoint.Leaser = (*Store)(nil)

// leases keeps session leases in PATH.leases beside the database (see
// package lockfile); nil for an in-memory database, whose sessions no other
// process can see.
func (s *Store) leases() *lockfile.Dir {
	if s.path == ":memory:" || s.path == "" {
		return nil
	}
	return lockfile.New(s.path + ".leases")
}

// Lease implements checkpoint.Leaser with a lock file beside the database.
func (s *Store) Lease(ctx context.Context, id string) (func(), error) {
	l := s.leases()
	if l == nil {
		return func() {}, nil
	}
	return l.Lease(ctx, id)
}

// LeaseHolder implements checkpoint.Leaser; it never writes.
func (s *Store) LeaseHolder(ctx context.Context, id string) (*checkpoint.Holder, error) {
	l := s.leases()
	if l == nil {
		return nil, nil
	}
	return l.LeaseHolder(ctx, id)
}
