package file

import (
	"fmt"

	"github.com/lite-agent/lite-agent/checkpoint"
)

// Integrity. Every frame carries a CRC32C over its header and its stored
// payload, so a changed byte in an event is caught where the frame is read.
// A log cut short is caught by comparing it with the index: the summary
// record a writer appends after its frames are synced names the head they
// reached, so a log that ends before the head its index recorded lost
// acknowledged events. Only intents can make the index run ahead of a log
// legitimately (a Truncate or Delete that had begun), and those are synced
// before the log is changed, so they survive a power cut too; a session
// with an intent outstanding is not compared.

// corruptError describes damage in the middle of the log of session id at
// path: the record at offset off, after seq lastSeq, is not what it must
// be; nextValid is the offset of a valid record after it, -1 if none.
func corruptError(id, path string, off, lastSeq int64, reason string, nextValid int64) error {
	where := ""
	if nextValid >= 0 {
		where = fmt.Sprintf(", and valid records follow at offset %d", nextValid)
	}
	return &checkpoint.CorruptError{Session: id, Seq: lastSeq + 1,
		Reason: fmt.Sprintf("in %s the record at offset %d, after seq %d, is damaged (%s)%s", path, off, lastSeq, reason, where)}
}

// cutError describes a log of session id at path that ends after seq head
// (size bytes) while the index recorded head recorded.
func cutError(id, path string, head, size, recorded int64) error {
	return &checkpoint.CorruptError{Session: id, Seq: head + 1,
		Reason: fmt.Sprintf("%s ends after seq %d (%d bytes), but the store recorded head %d when the session was last written: the log was cut short and events %d to %d are lost from it", path, head, size, recorded, head+1, recorded)}
}

// recorded returns the head the index of folder recorded for session id,
// 0 when it records none or a change of the log is outstanding (an intent
// with no summary after it). It reads the records appended since the last
// look and never waits for a lock, so it may be called with the session's
// log locked.
func (s *Store) recorded(folder, id string) (int64, error) {
	n := s.ns(folder)
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.refreshLocked(); err != nil {
		return 0, err
	}
	e := n.entries[id]
	if e == nil || !e.has || e.pending {
		return 0, nil
	}
	return e.st.head(), nil
}

// syncRecords makes the records written so far durable. Truncate and
// Delete call it after their intent record, before they shorten or remove
// a log: the index must never outlive a change it did not announce.
func (n *nsIndex) syncRecords() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.f == nil {
		return nil
	}
	if err := datasync(n.f); err != nil {
		return fmt.Errorf("sync index %s: %w", n.path, err)
	}
	return nil
}
