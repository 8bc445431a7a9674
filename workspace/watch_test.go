package workspace_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/lite-agent/lite-agent/workspace"
	"pgregory.net/rapid"
)

// newWatcher starts a watcher of dir, skipping where the system has none.
func newWatcher(tb testing.TB, dir string, opts *workspace.WatchOptions) *workspace.Watcher {
	tb.Helper()
	if runtime.GOOS != "linux" {
		tb.Skip("the watcher is used on Linux only")
	}
	w, err := workspace.NewWatcher(dir, opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { w.Close() })
	return w
}

// next takes the next manifest the way a session does: an update from
// what the watcher saw when it can be trusted, else a full scan with a new
// watcher. It returns the manifest, the watcher and whether it was an update.
func next(t *rapid.T, dir string, r *os.Root, w *workspace.Watcher, prev *workspace.Manifest) (*workspace.Manifest, *workspace.Watcher, bool) {
	t0 := time.Now()
	c, err := w.Changed(context.Background())
	if d := time.Since(t0); d > 100*time.Millisecond {
		t.Logf("Changed took %v: %v", d, err)
	}
	if err == nil {
		m, err := workspace.Update(context.Background(), r, prev, c, &workspace.Options{Dir: w.Watch})
		if err != nil {
			t.Fatal(err)
		}
		return m, w, true
	}
	if !errors.Is(err, workspace.ErrUntrusted) {
		t.Fatal(err)
	}
	w.Close()
	if w, err = workspace.NewWatcher(dir, nil); err != nil {
		t.Fatal(err)
	}
	m, err := workspace.Scan(context.Background(), r, prev, &workspace.Options{Dir: w.Watch})
	if err != nil {
		t.Fatal(err)
	}
	return m, w, false
}

// TestUpdateFromWatcherEqualsScan: after random creates, writes, deletes,
// chmods and renames of files and directories (nested, hidden and ignored
// ones among them), the manifest updated from what the watcher saw equals
// a full scan of the tree; where the watcher cannot be trusted (a moved
// directory, a changed .gitignore) it says so and the full scan is taken.
func TestUpdateFromWatcherEqualsScan(t *testing.T) {
	names := []string{"a", "b.txt", "d/a", "d/b.txt", "d/e/a", "d/e/f/g.txt", "x/a", ".hidden", "d/.h", "out.log", "d/e/out.log"}
	dirs := []string{"d", "d/e", "d/e/f", "x", "y", "x/z"}
	if runtime.GOOS != "linux" {
		t.Skip("the watcher is used on Linux only")
	}
	updates := 0
	rapid.Check(t, func(t *rapid.T) {
		dir, err := os.MkdirTemp("", "watch-prop-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		full := func(p string) string { return filepath.Join(dir, filepath.FromSlash(p)) }
		os.Mkdir(full("d"), 0o755)
		os.WriteFile(full(".gitignore"), []byte("*.log\n"), 0o644)
		os.WriteFile(full("d/a"), []byte("1"), 0o644)
		r, err := os.OpenRoot(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		w, err := workspace.NewWatcher(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { w.Close() }()
		prev, err := workspace.Scan(context.Background(), r, nil, &workspace.Options{Dir: w.Watch})
		if err != nil {
			t.Fatal(err)
		}
		for step := range rapid.IntRange(1, 6).Draw(t, "steps") {
			for range rapid.IntRange(1, 5).Draw(t, "ops") {
				switch rapid.IntRange(0, 7).Draw(t, "op") {
				case 0, 1: // write
					p := rapid.SampledFrom(names).Draw(t, "write")
					os.MkdirAll(filepath.Dir(full(p)), 0o755)
					os.WriteFile(full(p), fmt.Appendf(nil, "%d %s", step, rapid.StringN(0, 20, -1).Draw(t, "content")), 0o644)
				case 2: // mkdir
					os.MkdirAll(full(rapid.SampledFrom(dirs).Draw(t, "mkdir")), 0o755)
				case 3: // remove a file or a whole directory
					os.RemoveAll(full(rapid.SampledFrom(append(names, dirs...)).Draw(t, "remove")))
				case 4: // chmod
					os.Chmod(full(rapid.SampledFrom(append(names, dirs...)).Draw(t, "chmod")), rapid.SampledFrom([]os.FileMode{0o600, 0o755, 0o644}).Draw(t, "mode"))
				case 5: // rename a file
					from, to := rapid.SampledFrom(names).Draw(t, "from"), rapid.SampledFrom(names).Draw(t, "to")
					os.MkdirAll(filepath.Dir(full(to)), 0o755)
					os.Rename(full(from), full(to))
				case 6: // rename a directory
					from, to := rapid.SampledFrom(dirs).Draw(t, "dirFrom"), rapid.SampledFrom([]string{"y/moved", "moved", "x/z/m"}).Draw(t, "dirTo")
					os.MkdirAll(filepath.Dir(full(to)), 0o755)
					os.Rename(full(from), full(to))
				case 7: // the ignore rules change
					os.WriteFile(full(".gitignore"), []byte(rapid.SampledFrom([]string{"*.log\n", "", "d/e/\n"}).Draw(t, "ignore")), 0o644)
				}
			}
			var updated bool
			prev, w, updated = next(t, dir, r, w, prev)
			if updated {
				updates++
			}
			want, err := workspace.Scan(context.Background(), r, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want.Entries, prev.Entries, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("step %d (updated: %v): the manifest differs from a full scan (-scan +got):\n%s", step, updated, diff)
			}
			if diff := cmp.Diff(want.Unreadable, prev.Unreadable, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("step %d: unreadable differs (-scan +got):\n%s", step, diff)
			}
		}
	})
	t.Logf("%d manifests were updates", updates)
	if updates == 0 {
		t.Fatal("no manifest was an update: the watcher was never trusted")
	}
}

// TestWatcherOverMaxDirsIsUntrusted: a tree with more directories than
// the watcher may watch leaves it untrusted, so the caller scans whole.
func TestWatcherOverMaxDirsIsUntrusted(t *testing.T) {
	dir := t.TempDir()
	for i := range 5 {
		write(t, dir, map[string]string{fmt.Sprintf("d%d/f", i): "x"})
	}
	w := newWatcher(t, dir, &workspace.WatchOptions{MaxDirs: 3})
	r := openRoot(t, dir)
	if _, err := workspace.Scan(t.Context(), r, nil, &workspace.Options{Dir: w.Watch}); err != nil {
		t.Fatal(err)
	}
	if err := w.Err(); !errors.Is(err, workspace.ErrUntrusted) {
		t.Fatalf("Err after watching 6 directories with MaxDirs 3 = %v, want ErrUntrusted", err)
	}
	if _, err := w.Changed(t.Context()); !errors.Is(err, workspace.ErrUntrusted) {
		t.Fatalf("Changed = %v, want ErrUntrusted", err)
	}
}

// TestWatcherSeesEditsBetweenCalls: someone else's write while nobody asks
// is named by the next Changed, and the update sees it.
func TestWatcherSeesEditsBetweenCalls(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{"a/b.txt": "one", "c.txt": "two"})
	w := newWatcher(t, dir, nil)
	r := openRoot(t, dir)
	prev, err := workspace.Scan(t.Context(), r, nil, &workspace.Options{Dir: w.Watch, Now: later})
	if err != nil {
		t.Fatal(err)
	}
	write(t, dir, map[string]string{"a/b.txt": "someone else"})
	c, err := w.Changed(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a/b.txt"}, c.Paths); diff != "" {
		t.Fatalf("Changed (-want +got):\n%s", diff)
	}
	m, err := workspace.Update(t.Context(), r, prev, c, &workspace.Options{Now: later})
	if err != nil {
		t.Fatal(err)
	}
	if got := workspace.Paths(workspace.Diff(prev, m)); !cmp.Equal(got, []string{"a/b.txt"}) {
		t.Fatalf("Diff after someone's edit = %v, want [a/b.txt]", got)
	}
}
