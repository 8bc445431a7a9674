package liteagent

import (
	"context"
	"strings"

	"github.com/lite-agent/lite-agent/jobs"
	"github.com/lite-agent/lite-agent/session"
	"github.com/lite-agent/lite-agent/workspace"
)

// jobsChanged takes a manifest when background jobs end and returns the
// workspace_changed to append with their job_finished: what changed since
// the session's latest manifest (taken when the command that started them
// returned, or by a later command). Without a blob store it returns
// false, and the jobs' commands stay listed as not undone. The caller
// holds the session's turn.
func (s *Session) jobsChanged(ctx context.Context, js []*jobs.Job) (session.Event, bool) {
	bs := s.a.blobStore()
	if bs == nil || len(js) == 0 {
		return session.Event{}, false
	}
	var ids []string
	rec := session.WorkspaceChanged{}
	for _, j := range js {
		ids = append(ids, j.ID())
		rec.JobCalls = append(rec.JobCalls, j.CallID())
	}
	rec.Job = strings.Join(ids, ",")
	w := &s.watch
	w.mu.Lock()
	defer w.mu.Unlock()
	before := w.prev
	if before == nil {
		// This process took no manifest while the jobs ran (it was
		// restarted): what they changed is not known.
		rec.JobCalls = nil
		rec.NotUndone = []session.PathNote{{Path: ".", Reason: "no workspace manifest was taken while the job ran in this process, so its changes are not known"}}
		return mustEvent(session.TypeWorkspaceChanged, rec), true
	}
	m, err := s.scanLocked(ctx, bs)
	if err != nil {
		rec.JobCalls = nil
		rec.NotUndone = []session.PathNote{{Path: ".", Reason: "the workdir could not be scanned when the job ended: " + err.Error()}}
		return mustEvent(session.TypeWorkspaceChanged, rec), true
	}
	s.recordChangesLocked(ctx, bs, &rec, workspace.Diff(before, m), m)
	return mustEvent(session.TypeWorkspaceChanged, rec), true
}
