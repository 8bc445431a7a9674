package file

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
)

func newStore(tb testing.TB, root string) *Store {
	tb.Helper()
	s, err := Open(root, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

func mustAppend(tb testing.TB, s *Store, id string, head int64, events ...session.Event) int64 {
	tb.Helper()
	got, err := s.Append(tb.Context(), id, head, events)
	if err != nil {
		tb.Fatalf("append to %s at %d: %v", id, head, err)
	}
	return got
}

func startedEv(id, ns string) session.Event {
	return session.MustNew(session.TypeSessionStarted, session.SessionStarted{ID: id, Namespace: ns})
}

func promptEv(text string) session.Event {
	return session.MustNew(session.TypeUserPrompt, session.UserPrompt{Text: text})
}

// wantSummaries fails unless Head and List of s agree with a fold of each
// session's log.
func wantSummaries(tb testing.TB, s *Store, ns string, ids ...string) {
	tb.Helper()
	ctx := tb.Context()
	list, err := s.List(ctx, ns, checkpoint.ListOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	if len(list) != len(ids) {
		tb.Fatalf("list has %d sessions, want %d: %+v", len(list), len(ids), list)
	}
	byID := map[string]session.Summary{}
	for _, l := range list {
		byID[l.ID] = l
	}
	for _, id := range ids {
		log, err := checkpoint.ReadAll(ctx, s, id)
		if err != nil {
			tb.Fatal(err)
		}
		want := session.Summarize(id, log)
		h, err := s.Head(ctx, id)
		if err != nil {
			tb.Fatalf("head of %s: %v", id, err)
		}
		if diff := cmp.Diff(want, h, cmpopts.EquateEmpty()); diff != "" {
			tb.Fatalf("head of %s (-fold +head):\n%s", id, diff)
		}
		if diff := cmp.Diff(want, byID[id], cmpopts.EquateEmpty()); diff != "" {
			tb.Fatalf("list entry of %s (-fold +list):\n%s", id, diff)
		}
	}
}

// replaceBoot returns index bytes with the header record's boot id changed.
func replaceBoot(tb testing.TB, index []byte, boot string) []byte {
	tb.Helper()
	rec, used, ok := nextRecord(index[len(indexMagic):])
	if !ok || rec.kind != recHeader {
		tb.Fatal("no header record")
	}
	out := appendFramedRecord([]byte(indexMagic), indexRecord{kind: recHeader, id: boot})
	return append(out, index[len(indexMagic)+used:]...)
}

func TestIndexFromAnotherBoot(t *testing.T) {
	root := t.TempDir()
	s := newStore(t, root)
	mustAppend(t, s, "s1", 0, startedEv("s1", "ns"), promptEv("one"))
	mustAppend(t, s, "s2", 0, startedEv("s2", "ns"), promptEv("a"), promptEv("b"))
	mustAppend(t, s, "gone", 0, startedEv("gone", "ns"))
	idx := filepath.Join(s.nsPath(folderFor("ns")), indexName)
	s.Close()
	old, err := os.ReadFile(idx)
	if err != nil {
		t.Fatal(err)
	}
	// Changes whose index records the crash loses: they were never synced.
	s = newStore(t, root)
	mustAppend(t, s, "s1", 2, promptEv("two"), promptEv("three"))
	if _, err := s.Truncate(t.Context(), "s2", 2, 3); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, s, "s2", 2, promptEv("c"))
	mustAppend(t, s, "s3", 0, startedEv("s3", "ns"))
	if err := s.Delete(t.Context(), "gone"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := os.WriteFile(idx, replaceBoot(t, old, "an-earlier-boot"), 0o600); err != nil {
		t.Fatal(err)
	}
	s = newStore(t, root)
	wantSummaries(t, s, "ns", "s1", "s2", "s3")
	if h, _ := s.Head(t.Context(), "s1"); h.Head != 4 {
		t.Fatalf("head of s1 = %d, want 4", h.Head)
	}
	// The index was checked and rewritten for this boot.
	b, err := os.ReadFile(idx)
	if err != nil {
		t.Fatal(err)
	}
	rec, _, ok := nextRecord(b[len(indexMagic):])
	if !ok || rec.id != s.boot {
		t.Fatalf("index header after the check: %+v, want boot %q", rec, s.boot)
	}
}

func TestDanglingIntent(t *testing.T) {
	root := t.TempDir()
	s := newStore(t, root)
	mustAppend(t, s, "s1", 0, startedEv("s1", "ns"))
	idx := filepath.Join(s.nsPath(folderFor("ns")), indexName)
	s.Close()
	old, err := os.ReadFile(idx)
	if err != nil {
		t.Fatal(err)
	}
	s = newStore(t, root)
	mustAppend(t, s, "s1", 1, promptEv("after"))
	s.Close()
	// The writer died after its intent and its sync, before its summary.
	dangling := appendFramedRecord(bytes.Clone(old), indexRecord{kind: recIntent, id: "s1"})
	if err := os.WriteFile(idx, dangling, 0o600); err != nil {
		t.Fatal(err)
	}

	// While a writer holds the log, readers keep the last summary and do
	// not wait for it.
	lf, err := os.Open(s.logPath(folderFor("ns"), "s1"))
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	if err := lock(t.Context(), lf, true); err != nil {
		t.Fatal(err)
	}
	s = newStore(t, root)
	if h, err := s.Head(t.Context(), "s1"); err != nil || h.Head != 1 {
		t.Fatalf("head while the log is locked = %+v, %v; want the last summary (head 1)", h, err)
	}
	unlock(lf)
	wantSummaries(t, s, "ns", "s1")
	if h, _ := s.Head(t.Context(), "s1"); h.Head != 2 {
		t.Fatalf("head = %d, want 2", h.Head)
	}
}

func TestGroupCommitOneFrame(t *testing.T) {
	root := t.TempDir()
	s := newStore(t, root)
	mustAppend(t, s, "s1", 0, startedEv("s1", "ns"))
	req := func(head int64, texts ...string) *appendReq {
		var evs []session.Event
		for _, tx := range texts {
			evs = append(evs, promptEv(tx))
		}
		evs, err := checkpoint.Prepare("s1", head, evs, 0)
		if err != nil {
			t.Fatal(err)
		}
		r := &appendReq{ctx: t.Context(), expected: head, events: evs}
		for _, e := range evs {
			r.size += encodedEventSize(e)
		}
		return r
	}
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	late := req(4, "late")
	late.ctx = cancelled
	batch := []*appendReq{req(1, "a"), req(1, "stale"), req(2, "b", "c"), late, req(9, "far")}
	h := s.acquire("s1")
	h.commit(batch)
	s.release(h)
	wantHeads := []int64{2, 0, 4, 0, 0}
	for i, r := range batch {
		if r.head != wantHeads[i] {
			t.Errorf("request %d: head %d, want %d (err %v)", i, r.head, wantHeads[i], r.err)
		}
	}
	var ce *checkpoint.ConflictError
	if !errors.As(batch[1].err, &ce) || ce.Expected != 1 || ce.Actual != 2 {
		t.Errorf("stale request: %v, want a conflict 1/2", batch[1].err)
	}
	if !errors.Is(late.err, context.Canceled) {
		t.Errorf("cancelled request: %v", late.err)
	}
	if !errors.As(batch[4].err, &ce) || ce.Expected != 9 || ce.Actual != 4 {
		t.Errorf("far request: %v, want a conflict 9/4", batch[4].err)
	}
	// One frame for the creation, one for the whole group.
	f, err := os.Open(s.logPath(folderFor("ns"), "s1"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, size, _ := fstatID(f)
	fr := newFrameReader(f, f.Name(), logHeaderLen, size)
	frames := 0
	for {
		_, _, _, ok, bad, err := fr.next()
		if err != nil || bad != nil {
			t.Fatalf("frame %d: %v %+v", frames, err, bad)
		}
		if !ok {
			break
		}
		frames++
	}
	if frames != 2 {
		t.Fatalf("%d frames, want 2", frames)
	}
	wantSummaries(t, s, "ns", "s1")
}

func TestFolderFor(t *testing.T) {
	cases := []struct{ ns, prefix string }{
		{"/home/ann/src/shop", "shop-"},
		{"/home/ann/src/shop/", "shop-"},
		{"", "ns-"},
		{"/", "ns-"},
		{"..", "ns-"},
		{"/a/..b", "b-"},
		{"/a/b c*?", "b_c__-"},
		{"/a/" + string(bytes.Repeat([]byte("x"), 100)), string(bytes.Repeat([]byte("x"), 40)) + "-"},
	}
	seen := map[string]string{}
	for _, tc := range cases {
		got := folderFor(tc.ns)
		if len(got) != len(tc.prefix)+12 || got[:len(tc.prefix)] != tc.prefix {
			t.Errorf("folderFor(%q) = %q, want %q and 12 hex digits", tc.ns, got, tc.prefix)
		}
		if other, ok := seen[got]; ok {
			t.Errorf("folderFor(%q) = folderFor(%q) = %q", tc.ns, other, got)
		}
		seen[got] = tc.ns
	}
}

func TestRecordRoundTrip(t *testing.T) {
	st := logState{
		sum: session.Summary{ID: "s1", Kind: "tasklist", Namespace: "/n", Workdir: "/w", Model: "m", Title: "t",
			Parent: &session.ForkRef{Session: "p", Seq: 3}, Head: 9, Messages: 4, Status: session.StatusRunning,
			Created: session.Now(), Updated: session.Now(), Open: []string{"c1", "c2"}},
		tok: token{size: 1234, lastOff: 1000, lastCRC: 0xdeadbeef},
	}
	imported := st
	imported.sum.Imported = &session.Import{From: "/x.jsonl", Host: "h", At: session.Now(), Head: 12, Salvaged: true}
	for _, rec := range []indexRecord{
		{kind: recSummary, id: "s1", st: st},
		{kind: recSummary, id: "s1", st: imported},
		{kind: recIntent, id: "s1"},
		{kind: recDelete, id: "s1"},
		{kind: recHeader, id: "boot"},
	} {
		b := appendFramedRecord(nil, rec)
		got, used, ok := nextRecord(b)
		if !ok || used != len(b) {
			t.Fatalf("%c: not decoded", rec.kind)
		}
		if diff := cmp.Diff(rec, got, cmp.AllowUnexported(indexRecord{}, logState{}, token{}), cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("%c round trip (-want +got):\n%s", rec.kind, diff)
		}
		if _, _, ok := nextRecord(b[:len(b)-1]); ok {
			t.Fatalf("%c: a cut record decoded", rec.kind)
		}
	}
}

// FuzzRecord checks that no input crashes the index record decoder and that
// whatever it accepts encodes back to a record that decodes the same.
func FuzzRecord(f *testing.F) {
	f.Add(appendRecord(nil, indexRecord{kind: recSummary, id: "s", st: logState{sum: session.Summary{Open: []string{"x"}, Parent: &session.ForkRef{}}}}))
	f.Add(appendRecord(nil, indexRecord{kind: recIntent, id: "s"}))
	f.Add([]byte("S\x01"))
	f.Fuzz(func(t *testing.T, p []byte) {
		rec, err := decodeRecord(p)
		if err != nil {
			return
		}
		again, err := decodeRecord(appendRecord(nil, rec))
		if err != nil {
			t.Fatalf("re-encoded record does not decode: %v", err)
		}
		if diff := cmp.Diff(rec, again, cmp.AllowUnexported(indexRecord{}, logState{}, token{}), cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("(-first +second):\n%s", diff)
		}
	})
}

// FuzzLog feeds arbitrary bytes as a session log. Loading never panics;
// when the log loads, its events read back contiguous, and cutting it at the
// reported torn tail leaves a log with the same state and no tail.
func FuzzLog(f *testing.F) {
	root := f.TempDir()
	s, err := Open(root, &Options{})
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	s.Append(ctx, "seed", 0, []session.Event{startedEv("seed", "ns"), promptEv("one")})
	s.Append(ctx, "seed", 2, []session.Event{promptEv("two"), promptEv("three")})
	good, _ := os.ReadFile(s.logPath(folderFor("ns"), "seed"))
	f.Add(good)
	f.Add(good[:len(good)-5])
	f.Add(append(bytes.Clone(good), "LAfr"...))
	f.Add(append(bytes.Clone(good), good[16:60]...))
	f.Add([]byte(logMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "x.log")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		fd, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer fd.Close()
		st, tornAt, err := s.loadState(fd, path, "x", int64(len(data)), nil, false)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("load failed without ErrCorrupt: %v", err)
			}
			return
		}
		if tornAt > int64(len(data)) {
			t.Fatalf("torn tail at %d of %d bytes", tornAt, len(data))
		}
		end := int64(len(data))
		if tornAt >= 0 {
			end = tornAt
		}
		var n int64
		err = s.readFrames(ctx, fd, path, "x", end, st.head(), 1, func(e session.Event, err error) bool {
			n++
			if e.Seq != n {
				t.Fatalf("event %d has seq %d", n, e.Seq)
			}
			return true
		})
		if err != nil && !errors.Is(err, checkpoint.ErrNotFound) {
			t.Fatalf("read of a loaded log: %v", err)
		}
		if n != st.head() {
			t.Fatalf("read %d events, state says head %d", n, st.head())
		}
		again, tornAgain, err := s.loadState(fd, path, "x", end, nil, false)
		if err != nil || tornAgain >= 0 || again.head() != st.head() || again.tok != st.tok {
			t.Fatalf("loading the cut log: %+v torn %d %v; first load %+v torn %d", again.tok, tornAgain, err, st.tok, tornAt)
		}
	})
}
