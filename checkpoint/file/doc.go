// Package file is the default checkpoint.Checkpointer of lite-agent: every
// session is an append-only log file under a root directory, one folder per
// namespace. Several goroutines and several processes on one host may use
// one root at once; they coordinate with flock(2) locks. Network file
// systems are not supported.
//
//	store, err := file.Open(filepath.Join(home, ".lite-agent", "sessions"), nil)
//
// # Layout
//
//	<root>/FORMAT                  "lite-agent file store\nformat 1\n"
//	<root>/ids/<id>                symlink to ../ns/<folder>/<id>.log
//	<root>/ns/<folder>/namespace   the namespace string, as given
//	<root>/ns/<folder>/<id>.log    the log of session <id>: the truth
//	<root>/ns/<folder>/<id>.fold   the saved state of session <id> (checkpoint.FoldKeeper,
//	                               derived, see fold.go), renamed into place without an fsync
//	<root>/ns/<folder>/index       summaries of the folder's sessions (derived)
//	<root>/ns/<folder>/index.lock  empty; locked while the index is written
//	<root>/blobs/<xx>/<digest>     a blob (checkpoint.BlobStore): the raw content whose
//	                               SHA-256 is <digest> (hex; <xx> its first two digits),
//	                               written to a temp file and renamed; shared by every session
//
// Directories are created with mode 0700 and files with mode 0600.
//
// A namespace (usually an absolute workdir path) is stored in the folder
// <base>-<hash>: <base> is its last path element with every byte other than
// letters, digits, '-', '_' and '.' replaced by '_', leading dots removed,
// cut to 40 bytes ("ns" if nothing is left); <hash> is the first 6 bytes of
// the SHA-256 of the whole namespace string, in lower-case hex. So
// "/home/ann/src/shop" is stored in "shop-ec111902a8fa", and two projects
// both named "shop" do not meet.
//
// Session ids are opaque, but they are file names here: 1 to 200 ASCII
// letters, digits, '-', '_' or '.', not starting with '.'; other ids are
// rejected with checkpoint.ErrInvalid. On a case-insensitive file system,
// ids that differ only in case name the same session.
//
// The flat directory ids/ finds a session's folder from its id alone
// (Head, Read, Append, Truncate and Delete take only an id). A mapping is
// created before its log and removed after it, so a crash leaves at worst a
// mapping to a missing or empty log, which reads as no session and is
// replaced when the id is created again.
//
// # Logs
//
// A log is a 16-byte header followed by frames:
//
//	header: "LITEAGENT-LOG\n" 0x00 0x01   (name, then format version 1, big-endian)
//
// Each frame holds the events of one commit: one Append, or several Appends
// of one session committed together (group commit). All integers are
// little-endian:
//
//	off size field
//	  0    4 magic "LAfr"
//	  4    4 CRC32C (Castagnoli) of bytes 8..32 of the header and the payload
//	  8    4 stored payload length
//	 12    1 encoding: 0 raw, 1 zstd
//	 13    3 reserved, zero
//	 16    8 seq of the first event
//	 24    4 number of events (≥ 1)
//	 28    4 raw (decoded) payload length
//	 32    … payload
//
// The raw payload is the frame's events one after the other, each
//
//	uvarint type length, type bytes,
//	varint Unix seconds, uvarint nanoseconds (the event time, UTC),
//	uvarint data length, data bytes (the event's JSON payload, as given)
//
// and the seq of an event is the frame's first seq plus its index. With the
// zstd encoding the stored payload is the raw payload compressed as one zstd
// frame (without zstd's own checksum; the CRC covers it). Every frame names
// its own encoding, so Options.Encoding only decides how new frames are
// written, and a store reads logs written with either setting. The envelope
// (seq, type, time) is read without parsing the JSON payload, and Read hands
// the payload out as it is stored, without copying or re-parsing it.
//
// Frames are contiguous in seq, from 1 up to the head. A frame is written
// with one pwrite after the previous end, then the file is fdatasync'ed
// (fsync where fdatasync is missing); the first frame also syncs the
// folder, and creating a mapping syncs ids/. Append returns only after that.
//
// # Damage
//
// A process killed mid-write, or a machine that loses power, can leave a
// torn tail: bytes after the last good frame that are not a whole frame
// with a good checksum. Nothing in a torn tail was ever acknowledged. Reads
// stop before it; the next writer of the session cuts it off (ftruncate and
// sync) before appending. Read-only stores never cut it.
//
// A frame that is damaged while a good frame follows it (found by searching
// the rest of the file for the frame magic) is not a torn tail: it is
// corruption, and cutting there would lose acknowledged events. Nor is a
// log that ends (torn or not) before the head the index recorded for it in
// a summary record: summaries are written only after the frames they
// describe were synced, and the intents of Truncate and Delete are synced
// before they shorten or remove a log, so only damage (a log cut short, a
// flipped byte in an acknowledged frame, a removed file) explains it; the
// index is not compared while an intent of the session is outstanding. In
// both cases Append, Truncate and Read (after the events before the
// damage) fail with a *checkpoint.CorruptError (ErrCorrupt) that names the
// session, the first seq lost, the file and the offset. Nothing on disk is
// changed and nothing is appended after the damage; the events before it
// can be read out (the command line's --export ID --salvage), and the file
// moved out of the store to go on without it.
//
// Read checks the checksum of every frame it reads. A writer checks every
// frame of a log file once, the first time its process writes to that file
// (checksums and seqs only; nothing is decoded), and after that only the
// frames other writers appended since it last held the lock.
//
// # Locks
//
// Every change to a log (Append, Truncate, Delete) happens under an
// exclusive flock on the log file; the head check and the seq allocation
// are made under it. Read takes a shared flock only long enough to note the
// log's size, then reads that snapshot unlocked: frames are never rewritten
// in place, and Truncate builds the shortened log in <id>.log.tmp and
// renames it over the log, so a reader of the old file still sees whole
// frames. Whoever waits for a log's lock checks afterwards that the path
// still names the file it locked (it may have been replaced or removed
// meanwhile) and starts again if not.
//
// In one process, concurrent Appends to one session are batched: while one
// commit runs, the next ones queue and are then written as one frame with
// one sync, each still checked against the head on its own.
//
// # Index
//
// Listing must not read logs, so each namespace folder has an index: a
// journal of records, each
//
//	CRC32C of the rest (4 bytes), length of the payload (4 bytes), payload
//
// after the 16-byte header "LITEAGENT-IDX\n" 0x00 0x01. The first record
// is H (a header record) with the boot id of the machine when the file was
// written. The payload of a record is a kind byte, the session id (uvarint
// length and bytes) and, by kind:
//
//	I  intent: a writer holding the session's log is about to change it
//	S  summary: the session.Summary after the change, and a token pinning
//	   it to the log: the log's size, the offset of its last frame and
//	   that frame's CRC (then the summary fields; see record.go)
//	D  the session was deleted
//
// A writer appends I before it touches the log and S after the sync, under a
// shared flock on index.lock; records are appended with O_APPEND and never
// synced. A process keeps the index in memory and only reads what was
// appended since it last looked (one stat when nothing was). Head and List
// answer from it; neither reads a log.
//
// The log stays the truth and the index is rebuilt from the logs whenever
// it cannot be trusted:
//
//   - an I with no S after it is a writer that died between the two; the
//     session's log is folded again from the last S's token (or from the
//     start if the token no longer matches), unless a writer holds the log;
//   - an index written before the machine last booted (its H record names
//     another boot id) may have lost records that were never synced: every
//     entry's token is checked against its log (one stat and one 32-byte
//     read each), logs the index lacks are found by listing the folder, and
//     whatever does not match is folded again;
//   - a missing index, or one with a damaged record followed by others, is
//     rebuilt the same way.
//
// A writable store then rewrites the index (index.tmp, synced, renamed over
// index) under an exclusive flock on index.lock; it also rewrites it when
// superseded records outnumber live ones by far. A read-only store does all
// of this in memory only.
//
// # Versions
//
// FORMAT, every log header and every index header carry a format version,
// and every summary record its fold version. A build that changes a
// layout raises its version; this build refuses a file of a newer version
// than it knows, and a summary of a newer fold, with a *session.NewerError
// (checkpoint.ErrNewer: upgrade), and changes nothing, instead of taking
// them for damage (an index would be rebuilt in the older format).
//
// # Resources
//
// A Store keeps up to 64 idle logs open between appends, and two files
// (index and index.lock) for every namespace it has used, until Close.
//
// # Read-only
//
// Options.ReadOnly opens a root without creating or changing any file: no
// torn-tail repair, no index rewrite (shared locks are still taken). Every
// write returns checkpoint.ErrReadOnly.
package file
