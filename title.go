package liteagent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/session"
)

// Titles: with Options.ModelTitles, the first prompt of a session that has
// no title yet starts one small model request for a title, run beside the
// turn's first model call; when the turn completes, the title is recorded as
// a session_titled event. A failed or empty title request records nothing:
// the session keeps its first prompt as title.

// Limits of the title request.
const (
	titleMaxTokens = 32
	titleTimeout   = 30 * time.Second
)

// titleJob is a title request in flight.
type titleJob struct {
	cancel context.CancelFunc
	done   chan struct{}
	title  string
}

// stop cancels the request if it still runs; a nil job is fine.
func (j *titleJob) stop() {
	if j != nil {
		j.cancel()
	}
}

// startTitle starts the title request when prompt is the first prompt of a
// session without a title; it returns nil otherwise.
func (s *Session) startTitle(ctx context.Context, st *session.State, prompt string, background bool) *titleJob {
	a := s.a
	if !a.opts.ModelTitles || background || st.Summary.Title != "" || len(st.Checkpoints()) > 0 {
		return nil
	}
	tctx, cancel := context.WithTimeout(ctx, titleTimeout)
	j := &titleJob{cancel: cancel, done: make(chan struct{})}
	req := provider.Request{
		Model:     s.Model(),
		System:    provider.TitleSystem,
		Messages:  []provider.Message{{Role: session.RoleUser, Blocks: []session.Block{{Type: session.BlockText, Text: prompt}}}},
		MaxTokens: titleMaxTokens,
	}
	go func() {
		defer close(j.done)
		resp, err := a.opts.Provider.Stream(tctx, req, nil)
		if err == nil {
			j.title = cleanTitle(textOf(resp.Blocks))
		}
	}()
	return j
}

// cleanTitle makes a model's answer a title: one line, without quotes or
// a final full stop, at most session.TitleLen runes.
func cleanTitle(s string) string {
	s = session.Title(s)
	s = strings.Trim(s, "\"'`“”‘’ ")
	s = strings.TrimSuffix(s, ".")
	return strings.TrimSpace(s)
}

// recordTitle waits for the title request and appends its title. Only a
// failed append is an error.
func (s *Session) recordTitle(ctx context.Context, j *titleJob) error {
	if j == nil {
		return nil
	}
	select {
	case <-j.done:
	case <-ctx.Done():
		return nil
	}
	if j.title == "" {
		return nil
	}
	s.hold(mustEvent(session.TypeSessionTitled, session.SessionTitled{Title: j.title, By: session.TitleByModel}))
	return nil
}

// RenameSession gives session id the title title (recorded as a
// session_titled event, so listings, pickers and search show it). An empty
// title is an error and nothing is recorded. If another writer appends to
// the session meanwhile, the rename is retried on the new head.
func (a *Agent) RenameSession(ctx context.Context, id, title string) error {
	if err := a.requirePersistent(); err != nil {
		return err
	}
	t := session.Title(title)
	if t == "" {
		return fmt.Errorf("rename %s: %w: the title is empty; give a few words", id, checkpoint.ErrInvalid)
	}
	ev := mustEvent(session.TypeSessionTitled, session.SessionTitled{Title: t, By: session.TitleByUser})
	// Sessions of this agent open on id wait, then read the new head.
	open, unlock, err := a.lockSessions(ctx, id)
	if err != nil {
		return err
	}
	defer unlock()
	for range 10 {
		sum, err := a.store.Head(ctx, id)
		if err != nil {
			return fmt.Errorf("rename %s: %w", id, err)
		}
		_, err = a.store.Append(ctx, id, sum.Head, []session.Event{ev})
		if checkpoint.IsConflict(err) {
			continue // another process appended: try on its head
		}
		if err != nil {
			return fmt.Errorf("rename %s: %w", id, err)
		}
		for _, s := range open {
			if err := s.reload(ctx); err != nil {
				return err
			}
		}
		return nil
	}
	return errors.New("rename " + id + ": other writers kept appending to the session; try again")
}
