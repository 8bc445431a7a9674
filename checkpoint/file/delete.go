package file

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/lite-agent/lite-agent/checkpoint"
)

// Delete removes the session's log, its mapping and its index entry. See
// checkpoint.Checkpointer.
func (s *Store) Delete(ctx context.Context, id string) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	if err := checkID("delete", id); err != nil {
		return err
	}
	if s.readOnly {
		return fmt.Errorf("delete %s: %w", id, checkpoint.ErrReadOnly)
	}
	h := s.acquire(id)
	defer s.release(h)
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.open(ctx, nil); err != nil {
		return fmt.Errorf("delete %s: %w", id, err)
	}
	if h.f == nil {
		return fmt.Errorf("delete %s: %w", id, checkpoint.ErrNotFound)
	}
	exists := h.st.head() > 0
	n := s.ns(h.folder)
	err := n.acquireShared(ctx)
	if err != nil {
		unlock(h.f)
		h.drop()
		return fmt.Errorf("delete %s: %w", id, err)
	}
	err = h.remove(n)
	n.releaseShared()
	s.mu.Lock()
	delete(s.checked, id)
	s.mu.Unlock()
	unlock(h.f)
	h.drop()
	if err != nil {
		return fmt.Errorf("delete %s: %w", id, err)
	}
	if !exists {
		return fmt.Errorf("delete %s: %w", id, checkpoint.ErrNotFound)
	}
	return nil
}

// remove deletes the locked log, then its mapping: a crash in between leaves
// a mapping to nothing, which reads as no session.
func (h *handle) remove(n *nsIndex) error {
	s := h.s
	if err := n.write(indexRecord{kind: recIntent, id: h.id}); err != nil {
		return err
	}
	if err := n.syncRecords(); err != nil {
		return err
	}
	if err := os.Remove(h.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	os.Remove(h.path + ".tmp")
	if err := dropFold(h.path, -1); err != nil { // fold.go
		return err
	}
	if err := syncDir(filepath.Dir(h.path)); err != nil {
		return err
	}
	if t, err := os.Readlink(s.mappingPath(h.id)); err == nil && t == mappingTarget(h.folder, h.id) {
		if err := os.Remove(s.mappingPath(h.id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if err := syncDir(filepath.Join(s.root, idsDir)); err != nil {
			return err
		}
	}
	return n.write(indexRecord{kind: recDelete, id: h.id})
}
