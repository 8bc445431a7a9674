//go:build unix

package workspace_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/lite-agent/lite-agent/tool/walk"
	"github.com/lite-agent/lite-agent/workspace"
)

// asNobody names the environment variable under which a test binary run
// by TestParallelScanEqualsWalk as an unprivileged user knows it.
const asNobody = "LITE_AGENT_TEST_SCAN_AS_NOBODY"

// parallelTree makes a tree where the sequential walk and a parallel scan
// could part: ignore files at several levels with negations, hidden names,
// .git with an exclude file, names that sort around "/", nested and empty
// directories, symlinks (to a file, to a directory, dangling), a FIFO,
// special mode bits, a directory wide enough to be split among workers,
// and directories that cannot be listed (unless the process is root).
func parallelTree(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		".gitignore": "*.log\nbuild/\n!keep.log\n", ".git/HEAD": "ref", ".git/info/exclude": "excluded.txt\n",
		"excluded.txt": "x", "run.log": "x", "keep.log": "k", "build/out": "x", "main.go": "package main",
		".env": "SECRET=1", ".hidden/inside.txt": "h",
		"a": "", "a.txt": "a", "a-b/c": "c", "a b": "space",
		"sub/.ignore": "secret*\n", "sub/secret.txt": "s", "sub/open.txt": "o", "sub/deeper/.gitignore": "!*.log\n",
		"sub/deeper/kept.log": "l", "sub/deeper/x/y/z/leaf.txt": "leaf", "locked/inside.txt": "l", "shut/in.txt": "s",
	}
	for d := range 12 {
		for f := range 7 {
			files[fmt.Sprintf("wide/d%02d/f%d.txt", d, f)] = fmt.Sprint(d, f)
		}
	}
	write(t, dir, files)
	for _, p := range []string{"empty", "wide/d03/empty", "sticky"} {
		if err := os.MkdirAll(filepath.Join(dir, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink("a.txt", filepath.Join(dir, "link")))
	must(os.Symlink("sub", filepath.Join(dir, "dirlink")))
	must(os.Symlink("nowhere", filepath.Join(dir, "wide/dangling")))
	must(mkfifo(filepath.Join(dir, "pipe")))
	must(os.Chmod(filepath.Join(dir, "sticky"), 0o1777|os.ModeSticky))
	must(os.Chmod(filepath.Join(dir, "main.go"), 0o755|os.ModeSetuid|os.ModeSetgid))
	must(os.Chmod(filepath.Join(dir, "locked"), 0))
	must(os.Chmod(filepath.Join(dir, "shut"), 0o300)) // searchable, not listable
	t.Cleanup(func() {
		os.Chmod(filepath.Join(dir, "locked"), 0o755)
		os.Chmod(filepath.Join(dir, "shut"), 0o755)
	})
	return dir
}

// scanned is one Scan's result and what it called.
type scanned struct {
	M    *workspace.Manifest
	Kept []string // path and digest of each content handed to Keep, sorted
	Dirs []string // the directories given to Dir, sorted
}

func scanWith(t *testing.T, r *os.Root, prev *workspace.Manifest, wo *walk.Options, workers int) scanned {
	t.Helper()
	var s scanned
	var mu sync.Mutex
	m, err := workspace.Scan(t.Context(), r, prev, &workspace.Options{
		Walk: wo, Workers: workers, Now: later,
		Keep: func(p, digest string, _ []byte) error {
			mu.Lock()
			defer mu.Unlock()
			s.Kept = append(s.Kept, p+" "+digest)
			return nil
		},
		Dir: func(p string) {
			mu.Lock()
			defer mu.Unlock()
			s.Dirs = append(s.Dirs, p)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	s.M = m
	slices.Sort(s.Kept)
	slices.Sort(s.Dirs)
	return s
}

// A scan with several workers gives exactly the sequential walk's
// manifest, cold and warm, for every walk option, and calls Keep and Dir
// for the same paths.
func TestParallelScanEqualsWalk(t *testing.T) {
	if os.Getuid() == 0 && os.Getenv(asNobody) == "" {
		// Root lists every directory: run the test again as nobody, so
		// that the locked ones are unreadable for real.
		t.Run("AsNobody", runAsNobody)
	}
	dir := parallelTree(t)
	r := openRoot(t, dir)
	for _, wo := range []*walk.Options{nil, {Hidden: true}, {NoIgnore: true}, {Hidden: true, NoIgnore: true}} {
		name := fmt.Sprintf("%+v", wo)
		seq := scanWith(t, r, nil, wo, 1)
		if len(seq.Kept) == 0 || len(seq.Dirs) < 15 {
			t.Fatalf("%s: the sequential scan kept %d contents in %d directories: the tree is not what the test needs", name, len(seq.Kept), len(seq.Dirs))
		}
		if os.Getuid() != 0 && !slices.Equal(seq.M.Unreadable, []string{"locked", "shut"}) {
			t.Fatalf("%s: unreadable %q, want locked and shut", name, seq.M.Unreadable)
		}
		warmSeq := scanWith(t, r, seq.M, wo, 1)
		for _, workers := range []int{2, 3, 8} {
			if diff := cmp.Diff(seq, scanWith(t, r, nil, wo, workers), cmp.Comparer(sameManifest)); diff != "" {
				t.Errorf("%s, %d workers, cold (-sequential +parallel):\n%s", name, workers, diff)
			}
			if diff := cmp.Diff(warmSeq, scanWith(t, r, seq.M, wo, workers), cmp.Comparer(sameManifest)); diff != "" {
				t.Errorf("%s, %d workers, warm (-sequential +parallel):\n%s", name, workers, diff)
			}
		}
	}
}

// sameManifest compares manifests but for when they were taken.
func sameManifest(a, b *workspace.Manifest) bool {
	return cmp.Equal(a.Entries, b.Entries) && slices.Equal(a.Unreadable, b.Unreadable)
}

// runAsNobody runs the test binary's TestParallelScanEqualsWalk as user
// nobody, from a copy it can execute.
func runAsNobody(t *testing.T) {
	bin, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	tmp, err := os.MkdirTemp("", "scan-as-nobody")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o777); err != nil {
		t.Fatal(err)
	}
	copyBin := filepath.Join(tmp, "workspace.test")
	if err := copyFile(bin, copyBin); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), copyBin, "-test.run=^TestParallelScanEqualsWalk$", "-test.count=1", "-test.v")
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), asNobody+"=1", "TMPDIR="+tmp, "HOME="+tmp, "GOCOVERDIR=")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("as nobody: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--- PASS: TestParallelScanEqualsWalk") {
		t.Fatalf("as nobody, the test did not run:\n%s", out)
	}
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// An error from Keep, or a cancelled context, ends a parallel scan with it.
func TestParallelScanStopsOnError(t *testing.T) {
	dir := parallelTree(t)
	r := openRoot(t, dir)
	errKeep := errors.New("the store is full")
	_, err := workspace.Scan(t.Context(), r, nil, &workspace.Options{
		Workers: 4,
		Keep:    func(string, string, []byte) error { return errKeep },
	})
	if !errors.Is(err, errKeep) {
		t.Errorf("scan with a failing Keep: %v, want %v", err, errKeep)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := workspace.Scan(ctx, r, nil, &workspace.Options{Workers: 4}); !errors.Is(err, context.Canceled) {
		t.Errorf("scan with a cancelled context: %v, want context.Canceled", err)
	}
}
