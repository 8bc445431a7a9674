package liteagent

import (
	"io/fs"
	"path"
	"slices"

	"github.com/lite-agent/lite-agent/session"
)

// missingDirs returns the directories above paths (workdir-relative) that
// do not exist yet, shallowest first: a file tool that writes there will
// create them, and a restore should remove them again.
func (s *Session) missingDirs(paths []string) []string {
	var out []string
	for _, p := range paths {
		for d := path.Dir(p); d != "." && d != "/" && !slices.Contains(out, d); d = path.Dir(d) {
			loc, err := s.root.Locate(d)
			if err != nil {
				break
			}
			if _, err := loc.FS.Lstat(loc.Name); err == nil {
				break
			}
			out = append(out, d)
		}
	}
	slices.Sort(out)
	return out
}

// dirsCreated records, for the receipt of a file tool, which of the
// directories that were missing before it ran exist now.
func (s *Session) dirsCreated(callID string, missing []string) (session.Event, bool) {
	rec := session.WorkspaceChanged{CallID: callID}
	for _, d := range missing {
		loc, err := s.root.Locate(d)
		if err != nil {
			continue
		}
		if fi, err := loc.FS.Lstat(loc.Name); err == nil && fi.IsDir() {
			rec.Changes = append(rec.Changes, session.PathChange{Path: d, Kind: session.ChangeCreated, After: &session.PathState{Mode: uint32(fs.ModeDir | fi.Mode().Perm())}})
		}
	}
	if len(rec.Changes) == 0 {
		return session.Event{}, false
	}
	return mustEvent(session.TypeWorkspaceChanged, rec), true
}
