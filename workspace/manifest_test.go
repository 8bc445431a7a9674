package workspace_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/lite-agent/lite-agent/workspace"
)

// write creates files under dir (path → content; missing parents made).
func write(tb testing.TB, dir string, files map[string]string) {
	tb.Helper()
	for p, c := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}

func openRoot(tb testing.TB, dir string) *os.Root {
	tb.Helper()
	r, err := os.OpenRoot(dir)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { r.Close() })
	return r
}

// later is a clock an hour ahead, so every file is older than the racy
// window of the manifest it takes.
func later() time.Time { return time.Now().Add(time.Hour) }

// scan takes a manifest, recording which paths were read.
func scan(tb testing.TB, r *os.Root, prev *workspace.Manifest, now func() time.Time) (*workspace.Manifest, []string) {
	tb.Helper()
	var read []string
	m, err := workspace.Scan(tb.(interface{ Context() context.Context }).Context(), r, prev, &workspace.Options{
		Now:  now,
		Keep: func(p, digest string, data []byte) error { read = append(read, p); return nil },
	})
	if err != nil {
		tb.Fatal(err)
	}
	slices.Sort(read)
	return m, read
}

type kindPath struct {
	Kind workspace.Kind
	Path string
}

func kinds(cs []workspace.Change) []kindPath {
	var out []kindPath
	for _, c := range cs {
		out = append(out, kindPath{c.Kind, c.Path})
	}
	return out
}

func TestScanAndDiff(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{"a.txt": "a", "b.txt": "b", "e.sh": "echo", "f.txt": "same", "sub/g.txt": "g"})
	r := openRoot(t, dir)
	before, _ := scan(t, r, nil, later)

	write(t, dir, map[string]string{"a.txt": "A changed", "c/d/new.txt": "new"})
	if err := os.Remove(filepath.Join(dir, "b.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, "e.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	// Touched with the same content: not a change.
	future := time.Now().Add(time.Minute)
	if err := os.Chtimes(filepath.Join(dir, "f.txt"), future, future); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "sub/g.txt"), filepath.Join(dir, "sub/h.txt")); err != nil {
		t.Fatal(err)
	}
	after, _ := scan(t, r, before, later)
	want := []kindPath{
		{workspace.Changed, "a.txt"},
		{workspace.Deleted, "b.txt"},
		{workspace.Created, "c"},
		{workspace.Created, "c/d"},
		{workspace.Created, "c/d/new.txt"},
		{workspace.ModeChanged, "e.sh"},
		{workspace.Deleted, "sub/g.txt"},
		{workspace.Created, "sub/h.txt"},
	}
	if diff := cmp.Diff(want, kinds(workspace.Diff(before, after))); diff != "" {
		t.Errorf("diff (-want +got):\n%s", diff)
	}
	if got := workspace.Diff(after, after); len(got) != 0 {
		t.Errorf("a manifest differs from itself: %v", kinds(got))
	}
	e, ok := after.Lookup("a.txt")
	if !ok || e.Digest != workspace.Digest([]byte("A changed")) || e.Size != 9 {
		t.Errorf("a.txt entry %+v, want the digest and size of its new content", e)
	}
}

func TestScanHonoursIgnoreRules(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{
		".gitignore": "build/\n*.log\n", "main.go": "package main", "build/out.bin": "x", "run.log": "x",
		".secret": "x", ".git/index": "x", ".git/objects/ab/cd": "x", "pkg/keep.go": "package pkg",
	})
	m, _ := scan(t, openRoot(t, dir), nil, later)
	var paths []string
	for _, e := range m.Entries {
		paths = append(paths, e.Path)
	}
	want := []string{"main.go", "pkg", "pkg/keep.go"}
	if diff := cmp.Diff(want, paths); diff != "" {
		t.Errorf("manifest paths (-want +got):\n%s", diff)
	}
}

func TestWarmScanReadsOnlyWhatChanged(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{"a": "1", "b": "2", "d/c": "3"})
	r := openRoot(t, dir)
	first, read := scan(t, r, nil, later)
	if diff := cmp.Diff([]string{"a", "b", "d/c"}, read); diff != "" {
		t.Errorf("cold scan read (-want +got):\n%s", diff)
	}
	write(t, dir, map[string]string{"b": "22"})
	_, read = scan(t, r, first, later)
	if diff := cmp.Diff([]string{"b"}, read); diff != "" {
		t.Errorf("warm scan read (-want +got):\n%s", diff)
	}
}

// A file written in the same clock tick as the previous manifest could
// keep its stat: it is read again.
func TestRacyFileIsReadAgain(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{"a": "1"})
	r := openRoot(t, dir)
	first, _ := scan(t, r, nil, time.Now)
	_, read := scan(t, r, first, time.Now)
	if diff := cmp.Diff([]string{"a"}, read); diff != "" {
		t.Errorf("scan right after the file was written read (-want +got):\n%s", diff)
	}
}

func TestFilesOverTheLimitAreNotKept(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{"big": "0123456789abc", "small": "ok"})
	var read []string
	m, err := workspace.Scan(t.Context(), openRoot(t, dir), nil, &workspace.Options{
		MaxFileBytes: 10,
		Keep:         func(p, _ string, _ []byte) error { read = append(read, p); return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	big, _ := m.Lookup("big")
	if big.Digest != workspace.Digest([]byte("0123456789abc")) || big.Skipped == "" || big.Size != 13 {
		t.Errorf("big entry %+v, want its digest and why it was not kept", big)
	}
	if diff := cmp.Diff([]string{"small"}, read); diff != "" {
		t.Errorf("read (-want +got):\n%s", diff)
	}
}

func TestSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{"target.txt": "t"})
	if err := os.Symlink("target.txt", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "pipe")
	if err := mkfifo(fifo); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	m, _ := scan(t, openRoot(t, dir), nil, later) // must not block on the FIFO
	link, _ := m.Lookup("link")
	if link.Digest != workspace.Digest([]byte("target.txt")) {
		t.Errorf("symlink entry %+v, want the digest of its target", link)
	}
	pipe, _ := m.Lookup("pipe")
	if pipe.Digest != "" || pipe.Skipped != "not a regular file" {
		t.Errorf("FIFO entry %+v, want it listed unread", pipe)
	}
}

func TestEncodeDecode(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{"a": "1", "x/y": "2"})
	m, _ := scan(t, openRoot(t, dir), nil, later)
	data, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	again, err := m.Encode()
	if err != nil || string(again) != string(data) {
		t.Errorf("two encodings of one manifest differ (%v)", err)
	}
	back, err := workspace.Decode(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(m.Entries, back.Entries); diff != "" || !back.Taken.Equal(m.Taken) {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if _, err := workspace.Decode([]byte("not a manifest"), nil); err == nil {
		t.Error("Decode of garbage succeeded")
	}
}
