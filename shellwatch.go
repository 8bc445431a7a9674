package liteagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"sync"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
	"github.com/lite-agent/lite-agent/tool"
	"github.com/lite-agent/lite-agent/workspace"
)

// Caps on the prior content kept for shell commands. A change over a cap is
// recorded and listed by a restore as not undone, never skipped silently.
const (
	// shellFileCap: a larger file is hashed (so drift is seen) but its
	// content is not kept.
	shellFileCap = workspace.DefaultMaxFileBytes
	// shellCommandCap bounds the prior content one command's changes need.
	shellCommandCap = 256 << 20
	// shellSessionCap bounds it for all the commands of a session.
	shellSessionCap = 2 << 30
	// keepBatch is how much content a scan gathers before it puts it.
	keepBatch     = 8 << 20
	keepBatchBlob = 512
)

// shellWatch is a session's view of its workdir between shell commands:
// the latest manifest, kept in memory (and read back from the log after a
// restart), and a file-system watcher telling what changed since, so the
// next manifest is an update of the last rather than a walk of the tree.
// Whenever the watcher cannot be trusted (not started yet, its queue
// overflowed, a directory it could not watch, a watched directory moved,
// an ignore file changed) the manifest is a full scan, which restarts it.
// The turn and background job ends use it; mu orders them.
type shellWatch struct {
	mu   sync.Mutex
	prev *workspace.Manifest
	// watcher has seen every change since prev was taken when watched.
	watcher *workspace.Watcher
	watched bool
	// noWatch: a watcher could not cover the tree (the watch limit, too
	// many directories) or the session closed; every manifest is a scan.
	noWatch bool
	// manifest is the digest of the last manifest put as a blob; base and
	// baseDigest the last put whole, which the next are deltas against.
	manifest   string
	base       *workspace.Manifest
	baseDigest string
	// spent is the prior content the session's records need, in bytes.
	spent  int64
	loaded bool // spent, prev and base were read from the log
}

// close stops the watcher; later manifests are full scans.
func (w *shellWatch) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.watcher.Close()
	w.watcher, w.watched, w.noWatch = nil, false, true
}

// shellRun is one bracketed call (a shell command or an MCP tool's):
// the manifest taken before it.
type shellRun struct {
	s      *Session
	bs     checkpoint.BlobStore
	callID string
	tool   string // the call's tool, which its record names
	before *workspace.Manifest
	bg     bool
}

// blobStore returns the store's BlobStore, nil when it has none.
func (a *Agent) blobStore() checkpoint.BlobStore {
	bs, _ := a.store.(checkpoint.BlobStore)
	return bs
}

// bracketed reports whether a call of t is one whose effects are tracked
// with manifests: a command tool not confined to reading, or an MCP tool
// not marked read-only (readOnlyHint), since an MCP server may write in
// the workdir as a command does (the filesystem server does).
func bracketed(t tool.Tool, sandbox string) bool {
	switch spec := t.Spec(); spec.Kind {
	case tool.KindExec:
		return sandbox != "read-only"
	case tool.KindMCP:
		return !spec.ReadOnly
	}
	return false
}

// backgroundInput reports whether a bash input asks for a background job.
func backgroundInput(input []byte) bool {
	var in struct {
		Background any `json:"background"`
	}
	if json.Unmarshal(input, &in) != nil {
		return false
	}
	return in.Background == true || in.Background == "true"
}

// beforeShell takes the manifest before call c runs and returns the events
// to append with its tool_started. It returns nil, nil when the call is
// not bracketed, the store keeps no blobs, or the scan failed (the call
// is then listed as not undone, as an untracked command).
func (s *Session) beforeShell(ctx context.Context, c call, t tool.Tool, sandbox string) (*shellRun, []session.Event) {
	bs := s.a.blobStore()
	if bs == nil || !bracketed(t, sandbox) {
		return nil, nil
	}
	w := &s.watch
	w.mu.Lock()
	defer w.mu.Unlock()
	m, err := s.scanLocked(ctx, bs)
	if err != nil {
		return nil, nil
	}
	digest, base, err := s.putManifestLocked(ctx, bs, m)
	if err != nil {
		return nil, nil
	}
	bg := t.Spec().Kind == tool.KindExec && backgroundInput(c.input)
	run := &shellRun{s: s, bs: bs, callID: c.id, tool: c.name, before: m, bg: bg}
	ev := mustEvent(session.TypeWorkspaceScanned, session.WorkspaceScanned{CallID: c.id, Manifest: digest, Base: base, Files: len(m.Entries)})
	return run, []session.Event{ev}
}

// scanLocked takes a manifest of the workdir from the previous one,
// putting the content it reads in the store: an update from what the
// watcher saw change when it can be trusted, a full scan (restarting the
// watcher) when not. The caller holds w.mu.
func (s *Session) scanLocked(ctx context.Context, bs checkpoint.BlobStore) (*workspace.Manifest, error) {
	w := &s.watch
	if err := s.loadLocked(ctx, bs); err != nil {
		return nil, err
	}
	var batch []checkpoint.Blob
	var size int64
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := bs.PutBlobs(ctx, batch)
		batch, size = batch[:0], 0
		return err
	}
	opts := &workspace.Options{
		MaxFileBytes: shellFileCap,
		Keep: func(_, digest string, data []byte) error {
			batch = append(batch, checkpoint.Blob{Digest: digest, Data: data})
			size += int64(len(data))
			if size >= keepBatch || len(batch) >= keepBatchBlob {
				return flush()
			}
			return nil
		},
	}
	var m *workspace.Manifest
	if w.watched {
		changed, err := w.watcher.Changed(ctx)
		if err == nil {
			opts.Dir = w.watcher.Watch
			m, err = workspace.Update(ctx, s.root.FS(), w.prev, changed, opts)
		}
		if err != nil && ctx.Err() != nil {
			return nil, err
		}
	}
	if m == nil {
		s.restartWatcherLocked()
		opts.Dir = w.watcher.Watch
		var err error
		if m, err = workspace.Scan(ctx, s.root.FS(), w.prev, opts); err != nil {
			w.watched = false
			return nil, err
		}
		if w.watcher.Err() != nil {
			// It could not watch the whole tree: it will not next time.
			w.watcher.Close()
			w.watcher, w.watched, w.noWatch = nil, false, true
		}
	}
	if err := flush(); err != nil {
		w.watched = false // what was read is not all in the store
		return nil, err
	}
	w.prev = m
	return m, nil
}

// restartWatcherLocked replaces the watcher by a new one (none after
// noWatch or when none can be made), for a full scan to set up.
func (s *Session) restartWatcherLocked() {
	w := &s.watch
	w.watcher.Close()
	w.watcher, w.watched = nil, false
	if w.noWatch {
		return
	}
	if wt, err := workspace.NewWatcher(s.root.Dir(), nil); err == nil {
		w.watcher, w.watched = wt, true
	}
}

// maxDelta is how many entries a manifest stored as a delta may differ by
// from the last one stored whole before the next is stored whole again.
func maxDelta(files int) int { return 256 + files/16 }

// putManifestLocked keeps m as a blob (unless it is the one kept last):
// as a delta against the last manifest stored whole, or whole when that
// delta has grown large. It returns the blob's digest and the digest of
// the whole manifest it is a delta against ("" when whole).
func (s *Session) putManifestLocked(ctx context.Context, bs checkpoint.BlobStore, m *workspace.Manifest) (digest, base string, err error) {
	w := &s.watch
	var data []byte
	if w.base != nil {
		d, n, err := m.EncodeDelta(w.base, w.baseDigest)
		if err == nil && n <= maxDelta(len(m.Entries)) {
			data, base = d, w.baseDigest
		}
	}
	if data == nil {
		if data, err = m.Encode(); err != nil {
			return "", "", err
		}
	}
	b := checkpoint.NewBlob(data)
	if b.Digest != w.manifest {
		if err := bs.PutBlobs(ctx, []checkpoint.Blob{b}); err != nil {
			return "", "", err
		}
		w.manifest = b.Digest
	}
	if base == "" {
		w.base, w.baseDigest = m, b.Digest
	}
	return b.Digest, base, nil
}

// loadManifest reads the manifest blob digest names, and the whole one it
// is a delta against.
func loadManifest(ctx context.Context, bs checkpoint.BlobStore, digest string) (*workspace.Manifest, error) {
	data, err := bs.Blob(ctx, digest)
	if err != nil {
		return nil, err
	}
	return workspace.Decode(data, func(base string) (*workspace.Manifest, error) {
		data, err := bs.Blob(ctx, base)
		if err != nil {
			return nil, err
		}
		return workspace.Decode(data, nil)
	})
}

// after takes the manifest after the command and returns its
// workspace_changed, to append with the receipt. If that scan fails, the
// record says so and the call's changes are listed as not undone.
func (r *shellRun) after(ctx context.Context) session.Event {
	s, w := r.s, &r.s.watch
	w.mu.Lock()
	defer w.mu.Unlock()
	rec := session.WorkspaceChanged{CallID: r.callID, Tool: r.tool, Background: r.bg}
	m, err := s.scanLocked(ctx, r.bs)
	if err != nil {
		rec.NotUndone = []session.PathNote{{Path: ".", Reason: fmt.Sprintf("the workdir could not be scanned after the command: %v", err)}}
		return mustEvent(session.TypeWorkspaceChanged, rec)
	}
	s.recordChangesLocked(ctx, r.bs, &rec, workspace.Diff(r.before, m), m)
	return mustEvent(session.TypeWorkspaceChanged, rec)
}

// recordChangesLocked fills rec from the changes between two manifests:
// each change a restore can undo, or why it cannot.
func (s *Session) recordChangesLocked(ctx context.Context, bs checkpoint.BlobStore, rec *session.WorkspaceChanged, changes []workspace.Change, after *workspace.Manifest) {
	w := &s.watch
	var need []string
	for _, c := range changes {
		if c.Before != nil && c.Before.Mode.IsRegular() && c.Before.Skipped == "" {
			need = append(need, c.Before.Digest)
		}
	}
	have, err := bs.HasBlobs(ctx, need)
	if err != nil {
		have = map[string]bool{}
	}
	for _, d := range after.Unreadable {
		rec.NotUndone = append(rec.NotUndone, session.PathNote{Path: d, Reason: "a directory that could not be read: what is in it is not tracked"})
	}
	var cmdBytes int64
	for _, c := range changes {
		pc := session.PathChange{Path: c.Path, Kind: string(c.Kind), Before: pathState(c.Before), After: pathState(c.After)}
		note := func(reason string) {
			rec.NotUndone = append(rec.NotUndone, session.PathNote{Path: c.Path, Reason: reason})
		}
		b := c.Before
		switch {
		case b == nil:
			// Created: undone by removing it.
		case b.IsDir():
			if c.After != nil && !c.After.IsDir() {
				note("a directory replaced by a file")
				continue
			}
		case b.Mode&fs.ModeSymlink != 0:
			note("a symbolic link: restore puts back regular files and directories only")
			continue
		case !b.Mode.IsRegular():
			note("not a regular file")
			continue
		case c.After != nil && c.After.IsDir():
			note("a file replaced by a directory")
			continue
		case b.Skipped != "":
			note(b.Skipped)
			continue
		case !have[b.Digest]:
			note("its content before the command is not in the store")
			continue
		case cmdBytes+b.Size > shellCommandCap:
			note(fmt.Sprintf("over the cap of %d MiB of prior content per command", shellCommandCap>>20))
			continue
		case w.spent+b.Size > shellSessionCap:
			note(fmt.Sprintf("over the cap of %d MiB of prior content per session", shellSessionCap>>20))
			continue
		default:
			cmdBytes += b.Size
			w.spent += b.Size
		}
		rec.Changes = append(rec.Changes, pc)
	}
	rec.BlobBytes = cmdBytes
}

// loadLocked reads, once, what the session's log already holds: the prior
// content its records need (for the per-session cap) and, after a restart,
// its latest manifest, so the first command's scan reads only the files
// whose stat changed since rather than the whole tree. The caller holds
// w.mu.
func (s *Session) loadLocked(ctx context.Context, bs checkpoint.BlobStore) error {
	w := &s.watch
	if w.loaded {
		return nil
	}
	var spent int64
	var last session.WorkspaceScanned
	for e, err := range s.a.store.Read(ctx, s.ID(), 1) {
		if err != nil {
			if errors.Is(err, checkpoint.ErrNotFound) {
				break
			}
			return err
		}
		switch e.Type {
		case session.TypeWorkspaceChanged:
			var rec session.WorkspaceChanged
			if e.Decode(&rec) == nil {
				spent += rec.BlobBytes
			}
		case session.TypeWorkspaceScanned:
			var ws session.WorkspaceScanned
			if e.Decode(&ws) == nil && ws.Manifest != "" {
				last = ws
			}
		}
	}
	w.spent, w.loaded = spent, true
	if w.prev != nil || last.Manifest == "" {
		return nil
	}
	// A manifest that cannot be read back is no loss: the scan reads
	// everything, as on the session's first command.
	if m, err := loadManifest(ctx, bs, last.Manifest); err == nil {
		w.prev = m
		if last.Base == "" {
			w.base, w.baseDigest = m, last.Manifest
		} else if b, err := loadManifest(ctx, bs, last.Base); err == nil {
			w.base, w.baseDigest = b, last.Base
		}
	}
	return nil
}

// pathState is a manifest entry as the log records it.
func pathState(e *workspace.Entry) *session.PathState {
	if e == nil {
		return nil
	}
	return &session.PathState{Mode: uint32(e.Mode), Size: e.Size, Digest: e.Digest}
}
