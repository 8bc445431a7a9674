package file

import (
	"context"
	"fmt"
	"os"

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

// Quarantined decodes the side file a repair moved the tail of session
// id's log into, from seq from on: the events of its frames that verify
// (the damaged ones left out), as the conformance suite's Quarantined
// hook. It is compiled into tests only.
func Quarantined(s *Store, id string, from int64) ([]session.Event, error) {
	path := s.QuarantinePath(id, from)
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	fr := newFrameReader(f, path, 0, fi.Size())
	var events []session.Event
	for {
		h, _, payload, ok, bad, err := fr.next()
		switch {
		case err != nil:
			return nil, err
		case bad != nil:
			next, err := validFrameAfter(f, bad.off, fi.Size())
			if err != nil || next < 0 {
				return events, err
			}
			fr.off = next
			continue
		case !ok:
			return events, nil
		}
		raw, err := s.rawPayload(h, payload)
		if err == nil {
			events, err = decodeEvents(raw, h.firstSeq, h.count, 0, events)
		}
		if err != nil {
			return nil, err
		}
	}
}
