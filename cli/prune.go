package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/jsonl"
	"github.com/lite-agent/lite-agent/session"
)

// prune is --prune --older-than D [--keep N] [--dry-run] [--archive FILE]:
// by the time of each session's last event (never a file's mtime), it
// removes old sessions, exporting every one to the archive file, synced,
// before deleting any. It never removes a session with interrupted tool
// calls or jobs (a job may still run), nor the parent of a session it
// keeps (undo forks and forks point at their parents).
func prune(ctx context.Context, c *config, std IO) error {
	e, err := newAgent(ctx, c, "", c.dryRun, false)
	if err != nil {
		return err
	}
	defer e.close()
	ns := e.agent.Namespace()
	if c.allWorkspaces {
		ns = ""
	}
	list, err := e.store.List(ctx, ns, checkpoint.ListOptions{})
	if err != nil {
		return err
	}
	remove, kept := pruneSet(list, time.Now().Add(-c.olderThan), c.keep)
	kept = nonNil(kept)
	switch {
	case c.dryRun:
		col, err := e.agent.CollectBlobs(ctx, &liteagent.CollectOptions{DryRun: true}) // blobs unreferenced now
		if err != nil {
			return err
		}
		return writeJSON(std.Stdout, map[string]any{"would_remove": nonNil(remove), "kept": kept, "would_collect_blobs": col})
	case len(remove) == 0:
		col, err := e.agent.CollectBlobs(ctx, nil)
		if err != nil {
			return err
		}
		return writeJSON(std.Stdout, map[string]any{"removed": []string{}, "kept": kept, "collected_blobs": col})
	}
	path := c.archive
	if path == "" {
		base := c.sessionDB
		if isPostgresURL(base) {
			base = filepath.Join(".", "lite-agent")
		}
		path = fmt.Sprintf("%s.archive-%s.jsonl", base, time.Now().UTC().Format("20060102T150405Z"))
	}
	if err := writeArchive(ctx, e.store, remove, path); err != nil {
		return err
	}
	var removed []string
	for _, id := range remove {
		if err := e.agent.DeleteSession(ctx, id); err != nil {
			writeJSON(std.Stdout, map[string]any{"removed": nonNil(removed), "archive": path, "kept": kept})
			return fmt.Errorf("prune: %w (the archive %s holds every session it was to remove)", err, path)
		}
		removed = append(removed, id)
	}
	// The blobs only the removed sessions named go too (the archive keeps
	// the logs, not the blobs: an imported session lists those shell
	// changes as not undone).
	col, err := e.agent.CollectBlobs(ctx, nil)
	if err != nil {
		return fmt.Errorf("prune: the sessions were removed, collecting their blobs failed (run --prune again): %w", err)
	}
	return writeJSON(std.Stdout, map[string]any{"removed": removed, "archive": path, "kept": kept, "collected_blobs": col})
}

// keptJSON says why a session old enough to go was kept.
type keptJSON struct {
	ID     string `json:"id"`
	Reason string `json:"reason"`
}

// pruneSet picks the sessions of list (newest first) to remove: last
// event before cutoff, not among the keep newest, no hazards, not the
// parent of a session that stays.
func pruneSet(list []session.Summary, cutoff time.Time, keep int) (remove []string, kept []keptJSON) {
	stays := make(map[string]bool, len(list))
	old := map[string]bool{}
	for i, s := range list {
		switch {
		case i < keep || !s.Updated.Before(cutoff):
			stays[s.ID] = true
		case s.Hazards() > 0:
			stays[s.ID] = true
			kept = append(kept, keptJSON{s.ID, fmt.Sprintf("%d interrupted tool call(s) or job(s) to review", s.Hazards())})
		default:
			old[s.ID] = true
		}
	}
	// A session that stays keeps its parent, and so on up.
	for changed := true; changed; {
		changed = false
		for _, s := range list {
			if p := s.Parent; p != nil && stays[s.ID] && old[p.Session] {
				delete(old, p.Session)
				stays[p.Session] = true
				kept = append(kept, keptJSON{p.Session, "a kept session (fork or undo fork " + s.ID + ") refers to it"})
				changed = true
			}
		}
	}
	for _, s := range list {
		if old[s.ID] {
			remove = append(remove, s.ID)
		}
	}
	return remove, kept
}

// writeArchive exports ids to a new file at path, one stream after the
// other, and syncs it and its directory.
func writeArchive(ctx context.Context, store checkpoint.Checkpointer, ids []string, path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("prune: create the archive: %w; nothing was removed", err)
	}
	for _, id := range ids {
		if err := jsonl.Export(ctx, store, id, f); err != nil {
			f.Close()
			return fmt.Errorf("prune: archive %s: %w; nothing was removed (the partial archive is %s)", id, err, path)
		}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("prune: sync the archive: %w; nothing was removed", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("prune: %w; nothing was removed", err)
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("prune: %w; nothing was removed", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("prune: sync the archive's directory: %w; nothing was removed", err)
	}
	return nil
}
