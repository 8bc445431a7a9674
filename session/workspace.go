package session

// Events that record what shell commands and background jobs changed in
// the workdir, so that a restore can undo it like a file tool's change.
//
// Around each shell command the agent takes a manifest of the workdir
// (every file not ignored, with its stat and content digest). The first is
// stored as a blob and named by workspace_scanned, written in the same
// append as the command's tool_started: a crash before the command ends
// leaves a hazard whose review compares the workdir with it. The
// difference between the two manifests is workspace_changed, written in
// the same append as the command's tool_finished (for a background job,
// with its job_finished). The prior content of every file it names as
// undoable is a blob in the store (checkpoint.BlobStore) before that
// append is made.
const (
	TypeWorkspaceScanned Type = "workspace_scanned"
	TypeWorkspaceChanged Type = "workspace_changed"
)

// WorkspaceScanned names the manifest taken before a shell command (or a
// background job) ran.
type WorkspaceScanned struct {
	CallID string `json:"call_id,omitempty"`
	Job    string `json:"job,omitempty"`
	// Manifest is the digest of the blob holding the manifest (see package
	// workspace's Encode).
	Manifest string `json:"manifest"`
	// Base, when set, is the digest of the whole manifest Manifest is a
	// delta against (see package workspace's EncodeDelta): it must be kept
	// as long as Manifest is.
	Base  string `json:"base,omitempty"`
	Files int    `json:"files"`
}

// Change kinds of a PathChange.
const (
	ChangeCreated = "created"
	ChangeChanged = "changed"
	ChangeDeleted = "deleted"
	ChangeMode    = "mode"
)

// WorkspaceChanged is what one shell command or MCP tool call (CallID),
// or background jobs (Job, comma-separated ids), changed in the workdir,
// from the manifests taken before and after it. A job's record covers the time since the
// session's latest manifest (the end of the last command, or the job's
// start): changes made by others meanwhile are in it too.
type WorkspaceChanged struct {
	CallID string `json:"call_id,omitempty"`
	// Tool is the tool of the call (bash, an MCP tool); "" in records
	// written before it was recorded, which are all bash's.
	Tool string `json:"tool,omitempty"`
	Job  string `json:"job,omitempty"`
	// Changes are the changes a restore can undo: for each, the state
	// before (nil: it did not exist) and after (nil: it no longer does).
	Changes []PathChange `json:"changes,omitempty"`
	// NotUndone are changes a restore cannot undo, with why (over a cap,
	// not a regular file, content unreadable before the command).
	NotUndone []PathNote `json:"not_undone,omitempty"`
	// Background is set on the receipt of a command that started a
	// background job: what the job changes later is recorded when it ends.
	Background bool `json:"background,omitempty"`
	// JobCalls are the calls that started the jobs of a record written when
	// background jobs ended (Job names them): their changes are recorded.
	JobCalls []string `json:"job_calls,omitempty"`
	// BlobBytes is the size of the prior content this record needs from the
	// store (the sum of Before sizes of its undoable files).
	BlobBytes int64 `json:"blob_bytes,omitempty"`
}

// PathChange is one file or directory a command changed.
type PathChange struct {
	Path   string     `json:"path"` // relative to the workdir, slash-separated
	Kind   string     `json:"kind"` // ChangeCreated, ChangeChanged, ChangeDeleted or ChangeMode
	Before *PathState `json:"before,omitempty"`
	After  *PathState `json:"after,omitempty"`
}

// PathState is a file or directory as a manifest saw it.
type PathState struct {
	// Mode is the fs.FileMode: type bits and permissions.
	Mode uint32 `json:"mode"`
	Size int64  `json:"size,omitempty"`
	// Digest is the SHA-256 (hex) of a regular file's content, the name of
	// its blob; "" for a directory.
	Digest string `json:"digest,omitempty"`
}

// PathNote is a path with why a restore cannot undo its change.
type PathNote struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}
