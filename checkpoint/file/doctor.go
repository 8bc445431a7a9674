package file

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
)

// The doctor's view of a file store: every namespace folder's index and
// its log files. Each indexed session's log is checked against its summary
// (checkpoint.CheckLog); a log file the index does not know is a session
// that is not listed. A repair moves the bytes of a damaged log from its
// first bad frame on into a side file next to the store (QuarantinePath,
// synced before the log is cut, with an intent in the index first so the
// cut is not taken for lost events), then rebuilds the folder's index from
// the logs: every summary refolded, logs it did not know added. Writers of
// a session wait for the log's lock while its tail is moved; the rebuild
// holds the index's exclusive lock, as every index rewrite does.

var _ checkpoint.Repairer = (*Store)(nil)

// QuarantinePath is the file a repair moves the damaged tail of session
// id's log, from seq from on, into: next to the store's root directory.
func (s *Store) QuarantinePath(id string, from int64) string {
	return fmt.Sprintf("%s.quarantine-%s-%d.log", filepath.Clean(s.root), id, from)
}

// CheckDerived implements checkpoint.Repairer.
func (s *Store) CheckDerived(ctx context.Context, repair bool) ([]checkpoint.Problem, error) {
	if err := s.enter(); err != nil {
		return nil, fmt.Errorf("doctor: %w", err)
	}
	defer s.leave()
	if repair && s.readOnly {
		return nil, fmt.Errorf("repair: %w: the store was opened read-only; open it read-write to repair it", checkpoint.ErrReadOnly)
	}
	des, err := os.ReadDir(filepath.Join(s.root, nsDir))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("doctor: %w", err)
	}
	var out []checkpoint.Problem
	for _, de := range des {
		if !de.IsDir() {
			continue
		}
		found, err := s.checkFolder(ctx, de.Name(), repair)
		if err != nil {
			return nil, err
		}
		out = append(out, found...)
	}
	return out, nil
}

// checkFolder checks (and with repair, repairs) one namespace folder.
func (s *Store) checkFolder(ctx context.Context, folder string, repair bool) ([]checkpoint.Problem, error) {
	n := s.ns(folder)
	if err := n.ensure(ctx); err != nil {
		return nil, fmt.Errorf("doctor %s: %w", s.nsPath(folder), err)
	}
	n.mu.Lock()
	var sums []session.Summary
	for _, e := range n.entries {
		if e.has {
			sums = append(sums, cloneSummary(e.st.sum))
		}
	}
	n.mu.Unlock()
	slices.SortFunc(sums, func(a, b session.Summary) int { return strings.Compare(a.ID, b.ID) })
	var out []checkpoint.Problem
	known := map[string]bool{}
	fix := false
	for _, sum := range sums {
		known[sum.ID] = true
		found, _, err := checkpoint.CheckLog(ctx, s, sum)
		if err != nil {
			return nil, err
		}
		for i, p := range found {
			switch p.Kind {
			case checkpoint.ProblemCorrupt:
				found[i].Fix = fmt.Sprintf("run --doctor --repair: it moves what follows seq %d into %s and keeps the rest; or --export %s --salvage", p.Seq-1, s.QuarantinePath(p.Session, p.Seq), p.Session)
				if repair {
					side, err := s.quarantineTail(ctx, folder, p.Session, p.Seq)
					if err != nil {
						return nil, err
					}
					found[i].Repaired, found[i].Fix = true, "the summary was rebuilt from the events that verify"
					if side != "" {
						found[i].Fix = "moved to " + side + "; " + found[i].Fix
					}
				}
				fix = true
			case checkpoint.ProblemSummaryStale, checkpoint.ProblemSummaryOld:
				found[i].Repaired, fix = repair, true
			}
		}
		out = append(out, found...)
	}
	logs, err := os.ReadDir(s.nsPath(folder))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("doctor %s: %w", s.nsPath(folder), err)
	}
	for _, de := range logs {
		id, ok := strings.CutSuffix(de.Name(), ".log")
		if !ok || !de.Type().IsRegular() || checkID("", id) != nil || known[id] {
			continue
		}
		if fi, err := de.Info(); err != nil || fi.Size() <= int64(logHeaderLen) {
			continue // a creation that never wrote an event
		}
		out = append(out, checkpoint.Problem{Session: id, Kind: checkpoint.ProblemSummaryLost,
			Detail:   fmt.Sprintf("the log %s has no summary in the index %s, so its session is not listed", filepath.Join(s.nsPath(folder), de.Name()), n.path),
			Fix:      "run --doctor --repair to rebuild the index from the logs",
			Repaired: repair})
		fix = true
	}
	if repair && fix {
		if err := n.refoldAll(ctx); err != nil {
			return nil, fmt.Errorf("repair %s: %w", n.path, err)
		}
	}
	return out, nil
}

// refoldAll rebuilds the folder's index from its logs: every summary is
// refolded from scratch and logs it does not know are added.
func (n *nsIndex) refoldAll(ctx context.Context) error {
	n.mu.Lock()
	for _, e := range n.entries {
		e.has = false
		n.mark(e, true)
		e.gen++
	}
	n.stale, n.damaged, n.verified = true, true, false
	n.mu.Unlock()
	return n.rewrite(ctx)
}

// quarantineTail moves the bytes of session id's log from the first frame
// that is not whole, or does not hold the next seq, into the side file for
// seq bad, and cuts the log there. It holds the log's lock throughout. A
// log that simply ends early (its last events are gone) has nothing to
// move: "" and no error.
func (s *Store) quarantineTail(ctx context.Context, folder, id string, bad int64) (string, error) {
	path := s.logPath(folder, id)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return "", fmt.Errorf("quarantine %s: %w", id, err)
	}
	defer f.Close()
	if err := lock(ctx, f, true); err != nil {
		return "", fmt.Errorf("quarantine %s: %w", id, err)
	}
	defer unlock(f)
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("quarantine %s: %w", id, err)
	}
	size := fi.Size()
	fr := newFrameReader(f, path, logHeaderLen, size)
	fr.reuse = true
	var head int64
	cut := int64(logHeaderLen)
	for {
		off := fr.off
		h, _, _, ok, badFrame, err := fr.next()
		if err != nil {
			return "", fmt.Errorf("quarantine %s: %w", id, err)
		}
		if !ok || badFrame != nil || h.firstSeq != head+1 {
			cut = off
			break
		}
		head = h.lastSeq()
		cut = fr.off
	}
	if cut >= size {
		return "", nil
	}
	side := s.QuarantinePath(id, head+1)
	tail := make([]byte, size-cut)
	if _, err := f.ReadAt(tail, cut); err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("quarantine %s: %w", id, err)
	}
	if err := writeFileAtomic(side, tail); err != nil {
		return "", fmt.Errorf("quarantine %s: %w", id, err)
	}
	if err := syncDir(filepath.Dir(side)); err != nil {
		return "", fmt.Errorf("quarantine %s: %w", id, err)
	}
	n := s.ns(folder)
	if err := n.acquireShared(ctx); err != nil {
		return "", err
	}
	err = n.write(indexRecord{kind: recIntent, id: id})
	if err == nil {
		err = n.syncRecords()
	}
	n.releaseShared()
	if err != nil {
		return "", fmt.Errorf("quarantine %s: %w", id, err)
	}
	if err := f.Truncate(cut); err != nil {
		return "", fmt.Errorf("quarantine %s: %w", id, err)
	}
	if err := datasync(f); err != nil {
		return "", fmt.Errorf("quarantine %s: %w", id, err)
	}
	return side, nil
}
