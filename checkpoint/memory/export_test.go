package memory

import "github.com/lite-agent/lite-agent/session"

// Damage runs f on the stored events of session id, under the store's lock,
// as the conformance suite's damage hook: the events, their checksums and
// the recorded head, to change in place. It is compiled into tests only.
func Damage(s *Store, id string, f func(events *[]session.Event, sums *[]uint32, head *int64)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.sessions[id]
	f(&l.events, &l.sums, &l.summary.Head)
}

// StoreSummary replaces the stored summary of session id, as the
// conformance suite's StoreSummary hook.
func StoreSummary(s *Store, id string, sum session.Summary) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sessions[id].summary = sum
}
