package file_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/file"
	"github.com/lite-agent/lite-agent/session"
)

// File offsets of the first frame and of its payload (see doc.go).
const (
	firstFrame   = 16
	firstPayload = firstFrame + 32
)

func TestOpenBadRoot(t *testing.T) {
	cases := []struct {
		name string
		// setup prepares dir and returns the root to open.
		setup func(t *testing.T, dir string) string
		opts  file.Options
		// err is the sentinel wanted (nil: any), parts what the message names.
		err   error
		parts func(root string) []string
	}{
		{
			name: "root is a regular file",
			setup: func(t *testing.T, dir string) string {
				p := filepath.Join(dir, "sessions")
				writeFile(t, p, "not a directory")
				return p
			},
			parts: func(root string) []string { return []string{root, "not a directory", "choose another directory"} },
		},
		{
			name: "a file is in the way of the root",
			setup: func(t *testing.T, dir string) string {
				writeFile(t, filepath.Join(dir, "home"), "x")
				return filepath.Join(dir, "home", "sessions")
			},
			parts: func(root string) []string {
				return []string{root, "cannot create", "a file is in the way", "choose a directory"}
			},
		},
		{
			name: "a file is in the way of the store's folders",
			setup: func(t *testing.T, dir string) string {
				writeFile(t, filepath.Join(dir, "ns"), "x")
				return dir
			},
			parts: func(root string) []string {
				return []string{filepath.Join(root, "ns"), "not a directory", "move it aside"}
			},
		},
		{
			name: "root holds another program's files",
			setup: func(t *testing.T, dir string) string {
				writeFile(t, filepath.Join(dir, "FORMAT"), "something else\n")
				return dir
			},
			parts: func(root string) []string {
				return []string{filepath.Join(root, "FORMAT"), "choose an empty directory"}
			},
		},
		{
			name: "root written by a newer version",
			setup: func(t *testing.T, dir string) string {
				writeFile(t, filepath.Join(dir, "FORMAT"), "lite-agent file store\nformat 2\n")
				return dir
			},
			parts: func(root string) []string { return []string{root, "newer", "upgrade"} },
		},
		{
			name:  "unknown encoding",
			setup: func(t *testing.T, dir string) string { return dir },
			opts:  file.Options{Encoding: "gzip"},
			err:   checkpoint.ErrInvalid,
			parts: func(root string) []string { return []string{`"gzip"`, `"json"`, `"zstd"`} },
		},
		{
			name:  "negative event limit",
			setup: func(t *testing.T, dir string) string { return dir },
			opts:  file.Options{MaxEventBytes: -1},
			err:   checkpoint.ErrInvalid,
			parts: func(root string) []string { return []string{"MaxEventBytes"} },
		},
		{
			name:  "read-only root that does not exist",
			setup: func(t *testing.T, dir string) string { return filepath.Join(dir, "none") },
			opts:  file.Options{ReadOnly: true},
			err:   fs.ErrNotExist,
			parts: func(root string) []string { return []string{root, "check the path"} },
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			root := tc.setup(t, dir)
			before := snapshot(t, dir)
			s, err := file.Open(root, &tc.opts)
			if err == nil {
				s.Close()
			}
			wantErrText(t, "open", err, tc.err, tc.parts(root)...)
			sameTree(t, dir, before)
		})
	}
	if _, err := file.Open("", nil); !errors.Is(err, checkpoint.ErrInvalid) {
		t.Errorf("open with an empty root: %v, want %v", err, checkpoint.ErrInvalid)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestOpenUnwritableRoot(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("running as root, which can write to a mode 0500 directory; TestOpenBadRoot covers unwritable roots with files in the way")
	}
	dir := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o700) })
	before := snapshot(t, dir)
	_, err := file.Open(dir, nil)
	wantErrText(t, "open a mode 0500 root", err, nil, dir, "writable")
	sameTree(t, dir, before)
	// Read-only, the same root opens.
	s := openStore(t, dir, &file.Options{ReadOnly: true})
	if list, err := s.List(t.Context(), "", checkpoint.ListOptions{}); err != nil || len(list) != 0 {
		t.Fatalf("list of an empty read-only root: %v, %v", list, err)
	}
}

func TestInvalidIDs(t *testing.T) {
	s := openStore(t, t.TempDir(), nil)
	ctx := t.Context()
	for _, id := range []string{"../up", "a/b", `a\b`, ".hidden", "..", "with space", "ü", "nul\x00", strings.Repeat("x", 201)} {
		calls := map[string]error{}
		_, calls["append"] = s.Append(ctx, id, 0, []session.Event{started(id, "ns")})
		_, calls["head"] = s.Head(ctx, id)
		_, calls["truncate"] = s.Truncate(ctx, id, 1, 1)
		calls["delete"] = s.Delete(ctx, id)
		for _, calls["read"] = range s.Read(ctx, id, 1) {
		}
		for op, err := range calls {
			wantErrText(t, fmt.Sprintf("%s %q", op, id), err, checkpoint.ErrInvalid, "file name", "letters, digits")
		}
	}
	// The longest id allowed works.
	long := strings.Repeat("x", 200)
	appendOK(t, s, long, 0, started(long, "ns"))
}

func TestReadOnly(t *testing.T) {
	root := t.TempDir()
	s, err := file.Open(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	appendOK(t, s, "s1", 0, started("s1", "ns"), prompt("one"))
	appendOK(t, s, "s2", 0, started("s2", "ns"), prompt("two"))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Damage a writable store would repair: a torn tail, a missing index.
	appendBytes(t, logPath(t, root, "s1"), []byte("LAfr torn"))
	if err := os.Remove(indexPath(t, root, "s1")); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, root)

	ro := openStore(t, root, &file.Options{ReadOnly: true})
	ctx := t.Context()
	if got := texts(t, readLog(t, ro, "s1")); !slices.Equal(got, []string{"one"}) {
		t.Fatalf("read-only read of s1 = %q", got)
	}
	if h, err := ro.Head(ctx, "s2"); err != nil || h.Head != 2 {
		t.Fatalf("read-only head of s2 = %+v, %v", h, err)
	}
	if list, err := ro.List(ctx, "ns", checkpoint.ListOptions{}); err != nil || len(list) != 2 {
		t.Fatalf("read-only list = %+v, %v", list, err)
	}
	writes := map[string]error{}
	_, writes["append"] = ro.Append(ctx, "s1", 2, []session.Event{prompt("x")})
	_, writes["create"] = ro.Append(ctx, "s3", 0, []session.Event{started("s3", "ns")})
	_, writes["truncate"] = ro.Truncate(ctx, "s1", 1, 2)
	writes["delete"] = ro.Delete(ctx, "s2")
	for op, err := range writes {
		wantErrText(t, op, err, checkpoint.ErrReadOnly)
	}
	sameTree(t, root, before)

	// A writer repairs both.
	w := openStore(t, root, nil)
	appendOK(t, w, "s1", 2, prompt("after repair"))
	if got := texts(t, readLog(t, w, "s1")); !slices.Equal(got, []string{"one", "after repair"}) {
		t.Fatalf("read after repair = %q", got)
	}
	if _, err := os.Stat(indexPath(t, root, "s1")); err != nil {
		t.Fatalf("index not rebuilt: %v", err)
	}
}

func TestTornTail(t *testing.T) {
	cases := []struct {
		name string
		// tear damages the log whose last frame starts at last.
		tear func(t *testing.T, path string, last int64)
	}{
		{"partial frame header", func(t *testing.T, path string, last int64) {
			appendBytes(t, path, []byte("LAfr\x01\x02\x03"))
		}},
		{"frame longer than the file", func(t *testing.T, path string, last int64) {
			b := fileBytes(t, path)[last:]
			appendBytes(t, path, b[:len(b)-3])
		}},
		{"bad checksum in an unacknowledged last frame", func(t *testing.T, path string, last int64) {
			b := bytes.Clone(fileBytes(t, path)[last:])
			b[len(b)-2] ^= 0x20
			appendBytes(t, path, b)
		}},
		{"zeros after the last frame", func(t *testing.T, path string, last int64) {
			appendBytes(t, path, make([]byte, 4096))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			s := openStore(t, root, nil)
			path := logPath0(t, s, root)
			appendOK(t, s, "s1", 2, prompt("two"))
			last := sizeOf(t, path)
			appendOK(t, s, "s1", 3, prompt("three"))
			good := sizeOf(t, path)
			want := []string{"one", "two", "three"}
			tc.tear(t, path, last)
			// A fresh store sees only whole frames, without changing the file.
			s2 := openStore(t, root, nil)
			size := sizeOf(t, path)
			if got := texts(t, readLog(t, s2, "s1")); !slices.Equal(got, want) {
				t.Fatalf("read with a torn tail = %q, want %q", got, want)
			}
			if got := sizeOf(t, path); got != size {
				t.Fatalf("reading changed the log from %d to %d bytes", size, got)
			}
			head := int64(len(want) + 1)
			// The next append cuts the tail and goes after the good frames.
			appendOK(t, s2, "s1", head, prompt("after"))
			if got := texts(t, readLog(t, s2, "s1")); !slices.Equal(got, append(want, "after")) {
				t.Fatalf("read after the repair = %q", got)
			}
			if h, err := s2.Head(t.Context(), "s1"); err != nil || h.Head != head+1 {
				t.Fatalf("head after the repair = %+v, %v", h, err)
			}
			if got := sizeOf(t, path); got <= good || got >= good+100 {
				t.Fatalf("log is %d bytes after the repair and one append; the good part was %d", got, good)
			}
		})
	}
}

// logPath0 creates session s1 (with prompt "one") and returns its log path.
func logPath0(t *testing.T, s *file.Store, root string) string {
	t.Helper()
	appendOK(t, s, "s1", 0, started("s1", "ns"), prompt("one"))
	return logPath(t, root, "s1")
}

func TestTornCreation(t *testing.T) {
	for _, content := range []string{"", "LITEAG", "\x00\x00\x00"} {
		t.Run(fmt.Sprintf("%q", content), func(t *testing.T) {
			root := t.TempDir()
			s := openStore(t, root, nil)
			appendOK(t, s, "other", 0, started("other", "ns"))
			// A creator of s1 died after making its mapping and its file.
			dir := filepath.Dir(logPath(t, root, "other"))
			writeFile(t, filepath.Join(dir, "s1.log"), content)
			if err := os.Symlink("../ns/"+filepath.Base(dir)+"/s1.log", filepath.Join(root, "ids", "s1")); err != nil {
				t.Fatal(err)
			}
			s2 := openStore(t, root, nil)
			if _, err := s2.Head(t.Context(), "s1"); !errors.Is(err, checkpoint.ErrNotFound) {
				t.Fatalf("head of a session whose creation did not finish: %v", err)
			}
			if list, err := s2.List(t.Context(), "ns", checkpoint.ListOptions{}); err != nil || len(list) != 1 {
				t.Fatalf("list = %+v, %v; want only other", list, err)
			}
			_, err := s2.Append(t.Context(), "s1", 1, []session.Event{prompt("x")})
			var ce *checkpoint.ConflictError
			if !errors.As(err, &ce) || ce.Actual != 0 {
				t.Fatalf("append at head 1: %v, want a conflict with head 0", err)
			}
			appendOK(t, s2, "s1", 0, started("s1", "ns"), prompt("created"))
			if got := texts(t, readLog(t, s2, "s1")); !slices.Equal(got, []string{"created"}) {
				t.Fatalf("read = %q", got)
			}
		})
	}
}

func TestDanglingMapping(t *testing.T) {
	root := t.TempDir()
	s := openStore(t, root, nil)
	appendOK(t, s, "other", 0, started("other", "/a/old"))
	// A mapping into a namespace folder that holds no log for the id.
	if err := os.Symlink("../ns/gone-000000000000/s1.log", filepath.Join(root, "ids", "s1")); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if _, err := s.Head(ctx, "s1"); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("head: %v", err)
	}
	for _, err := range s.Read(ctx, "s1", 1) {
		if !errors.Is(err, checkpoint.ErrNotFound) {
			t.Fatalf("read: %v", err)
		}
	}
	if err := s.Delete(ctx, "s1"); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("delete: %v", err)
	}
	appendOK(t, s, "s1", 0, started("s1", "/b/new"))
	h, err := s.Head(ctx, "s1")
	if err != nil || h.Namespace != "/b/new" || h.Head != 1 {
		t.Fatalf("head after creating = %+v, %v", h, err)
	}
	target, err := os.Readlink(filepath.Join(root, "ids", "s1"))
	if want := "../ns/" + folder("new", "/b/new") + "/s1.log"; err != nil || target != want {
		t.Fatalf("mapping = %q, %v; want %q", target, err, want)
	}
}

func TestCorruptMiddle(t *testing.T) {
	root := t.TempDir()
	s := openStore(t, root, nil)
	path := logPath0(t, s, root)
	second := sizeOf(t, path)
	appendOK(t, s, "s1", 2, prompt("two"))
	appendOK(t, s, "s1", 3, prompt("three"))
	// Damage the second frame's payload: a good frame follows it.
	flipByte(t, path, second+32+3)
	before := snapshot(t, root)

	for _, enc := range []string{file.EncodingJSON, file.EncodingZstd} {
		s2 := openStore(t, root, &file.Options{Encoding: enc})
		ctx := t.Context()
		parts := []string{path, fmt.Sprintf("offset %d", second), "after seq 2", "valid records follow", "nothing was changed", "events 1 to 2 verify"}
		_, err := s2.Append(ctx, "s1", 4, []session.Event{prompt("four")})
		wantErrText(t, "append", err, file.ErrCorrupt, parts...)
		_, err = s2.Truncate(ctx, "s1", 1, 4)
		wantErrText(t, "truncate", err, file.ErrCorrupt, parts...)
		// Read gives what comes before the damage, then the error.
		var got []session.Event
		for e, err := range s2.Read(ctx, "s1", 1) {
			if err != nil {
				wantErrText(t, "read", err, file.ErrCorrupt, parts...)
				break
			}
			got = append(got, e)
		}
		if len(got) != 2 {
			t.Fatalf("read yielded %d events before the damage, want 2", len(got))
		}
		// Head answers from the index without reading the log.
		if h, err := s2.Head(ctx, "s1"); err != nil || h.Head != 4 {
			t.Fatalf("head = %+v, %v", h, err)
		}
		sameTree(t, root, before)
	}
}

func TestEventTooLarge(t *testing.T) {
	root := t.TempDir()
	s := openStore(t, root, &file.Options{MaxEventBytes: 1000})
	appendOK(t, s, "s1", 0, started("s1", "ns"), prompt(strings.Repeat("a", 900)))
	before := snapshot(t, root)
	big := prompt(strings.Repeat("b", 1000))
	_, err := s.Append(t.Context(), "s1", 2, []session.Event{prompt("small"), big})
	wantErrText(t, "append", err, checkpoint.ErrTooLarge, fmt.Sprintf("%d bytes", len(big.Data)), "limit of 1000 bytes", "outside the log")
	_, err = s.Append(t.Context(), "s2", 0, []session.Event{started("s2", "ns"), big})
	wantErrText(t, "create", err, checkpoint.ErrTooLarge)
	sameTree(t, root, before)
}

func TestModes(t *testing.T) {
	root := filepath.Join(t.TempDir(), "a", "b")
	s := openStore(t, root, nil)
	appendOK(t, s, "s1", 0, started("s1", "/w/proj"))
	appendOK(t, s, "s1", 1, prompt("p"))
	if _, err := s.Truncate(t.Context(), "s1", 1, 2); err != nil {
		t.Fatal(err)
	}
	for p, desc := range snapshot(t, root) {
		mode := desc[:10]
		switch {
		case strings.HasPrefix(mode, "d"):
			if mode != "drwx------" {
				t.Errorf("%s: directory mode %s, want drwx------", p, mode)
			}
		case strings.HasPrefix(mode, "L"):
		default:
			if mode != "-rw-------" {
				t.Errorf("%s: file mode %s, want -rw-------", p, mode)
			}
		}
	}
}

func TestLayout(t *testing.T) {
	root := t.TempDir()
	s := openStore(t, root, nil)
	namespaces := []struct{ ns, base string }{
		{"/home/ann/src/shop", "shop"},
		{"/home/bob/shop", "shop"},
		{"/srv/dir with spaces/ünï", "__n__"},
		{"", "ns"},
		{"/", "ns"},
		{"/x/.hidden/", "hidden"},
		{`C:\Users\ann\proj`, "proj"},
	}
	for i, n := range namespaces {
		id := fmt.Sprint("s", i)
		appendOK(t, s, id, 0, started(id, n.ns))
		dir := filepath.Join(root, "ns", folder(n.base, n.ns))
		if _, err := os.Stat(filepath.Join(dir, id+".log")); err != nil {
			t.Errorf("namespace %q: %v", n.ns, err)
		}
		if got, err := os.ReadFile(filepath.Join(dir, "namespace")); err != nil || string(got) != n.ns {
			t.Errorf("namespace file of %q = %q, %v", n.ns, got, err)
		}
		target, err := os.Readlink(filepath.Join(root, "ids", id))
		if want := "../ns/" + folder(n.base, n.ns) + "/" + id + ".log"; err != nil || target != want {
			t.Errorf("mapping of %s = %q, %v; want %q", id, target, err, want)
		}
		if n.ns == "" {
			continue // List("") lists every namespace
		}
		list, err := s.List(t.Context(), n.ns, checkpoint.ListOptions{})
		if err != nil || len(list) != 1 || list[0].ID != id {
			t.Errorf("list of %q = %+v, %v", n.ns, list, err)
		}
	}
	if got, err := os.ReadFile(filepath.Join(root, "FORMAT")); err != nil || string(got) != "lite-agent file store\nformat 1\n" {
		t.Errorf("FORMAT = %q, %v", got, err)
	}
}

func TestEncodingsMix(t *testing.T) {
	root := t.TempDir()
	text := func(tag string) string { return tag + " " + strings.Repeat(tag, 50) }
	s := openStore(t, root, &file.Options{Encoding: file.EncodingJSON})
	appendOK(t, s, "s1", 0, started("s1", "ns"), prompt(text("plain")))
	s.Close()
	z := openStore(t, root, &file.Options{Encoding: file.EncodingZstd})
	appendOK(t, z, "s1", 2, prompt(text("squeezed")), prompt(text("more")))
	// Truncating through the middle of a zstd frame re-encodes what is kept.
	if _, err := z.Truncate(t.Context(), "s1", 3, 4); err != nil {
		t.Fatal(err)
	}
	z.Close()
	raw := fileBytes(t, logPath(t, root, "s1"))
	if !bytes.Contains(raw, []byte(text("plain"))) || bytes.Contains(raw, []byte(text("squeezed"))) {
		t.Fatal("want the json frame stored as is and the zstd frame compressed")
	}
	s = openStore(t, root, &file.Options{Encoding: file.EncodingJSON})
	if got := texts(t, readLog(t, s, "s1")); !slices.Equal(got, []string{text("plain"), text("squeezed")}) {
		t.Fatalf("read = %q", got)
	}
}

func TestDeleteRemovesEverything(t *testing.T) {
	root := t.TempDir()
	s := openStore(t, root, nil)
	appendOK(t, s, "keep", 0, started("keep", "ns"))
	before := snapshot(t, root)
	appendOK(t, s, "s1", 0, started("s1", "ns"), prompt("a"), prompt("b"))
	if _, err := s.Truncate(t.Context(), "s1", 2, 3); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(t.Context(), "s1"); err != nil {
		t.Fatal(err)
	}
	after := snapshot(t, root)
	// Only the index may differ: it records the deletion.
	idx, _ := filepath.Rel(root, indexPath(t, root, "keep"))
	delete(before, idx)
	delete(after, idx)
	if diff := cmp.Diff(before, after); diff != "" {
		t.Fatalf("files left by a deleted session (-before +after):\n%s", diff)
	}
}

func TestHeadAndListDoNotReadLogs(t *testing.T) {
	root := t.TempDir()
	s := openStore(t, root, nil)
	appendOK(t, s, "s1", 0, started("s1", "ns"), prompt("hello"))
	// Make the log unreadable as a log (same size, so nothing looks changed).
	path := logPath(t, root, "s1")
	if err := os.WriteFile(path, make([]byte, sizeOf(t, path)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, st := range []*file.Store{s, openStore(t, root, nil)} {
		h, err := st.Head(t.Context(), "s1")
		if err != nil || h.Head != 2 || h.Title != "hello" {
			t.Fatalf("head = %+v, %v", h, err)
		}
		list, err := st.List(t.Context(), "ns", checkpoint.ListOptions{})
		if err != nil || len(list) != 1 || list[0].Head != 2 {
			t.Fatalf("list = %+v, %v", list, err)
		}
	}
}

func TestIndexRebuilt(t *testing.T) {
	damage := []struct {
		name string
		do   func(t *testing.T, path string)
	}{
		{"missing", func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}},
		{"garbage", func(t *testing.T, path string) { writeFile(t, path, "garbage, not an index") }},
		{"empty", func(t *testing.T, path string) { writeFile(t, path, "") }},
		{"damaged header", func(t *testing.T, path string) { flipByte(t, path, 40) }},
		{"damaged record", func(t *testing.T, path string) { flipByte(t, path, sizeOf(t, path)/2) }},
	}
	for _, d := range damage {
		t.Run(d.name, func(t *testing.T) {
			root := t.TempDir()
			s := openStore(t, root, nil)
			for i := range 5 {
				id := fmt.Sprint("s", i)
				appendOK(t, s, id, 0, started(id, "ns"), prompt(id))
			}
			appendOK(t, s, "s0", 2, prompt("more"))
			if err := s.Delete(t.Context(), "s4"); err != nil {
				t.Fatal(err)
			}
			want, err := s.List(t.Context(), "ns", checkpoint.ListOptions{})
			if err != nil || len(want) != 4 {
				t.Fatalf("list = %+v, %v", want, err)
			}
			d.do(t, indexPath(t, root, "s0"))
			for _, opts := range []*file.Options{{ReadOnly: true}, nil, {ReadOnly: true}} {
				s2 := openStore(t, root, opts)
				got, err := s2.List(t.Context(), "ns", checkpoint.ListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Fatalf("list with a %s index (read-only %v) (-want +got):\n%s", d.name, opts != nil, diff)
				}
			}
			if b := fileBytes(t, indexPath(t, root, "s0")); !bytes.HasPrefix(b, []byte("LITEAGENT-IDX\n")) {
				t.Fatalf("the index was not rewritten: %q", b)
			}
		})
	}
}

func TestIndexCompacted(t *testing.T) {
	root := t.TempDir()
	s := openStore(t, root, nil)
	head := appendOK(t, s, "s1", 0, started("s1", "ns"))
	for range 1100 {
		head = appendOK(t, s, "s1", head, prompt("p"))
	}
	grown := sizeOf(t, indexPath(t, root, "s1"))
	if _, err := s.List(t.Context(), "ns", checkpoint.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := sizeOf(t, indexPath(t, root, "s1")); got*10 > grown {
		t.Fatalf("index of %d bytes after 2,200 records is %d bytes after a list; want it compacted", grown, got)
	}
	if h, err := openStore(t, root, nil).Head(t.Context(), "s1"); err != nil || h.Head != head {
		t.Fatalf("head after compaction = %+v, %v; want %d", h, err, head)
	}
}

func TestConcurrentCreateOneID(t *testing.T) {
	root := t.TempDir()
	stores := []*file.Store{openStore(t, root, nil), openStore(t, root, nil)}
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			ns := fmt.Sprint("/ns/", i%3)
			_, errs[i] = stores[i%2].Append(t.Context(), "same", 0, []session.Event{started("same", ns), prompt(ns)})
		})
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		var ce *checkpoint.ConflictError
		switch {
		case err == nil:
			won++
		case !errors.As(err, &ce) || ce.Actual != 2:
			t.Errorf("losing create: %v, want a conflict with head 2", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d creates of one id succeeded, want 1", won)
	}
	log := readLog(t, stores[0], "same")
	h, err := stores[1].Head(t.Context(), "same")
	if err != nil || h.Head != 2 || texts(t, log)[0] != h.Namespace {
		t.Fatalf("head = %+v, %v; log %q", h, err, texts(t, log))
	}
	// Exactly one log exists for the id, in the winner's namespace.
	m, _ := filepath.Glob(filepath.Join(root, "ns", "*", "same.log"))
	if len(m) != 1 {
		t.Fatalf("logs for the id: %q", m)
	}
}

func TestIndexBoundedForWriters(t *testing.T) {
	if testing.Short() {
		t.Skip("appends 1,200 times")
	}
	root := t.TempDir()
	s := openStore(t, root, nil)
	// A long workdir makes every summary record about 2 KiB.
	ns := "/" + strings.Repeat("long/", 200) + "workdir"
	head := appendOK(t, s, "s1", 0, started("s1", ns), prompt("title"))
	largest, idx := int64(0), indexPath(t, root, "s1")
	for range 1200 {
		head = appendOK(t, s, "s1", head, prompt("p"))
		largest = max(largest, sizeOf(t, idx))
	}
	// A writer that never lists still keeps the index compact.
	if got := sizeOf(t, idx); largest < 1<<20 || got > largest/4 {
		t.Fatalf("index is %d bytes, at most %d before: want it compacted once it passed 1 MiB", got, largest)
	}
	if h, err := openStore(t, root, nil).Head(t.Context(), "s1"); err != nil || h.Head != head {
		t.Fatalf("head = %+v, %v; want %d", h, err, head)
	}
}
