package session

import (
	"fmt"
	"time"
)

// Import marks a session whose log was imported from an export stream
// rather than written by turns in this store. The importer records it in
// the session_started event (SessionStarted.Imported) as it appends the
// stream, so it travels with the log: no restore or truncation can drop it,
// and a session this machine wrote never carries it. The workdir the log
// names stays information only (see workdir_changed): an imported session
// is bound to the workdir its session_started names, like any other.
type Import struct {
	// From is where the stream was read: a file's path, or "stdin".
	From string `json:"from"`
	// Host is the host name of the machine that imported it.
	Host string `json:"host,omitempty"`
	// At is when it was imported.
	At time.Time `json:"at"`
	// Head is the session's head in the store it was exported from;
	// a salvaged stream holds fewer events than that.
	Head int64 `json:"head,omitempty"`
	// Salvaged is set when the stream was salvaged from a damaged log:
	// only the events that verified came over.
	Salvaged bool `json:"salvaged,omitempty"`
	// Previous is the mark the log carried before this import (a session
	// imported, exported and imported again), nil if none. Summaries
	// keep only the newest mark.
	Previous *Import `json:"previous,omitempty"`
}

func (m *Import) String() string {
	s := fmt.Sprintf("imported from %s on %s at %s", m.From, m.Host, m.At.UTC().Format(time.RFC3339))
	if m.Salvaged {
		s += fmt.Sprintf(" (salvaged: the original log had %d events)", m.Head)
	}
	return s
}

// summaryImport is the copy of m a Summary keeps: the newest mark only.
func summaryImport(m *Import) *Import {
	if m == nil {
		return nil
	}
	c := *m
	c.Previous = nil
	return &c
}
