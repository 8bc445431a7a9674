package file

import (
	"context"
	"fmt"

	"github.com/lite-agent/lite-agent/session"
)

// StoreSummary records sum as the summary of session id in its namespace
// index, for the log as it stands, as the conformance suite's StoreSummary
// hook: what an older lite-agent would have written. It is compiled into
// tests only.
func StoreSummary(s *Store, id string, sum session.Summary) error {
	folder, _, ok, err := s.lookup(id)
	if err != nil || !ok {
		return fmt.Errorf("no session %s: %v", id, err)
	}
	n := s.ns(folder)
	if err := n.ensure(context.Background()); err != nil {
		return err
	}
	n.mu.Lock()
	e := n.entries[id]
	if e == nil || !e.has {
		n.mu.Unlock()
		return fmt.Errorf("session %s has no index entry", id)
	}
	st := e.st
	n.mu.Unlock()
	st.sum = sum
	return n.write(indexRecord{kind: recSummary, id: id, st: st})
}
