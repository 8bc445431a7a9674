package memory

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lite-agent/lite-agent/checkpoint"
)

var _ checkpoint.Mailbox = (*Store)(nil)

// mailKey names one mailbox entry.
type mailKey struct{ session, call string }

// Post implements checkpoint.Mailbox.
func (s *Store) Post(ctx context.Context, id, call, kind string, request []byte) error {
	if err := checkpoint.CheckMail(id, call, kind); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("post %s/%s: %w", id, call, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("post %s/%s: %w", id, call, checkpoint.ErrClosed)
	}
	if s.sessions[id] == nil {
		return fmt.Errorf("post %s/%s: %w", id, call, checkpoint.ErrNotFound)
	}
	if s.mail == nil {
		s.mail = map[mailKey]checkpoint.Mail{}
	}
	s.mail[mailKey{id, call}] = checkpoint.Mail{Session: id, Call: call, Kind: kind, Request: clone(request), Posted: time.Now().UTC()}
	return nil
}

// Answer implements checkpoint.Mailbox.
func (s *Store) Answer(ctx context.Context, id, call, kind string, answer []byte) error {
	if err := checkpoint.CheckMail(id, call, kind); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("answer %s/%s: %w", id, call, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("answer %s/%s: %w", id, call, checkpoint.ErrClosed)
	}
	m, ok := s.mail[mailKey{id, call}]
	switch {
	case !ok || m.Kind != kind:
		return fmt.Errorf("answer %s/%s: %w", id, call, checkpoint.ErrNotFound)
	case m.Answer != nil:
		return fmt.Errorf("answer %s/%s: %w", id, call, checkpoint.ErrAnswered)
	}
	m.Answer = clone(answer)
	if m.Answer == nil {
		m.Answer = []byte{}
	}
	s.mail[mailKey{id, call}] = m
	return nil
}

// Mail implements checkpoint.Mailbox.
func (s *Store) Mail(ctx context.Context, id string) ([]checkpoint.Mail, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("mail %s: %w", id, err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, fmt.Errorf("mail %s: %w", id, checkpoint.ErrClosed)
	}
	var out []checkpoint.Mail
	for k, m := range s.mail {
		if k.session == id {
			m.Request, m.Answer = clone(m.Request), clone(m.Answer)
			out = append(out, m)
		}
	}
	slices.SortFunc(out, func(a, b checkpoint.Mail) int {
		if c := a.Posted.Compare(b.Posted); c != 0 {
			return c
		}
		return strings.Compare(a.Call, b.Call)
	})
	return out, nil
}

// Unpost implements checkpoint.Mailbox.
func (s *Store) Unpost(ctx context.Context, id, call string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("unpost %s/%s: %w", id, call, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("unpost %s/%s: %w", id, call, checkpoint.ErrClosed)
	}
	s.unpost(id, call)
	return nil
}

// unpost removes call's entry of session id, or all of them for call "".
// The caller holds s.mu.
func (s *Store) unpost(id, call string) {
	for k := range s.mail {
		if k.session == id && (call == "" || k.call == call) {
			delete(s.mail, k)
		}
	}
}

// Mailboxes implements checkpoint.Mailbox.
func (s *Store) Mailboxes(ctx context.Context) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("mailboxes: %w", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, fmt.Errorf("mailboxes: %w", checkpoint.ErrClosed)
	}
	var out []string
	for k := range s.mail {
		if !slices.Contains(out, k.session) {
			out = append(out, k.session)
		}
	}
	slices.Sort(out)
	return out, nil
}
