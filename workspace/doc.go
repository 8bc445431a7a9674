// Package workspace takes manifests of a workdir and tells two of them
// apart: what a shell command (or anything else) created, changed, deleted
// or chmod-ed between them.
//
// A Manifest lists every file and directory under the workdir that is not
// ignored, with the same rules as the search tools (package tool/walk:
// .gitignore and .ignore at every level, .git/info/exclude, hidden names
// skipped unless asked for, .git never entered). Each file carries its
// size, modification time, mode and inode; its content is hashed (SHA-256)
// only when those differ from the previous manifest's entry, the way git's
// index avoids rehashing a clean tree. A file whose modification time is
// too close to when the previous manifest was taken is hashed again
// (git's "racily clean" case): a write in the same clock tick would
// otherwise go unseen.
//
// Scan lists directories on several goroutines (Options.Workers) and, on
// Linux, lstats each entry relative to its directory's descriptor with no
// FileInfo per entry, so a warm scan costs little more than its system
// calls; its manifest is exactly the sequential walk's (Workers: 1).
//
// The package knows nothing of sessions or stores: Options.Keep hands each
// content it read to the caller (the SDK keeps it as a blob), and a
// manifest encodes itself (Encode, Decode) for whoever stores it.
package workspace
