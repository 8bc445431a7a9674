package session

// Event types that guard the files a session touches: a deliberate move to
// another workdir, and a restore's claim on the log.
const (
	// TypeWorkdirChanged records that the user re-targeted the session to
	// another workdir on purpose. From then on the session's workdir (its
	// Summary.Workdir) is To; the workdir its session_started names is only
	// where it began.
	TypeWorkdirChanged Type = "workdir_changed"
	// TypeRestoreStarted is appended at the head a restore read, before the
	// restore writes any file: a writer still holding the old head loses
	// the race with a conflict. While it ends the log, the session's status
	// is StatusRestoring and no turn runs; re-running the restore finishes
	// it, and its truncation removes the event.
	TypeRestoreStarted Type = "restore_started"
)

// StatusRestoring is the status of a session whose log ends with a
// restore_started event: a restore claimed it and has not finished (it is
// running, or it was cut off and re-running it finishes the job).
const StatusRestoring Status = "restoring"

// WorkdirChanged is the payload of workdir_changed.
type WorkdirChanged struct {
	From string `json:"from"` // the workdir the session had
	To   string `json:"to"`   // the canonical workdir it works in from now on
}

// RestoreStarted is the payload of restore_started.
type RestoreStarted struct {
	ToSeq int64  `json:"to_seq"` // the checkpoint the restore rewinds to
	Head  int64  `json:"head"`   // the head the restore read (this event is Head+1)
	Undo  string `json:"undo"`   // the session that keeps the log as it was
	// Workdir is the canonical workdir the restore writes in.
	Workdir string `json:"workdir"`
	// Paths are the files the restore may write (workdir-relative,
	// slash-separated): a run cut off while writing one leaves a
	// temporary file beside it, which the next run, resume or
	// acknowledgement removes. Absent in claims of earlier versions.
	Paths []string `json:"paths,omitempty"`
}
