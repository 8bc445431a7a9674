package file

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/lite-agent/lite-agent/checkpoint"
)

var _ checkpoint.FoldKeeper = (*Store)(nil)

// foldMagic opens a fold file, <id>.fold beside <id>.log:
//
//	"LAfold1\n", uvarint seq, uvarint check length, check, the state
//
// The state (session.EncodeState) carries its own checksum; a damaged seq
// or check does not match the log, so the fold is not used either way.
const foldMagic = "LAfold1\n"

// foldPath is the fold file of the log at logPath.
func foldPath(logPath string) string { return strings.TrimSuffix(logPath, ".log") + ".fold" }

// SaveFold implements checkpoint.FoldKeeper: the fold is written to a temp
// file and renamed over <id>.fold, without an fsync (a crash may leave the
// old fold, none, or a damaged one, which the log's check rejects). It
// holds the log's lock meanwhile, so Truncate and Delete in any process
// see it whole.
func (s *Store) SaveFold(ctx context.Context, id string, f checkpoint.Fold) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	if err := checkID("save the fold of", id); err != nil {
		return err
	}
	if s.readOnly {
		return fmt.Errorf("save the fold of %s: %w", id, checkpoint.ErrReadOnly)
	}
	h := s.acquire(id)
	defer s.release(h)
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.open(ctx, nil); err != nil {
		return fmt.Errorf("save the fold of %s: %w", id, err)
	}
	if h.f == nil {
		return fmt.Errorf("save the fold of %s: %w", id, checkpoint.ErrNotFound)
	}
	defer h.unlock()
	if f.Seq < 1 || f.Seq > h.st.head() {
		return fmt.Errorf("save the fold of %s through seq %d: %w", id, f.Seq, checkpoint.ErrNotFound)
	}
	b := make([]byte, 0, len(foldMagic)+2*binary.MaxVarintLen64+len(f.Check)+len(f.State))
	b = append(b, foldMagic...)
	b = binary.AppendUvarint(b, uint64(f.Seq))
	b = binary.AppendUvarint(b, uint64(len(f.Check)))
	b = append(b, f.Check...)
	b = append(b, f.State...)
	path := foldPath(h.path)
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return fmt.Errorf("save the fold of %s: %w", id, err)
	}
	_, err = tmp.Write(b)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("save the fold of %s: %w", id, err)
	}
	return nil
}

// LoadFold implements checkpoint.FoldKeeper. It takes no lock: the file is
// only ever replaced whole.
func (s *Store) LoadFold(ctx context.Context, id string) (checkpoint.Fold, error) {
	if err := s.enter(); err != nil {
		return checkpoint.Fold{}, err
	}
	defer s.leave()
	if err := checkID("load the fold of", id); err != nil {
		return checkpoint.Fold{}, err
	}
	if err := ctx.Err(); err != nil {
		return checkpoint.Fold{}, fmt.Errorf("load the fold of %s: %w", id, err)
	}
	folder, _, ok, err := s.lookup(id)
	if err != nil {
		return checkpoint.Fold{}, fmt.Errorf("load the fold of %s: %w", id, err)
	}
	if !ok {
		return checkpoint.Fold{}, fmt.Errorf("load the fold of %s: %w", id, checkpoint.ErrNotFound)
	}
	path := foldPath(s.logPath(folder, id))
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return checkpoint.Fold{}, fmt.Errorf("load the fold of %s: %w", id, checkpoint.ErrNotFound)
	}
	if err != nil {
		return checkpoint.Fold{}, fmt.Errorf("load the fold of %s: %w", id, err)
	}
	f, ok := parseFold(b)
	if !ok {
		return checkpoint.Fold{}, fmt.Errorf("load the fold of %s: %s is damaged; it is rebuilt from the log", id, path)
	}
	return f, nil
}

// parseFold reads a fold file's contents.
func parseFold(b []byte) (checkpoint.Fold, bool) {
	rest, ok := bytes.CutPrefix(b, []byte(foldMagic))
	if !ok {
		return checkpoint.Fold{}, false
	}
	seq, n := binary.Uvarint(rest)
	if n <= 0 || seq > 1<<62 {
		return checkpoint.Fold{}, false
	}
	rest = rest[n:]
	cl, n := binary.Uvarint(rest)
	if n <= 0 || cl > uint64(len(rest)-n) {
		return checkpoint.Fold{}, false
	}
	rest = rest[n:]
	return checkpoint.Fold{Seq: int64(seq), Check: string(rest[:cl]), State: rest[cl:]}, true
}

// dropFold removes the fold of the log at logPath if it covers events
// past keep (all of them with keep -1). The caller holds the log's lock.
func dropFold(logPath string, keep int64) error {
	path := foldPath(logPath)
	if keep >= 0 {
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if f, ok := parseFold(b); err == nil && ok && f.Seq <= keep {
			return nil
		}
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
