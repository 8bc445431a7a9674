package liteagent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
	"github.com/lite-agent/lite-agent/tool"
)

// dirRoots resolves each directory a restore touches once, instead of
// every file's whole path: the directory is located through the workdir's
// Root (confinement, symlinks) and opened as an os.Root of its own, and
// each file in it is then reached by its base name through that handle,
// which cannot lead out of the directory. A file that is itself a symlink,
// or whose directory cannot be opened (missing, not a directory), is
// located the full way, as before. Not safe for concurrent use.
type dirRoots struct {
	root *tool.Root
	open map[string]*os.Root // directory as the log spells it → its handle
}

// maxDirRoots bounds the directory handles held at once; paths come
// sorted, so the files of one directory are together.
const maxDirRoots = 64

func newDirRoots(root *tool.Root) *dirRoots {
	return &dirRoots{root: root, open: map[string]*os.Root{}}
}

// locate returns where to reach p (a path as the log records it).
func (d *dirRoots) locate(p string) (tool.Loc, error) {
	dir, base := filepath.Split(filepath.FromSlash(p))
	if dir == "" || base == "" || base == "." || base == ".." {
		return d.root.Locate(p)
	}
	r, ok := d.open[dir]
	if !ok {
		loc, err := d.root.Locate(filepath.Clean(dir))
		if err != nil {
			return d.root.Locate(p) // says why, for the whole path
		}
		if r, err = loc.FS.OpenRoot(loc.Name); err != nil {
			return d.root.Locate(p) // missing or not a directory: not kept
		}
		if len(d.open) >= maxDirRoots {
			d.close()
		}
		d.open[dir] = r
	}
	fi, err := r.Lstat(base)
	if err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return d.root.Locate(p) // resolved and checked the full way
	}
	return tool.Loc{Path: p, FS: r, Name: base}, nil
}

// close releases every directory handle.
func (d *dirRoots) close() {
	for k, r := range d.open {
		r.Close()
		delete(d.open, k)
	}
}

// snapshot reads the file at p as it is now (see snapshotFile).
func (d *dirRoots) snapshot(p string) (session.FileSnapshot, error) {
	snap := session.FileSnapshot{CallID: "restore", Path: p}
	loc, err := d.locate(p)
	if err != nil {
		return snap, err
	}
	data, fi, err := loc.ReadRegular()
	if errors.Is(err, fs.ErrNotExist) {
		return snap, nil
	}
	if err != nil {
		return snap, err
	}
	snap.Existed, snap.Mode, snap.Content, snap.Digest = true, uint32(fi.Mode().Perm()), data, digestOf(data)
	return snap, nil
}

// putBackAt writes snapshot s back at loc, in place (the content it
// replaces is already kept in the undo fork), with its old mode, or
// removes the file if it did not exist; cur is the file as the restore
// found it, so that a file already of the right mode is not chmod-ed
// again. It does not sync: see syncFiles.
func putBackAt(loc tool.Loc, s, cur session.FileSnapshot) error {
	if !s.Existed {
		err := loc.FS.Remove(loc.Name)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	if dir := filepath.Dir(loc.Name); dir != "." {
		if err := loc.FS.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	if err := loc.CheckWritable(); err != nil {
		return err
	}
	mode := fs.FileMode(s.Mode & 0o7777)
	// Written over, then cut to its length, rather than opened with
	// O_TRUNC: ext4 (auto_da_alloc) flushes a file truncated to zero when
	// it is closed, which made the close of each file the restore's
	// largest cost; the one sync of syncFiles makes them durable instead.
	f, err := loc.FS.OpenFile(loc.Name, os.O_WRONLY|os.O_CREATE|syscall.O_NONBLOCK, mode)
	if err != nil {
		return err
	}
	_, err = f.Write(s.Content)
	if err == nil {
		err = f.Truncate(int64(len(s.Content)))
	}
	if err == nil && (!cur.Existed || fs.FileMode(cur.Mode) != mode) {
		err = f.Chmod(mode) // created under the umask, or of another mode
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Bounds of one batch read of blobs while writing files back: the
// content of a batch is held in memory at once.
const (
	blobBatchFiles = 256
	blobBatchBytes = 32 << 20
)

// blobBatches splits paths (the files to write back, in order) into runs
// whose blobs are read with one checkpoint.ReadBlobs each.
func (p *restorePlan) blobBatches(paths []string) [][]string {
	var out [][]string
	var cur []string
	var bytes int64
	for _, path := range paths {
		size := p.blobSize[path]
		if len(cur) > 0 && (len(cur) >= blobBatchFiles || bytes+size > blobBatchBytes) {
			out = append(out, cur)
			cur, bytes = nil, 0
		}
		cur = append(cur, path)
		bytes += size
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// readBatch returns the blob content of the targets of batch kept as
// blobs, by digest.
func (a *Agent) readBatch(ctx context.Context, p *restorePlan, batch []string) (map[string][]byte, error) {
	var digests []string
	for _, path := range batch {
		if p.fromBlob[path] {
			digests = append(digests, p.target[path].Digest)
		}
	}
	if len(digests) == 0 {
		return nil, nil
	}
	bs := a.blobStore()
	if bs == nil {
		return nil, fmt.Errorf("the store keeps no blobs: %w", checkpoint.ErrNotFound)
	}
	return checkpoint.ReadBlobs(ctx, bs, digests)
}

// undoEvents records, for the undo fork, the files as the restore finds
// them (the state at the head). With a store that keeps blobs, their
// content is put as blobs (one batch; the store keeps each content once,
// and most of it, what shell commands changed, is there already) and one
// workspace_changed names them by digest, from the state the restore
// finds (Before) to the one it leaves (After); restoring the fork to its
// head puts them back like any shell change. Without blobs, each file is a
// file_snapshot with its content, as the file tools record them.
func (a *Agent) undoEvents(ctx context.Context, plan *restorePlan, paths []string, current map[string]session.FileSnapshot) ([]session.Event, error) {
	bs := a.blobStore()
	if bs == nil {
		out := make([]session.Event, 0, len(paths))
		for _, p := range paths {
			out = append(out, mustEvent(session.TypeFileSnapshot, current[p]))
		}
		return out, nil
	}
	rec := session.WorkspaceChanged{}
	var blobs []checkpoint.Blob
	var bytes int64
	put := func() error {
		err := bs.PutBlobs(ctx, blobs)
		blobs, bytes = blobs[:0], 0
		return err
	}
	for _, p := range paths {
		cur, target := current[p], plan.target[p]
		c := session.PathChange{Path: p, Kind: session.ChangeChanged}
		if cur.Existed {
			c.Before = &session.PathState{Mode: cur.Mode, Size: int64(len(cur.Content)), Digest: cur.Digest}
			blobs = append(blobs, checkpoint.Blob{Digest: cur.Digest, Data: cur.Content})
			if bytes += int64(len(cur.Content)); bytes >= blobBatchBytes {
				if err := put(); err != nil {
					return nil, err
				}
			}
		} else {
			c.Kind = session.ChangeCreated
		}
		if target.Existed {
			c.After = &session.PathState{Mode: uint32(fs.FileMode(target.Mode).Perm()), Digest: target.Digest}
		} else if cur.Existed {
			c.Kind = session.ChangeDeleted
		}
		rec.Changes = append(rec.Changes, c)
	}
	if len(blobs) > 0 {
		if err := put(); err != nil {
			return nil, err
		}
	}
	if len(rec.Changes) == 0 {
		return nil, nil
	}
	return []session.Event{mustEvent(session.TypeWorkspaceChanged, rec)}, nil
}
