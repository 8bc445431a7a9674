package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestWatcherOverflowIsUntrusted overflows the kernel's event queue for
// real (the watcher's reader is held while more events than the queue
// holds are made) and checks that Changed then says it cannot be trusted,
// for the caller to scan whole.
func TestWatcherOverflowIsUntrusted(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the watcher is used on Linux only")
	}
	dir := t.TempDir()
	w, err := NewWatcher(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.Watch(".")
	a, err := os.Create(filepath.Join(dir, "a"))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := os.Create(filepath.Join(dir, "b"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	w.mu.Lock() // the reader stops at its next event
	// Alternate writes, so that the kernel cannot fold two into one: far
	// more than fsnotify's buffer and the kernel's default queue (16,384).
	for range 30_000 {
		a.Write([]byte("x"))
		b.Write([]byte("y"))
	}
	w.mu.Unlock()
	_, err = w.Changed(t.Context())
	if !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), "overflowed") {
		t.Fatalf("Changed after an overflow = %v, want ErrUntrusted for the overflow", err)
	}
}
