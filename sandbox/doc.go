// Package sandbox confines the shell commands the agent runs, never the
// agent itself. A command is started through a launcher: the agent's own
// binary re-executed with a marker argument, which applies the policy to
// itself (Linux Landlock, through github.com/landlock-lsm/go-landlock) and
// then executes the shell. Landlock rules are inherited by every process
// the shell starts, background jobs included, and cannot be lifted by
// them.
//
// Modes:
//
//   - read-only: the command may read and execute anything, and write
//     nothing but /dev/null and its kin.
//   - workspace-write: as read-only, plus writes (create, change, delete,
//     rename) under the workdir, the extra allowed paths and the temp dir.
//   - off: no confinement.
//
// With NoNetwork the command also runs in a new, empty network namespace
// where the kernel permits one (as root, or through a user namespace),
// and Landlock refuses TCP connect and bind where the kernel's Landlock
// can (ABI 4 and later).
//
// What it does not stop: reading any file the user can read (secrets
// included), using the network when NoNetwork is not set, signals to and
// ptrace of processes outside the sandbox where the kernel's Landlock has
// no scoping (ABI before 6), and anything on a kernel without Landlock,
// where commands run unconfined (Check says so; Require makes it an
// error).
//
// Every binary that starts sandboxed commands must call Launch first
// thing in main (and test binaries in TestMain).
package sandbox
