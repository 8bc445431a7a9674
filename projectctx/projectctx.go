// Package projectctx builds the project context lite-agent adds to the
// system prompt when a session starts: a short description of the
// environment (the canonical workdir, the platform, today's date, whether
// the workdir is in a git repository, its branch and a short status) and the
// instruction files the user and the project wrote for agents.
//
// The instruction files are read in this order, each later one more
// specific than the ones before it:
//
//  1. the user-level file, $XDG_CONFIG_HOME/lite-agent/AGENTS.md (or
//     ~/.config/lite-agent/AGENTS.md);
//  2. AGENTS.md in the repository root, then in each directory below it down
//     to the workdir (the workdir's own file last); outside a git
//     repository only the workdir is looked at;
//  3. in any of those directories that has no AGENTS.md, CLAUDE.md is read
//     in its place.
//
// A file larger than Options.MaxFileBytes is cut there, with a note saying
// so. Build only reads files and runs git (with a short timeout); it writes
// nothing.
package projectctx

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lite-agent/lite-agent/session"
)

// Defaults of Options.
const (
	// DefaultMaxFileBytes is how much of one instruction file is kept.
	DefaultMaxFileBytes = 32 << 10
	// DefaultGitTimeout bounds each git command.
	DefaultGitTimeout = 2 * time.Second
	// maxStatusLines is how many lines of `git status --short` are shown.
	maxStatusLines = 30
)

// Options configures Build. The zero value (or nil) gives the defaults.
type Options struct {
	// UserFile is the user-level instruction file; empty means
	// UserFile(), "-" means none.
	UserFile string
	// MaxFileBytes caps each instruction file; 0 means DefaultMaxFileBytes.
	MaxFileBytes int
	// GitTimeout bounds each git command; 0 means DefaultGitTimeout.
	GitTimeout time.Duration
	// Now gives today's date; nil means time.Now.
	Now func() time.Time
}

// File is an instruction file that was read, as the session log records
// it.
type File = session.ContextFile

// Scopes of instruction files.
const (
	ScopeUser    = session.ScopeUser
	ScopeProject = session.ScopeProject
)

// Context is the project context of one session start.
type Context struct {
	// Text is what goes into the system prompt, after the agent's own
	// prompt.
	Text string
	// Files are the instruction files read, in the order of Text.
	Files []File
}

// UserFile returns the user-level instruction file's path:
// $XDG_CONFIG_HOME/lite-agent/AGENTS.md, else ~/.config/lite-agent/AGENTS.md;
// "" when neither can be found.
func UserFile() string {
	if d := os.Getenv("XDG_CONFIG_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "lite-agent", "AGENTS.md")
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return ""
	}
	return filepath.Join(home, ".config", "lite-agent", "AGENTS.md")
}

// Build builds the project context of workdir, which should be canonical
// (absolute, symlinks resolved). Unreadable instruction files are skipped
// with a note in Text; only a cancelled ctx is an error.
func Build(ctx context.Context, workdir string, opts *Options) (*Context, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = DefaultMaxFileBytes
	}
	if o.GitTimeout <= 0 {
		o.GitTimeout = DefaultGitTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.UserFile == "" {
		o.UserFile = UserFile()
	}
	root := repoRoot(workdir)
	var b strings.Builder
	b.WriteString("# Environment\n\n")
	fmt.Fprintf(&b, "Working directory: %s\n", workdir)
	fmt.Fprintf(&b, "Platform: %s/%s\n", runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(&b, "Today's date: %s\n", o.Now().Format("2006-01-02"))
	if root == "" {
		b.WriteString("Git repository: no\n")
	} else {
		gitInfo(ctx, &b, workdir, root, o.GitTimeout)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	c := &Context{}
	var files strings.Builder
	add := func(path, scope string) {
		text, f, err := readCapped(path, o.MaxFileBytes)
		if errors.Is(err, fs.ErrNotExist) {
			return
		}
		f.Scope = scope
		if err != nil {
			fmt.Fprintf(&files, "\n## %s (%s; could not be read: %v)\n", path, scope, err)
			return
		}
		c.Files = append(c.Files, f)
		fmt.Fprintf(&files, "\n## %s (%s)\n\n%s", path, scope, text)
		if !strings.HasSuffix(text, "\n") {
			files.WriteByte('\n')
		}
		if f.Cut {
			fmt.Fprintf(&files, "\n[lite-agent: this file is %d bytes; only its first %d bytes are shown. Read the file with the read tool if you need the rest.]\n", f.Bytes, o.MaxFileBytes)
		}
	}
	if o.UserFile != "-" && o.UserFile != "" {
		add(o.UserFile, ScopeUser)
	}
	for _, dir := range dirsDown(root, workdir) {
		agents := filepath.Join(dir, "AGENTS.md")
		if _, err := os.Stat(agents); err == nil {
			add(agents, ScopeProject)
			continue
		}
		add(filepath.Join(dir, "CLAUDE.md"), ScopeProject)
	}
	if files.Len() > 0 {
		b.WriteString("\n# Instructions\n\nThe user and the project left these instructions for agents. Follow them; where they disagree, the later (more specific) file wins.\n")
		b.WriteString(files.String())
	}
	c.Text = b.String()
	return c, nil
}

// repoRoot returns the nearest directory at or above dir holding .git (a
// directory, or the file of a worktree), "" when there is none.
func repoRoot(dir string) string {
	for d := dir; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return ""
		}
		d = parent
	}
}

// dirsDown lists root, each directory below it on the way to workdir, and
// workdir; only workdir when root is "" (or not above it).
func dirsDown(root, workdir string) []string {
	rel, err := filepath.Rel(root, workdir)
	if root == "" || err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return []string{workdir}
	}
	out := []string{root}
	if rel == "." {
		return out
	}
	d := root
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		d = filepath.Join(d, part)
		out = append(out, d)
	}
	return out
}

// readCapped reads up to max bytes of path, cut back to a whole UTF-8
// character.
func readCapped(path string, max int) (string, File, error) {
	f := File{Path: path}
	fh, err := os.Open(path)
	if err != nil {
		return "", f, err
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return "", f, err
	}
	if fi.IsDir() {
		return "", f, fs.ErrNotExist
	}
	f.Bytes = fi.Size()
	data, err := io.ReadAll(io.LimitReader(fh, int64(max)+1))
	if err != nil {
		return "", f, err
	}
	if len(data) > max {
		// Step back to the start of the character the cut falls in.
		i := max
		for j := 0; j < utf8.UTFMax && i > 0 && !utf8.RuneStart(data[i]); j++ {
			i--
		}
		data = data[:i]
		f.Cut = true
	}
	return string(data), f, nil
}

// gitInfo writes the branch and a short status of the repository.
func gitInfo(ctx context.Context, b *strings.Builder, workdir, root string, timeout time.Duration) {
	fmt.Fprintf(b, "Git repository: yes, rooted at %s\n", root)
	if branch, err := git(ctx, workdir, timeout, "symbolic-ref", "--short", "HEAD"); err == nil {
		fmt.Fprintf(b, "Git branch: %s\n", strings.TrimSpace(branch))
	} else if rev, err := git(ctx, workdir, timeout, "rev-parse", "--short", "HEAD"); err == nil {
		fmt.Fprintf(b, "Git branch: none (detached at %s)\n", strings.TrimSpace(rev))
	}
	status, err := git(ctx, workdir, timeout, "status", "--short", "--untracked-files=normal")
	if err != nil {
		return // git is missing or refuses the repository
	}
	lines := strings.Split(strings.TrimRight(status, "\n"), "\n")
	if status == "" {
		b.WriteString("Git status: clean\n")
		return
	}
	b.WriteString("Git status (short, at session start):\n")
	for i, l := range lines {
		if i == maxStatusLines {
			fmt.Fprintf(b, "… and %d more\n", len(lines)-maxStatusLines)
			break
		}
		b.WriteString(l)
		b.WriteByte('\n')
	}
}

// git runs one git command in dir and returns its standard output.
func git(ctx context.Context, dir string, timeout time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir, "--no-optional-locks"}, args...)...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "LC_ALL=C")
	if err := cmd.Run(); err != nil {
		return "", err
	}
	return out.String(), nil
}
