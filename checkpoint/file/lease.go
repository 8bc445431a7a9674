package file

import (
	"context"
	"path/filepath"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/lockfile"
)

var _ checkpoint.Leaser = (*Store)(nil)

// leases keeps session leases in ROOT.leases, a directory beside the
// store's root (see package lockfile), so the store's own tree is untouched.
func (s *Store) leases() *lockfile.Dir { return lockfile.New(filepath.Clean(s.root) + ".leases") }

// Lease implements checkpoint.Leaser with a lock file beside the store.
func (s *Store) Lease(ctx context.Context, id string) (func(), error) {
	return s.leases().Lease(ctx, id)
}

// LeaseHolder implements checkpoint.Leaser; it never writes.
func (s *Store) LeaseHolder(ctx context.Context, id string) (*checkpoint.Holder, error) {
	return s.leases().LeaseHolder(ctx, id)
}
