package jsonl_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/jsonl"
	"github.com/lite-agent/lite-agent/checkpoint/memory"
	"github.com/lite-agent/lite-agent/session"
)

// sampleLog is a log with every awkward kind of event: unknown types, no
// data, data that is not JSON, JSON spread over lines or with white space
// around it, binary file content, times with nanoseconds and time zones.
func sampleLog(id string) []session.Event {
	at := time.Date(2026, 11, 30, 22, 10, 0, 123456789, time.FixedZone("CET", 3600))
	events := []session.Event{
		session.MustNew(session.TypeSessionStarted, session.SessionStarted{ID: id, Namespace: "ns", Workdir: "/w", Model: "m"}),
		session.MustNew(session.TypeUserPrompt, session.UserPrompt{Text: "héllo \"quoted\" \\ \t\n \u2028 \U0001F600"}),
		session.MustNew(session.TypeFileSnapshot, session.FileSnapshot{CallID: "c", Path: "a.bin", Existed: true, Content: []byte{0, 1, 0xff, '\n'}}),
		{Type: "x_future", Data: []byte(`{"z":1,"a":[1.50,2e3,-0,null],"s":"\u003c"}`)},
		{Type: "x_pretty", Data: []byte("{\n  \"a\": 1\n}")},
		{Type: "x_padded", Data: []byte(" {\"a\":1}\t")},
		{Type: "x_not_json", Data: []byte("not json at all \x00\xff")},
		{Type: "x_null", Data: []byte("null")},
		{Type: "x_empty"},
		{Type: "x_empty_slice", Data: []byte{}},
	}
	for i := range events {
		events[i].Seq = int64(i + 1)
		events[i].Time = at.Add(time.Duration(i) * time.Second)
	}
	return events
}

// eventCmp compares events as stores keep them: the same instant, the same
// data bytes (an empty and a missing payload are the same).
var eventCmp = cmp.Comparer(func(a, b session.Event) bool {
	return a.Seq == b.Seq && a.Type == b.Type && a.Time.Equal(b.Time) && string(a.Data) == string(b.Data)
})

// sameImported checks that got is want imported: the same events byte for
// byte but the session_started, whose payload has the same fields plus an
// import mark from from; it returns the mark.
func sameImported(tb testing.TB, want, got []session.Event, from string) session.Import {
	tb.Helper()
	if len(got) == 0 || len(want) == 0 {
		tb.Fatalf("imported %d events of %d", len(got), len(want))
	}
	if diff := cmp.Diff(want[1:], got[1:], eventCmp); diff != "" {
		tb.Fatalf("log after import (-want +got):\n%s", diff)
	}
	var w, g map[string]any
	if err := json.Unmarshal(want[0].Data, &w); err != nil {
		tb.Fatal(err)
	}
	if err := json.Unmarshal(got[0].Data, &g); err != nil {
		tb.Fatal(err)
	}
	var st session.SessionStarted
	if err := got[0].Decode(&st); err != nil || st.Imported == nil {
		tb.Fatalf("the imported session_started %s carries no import mark (%v)", got[0].Data, err)
	}
	delete(g, "imported")
	delete(w, "imported")
	if diff := cmp.Diff(w, g); diff != "" || got[0].Seq != 1 || !got[0].Time.Equal(want[0].Time) {
		tb.Fatalf("the imported session_started differs beyond its mark (-want +got):\n%s", diff)
	}
	host, _ := os.Hostname()
	if m := st.Imported; m.From != from || m.Host != host || m.At.IsZero() {
		tb.Fatalf("import mark %+v; want from %s on %s at a time", m, from, host)
	}
	return *st.Imported
}

// store returns a memory store holding log under id.
func store(tb testing.TB, id string, log []session.Event) checkpoint.Checkpointer {
	tb.Helper()
	c := memory.New()
	tb.Cleanup(func() { c.Close() })
	if log != nil {
		if _, err := c.Append(tb.Context(), id, 0, log); err != nil {
			tb.Fatalf("append: %v", err)
		}
	}
	return c
}

func export(tb testing.TB, c checkpoint.Checkpointer, id string) []byte {
	tb.Helper()
	var buf bytes.Buffer
	if err := jsonl.Export(tb.Context(), c, id, &buf); err != nil {
		tb.Fatalf("export %s: %v", id, err)
	}
	return buf.Bytes()
}

func TestRoundTrip(t *testing.T) {
	want := sampleLog("s1")
	src := store(t, "s1", want)
	out := export(t, src, "s1")
	if n := bytes.Count(out, []byte("\n")); n != len(want)+1 {
		t.Fatalf("export wrote %d lines for %d events and the header:\n%s", n, len(want), out)
	}
	dst := store(t, "", nil)
	id, err := jsonl.Import(t.Context(), dst, bytes.NewReader(out))
	if err != nil {
		t.Fatalf("import: %v", err)
	}
	if id != "s1" {
		t.Fatalf("import created session %q, want s1", id)
	}
	got, err := checkpoint.ReadAll(t.Context(), dst, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if m := sameImported(t, want, got, "stdin"); m.Head != int64(len(want)) || m.Salvaged || m.Previous != nil {
		t.Fatalf("import mark %+v; want head %d, not salvaged", m, len(want))
	}
	for _, e := range got {
		if e.Time.Location() != time.UTC {
			t.Fatalf("event %d came back in %v, want UTC", e.Seq, e.Time.Location())
		}
	}
	// Exporting the copy gives the same bytes, but for the mark.
	again := export(t, dst, "s1")
	if a, o := bytes.SplitN(again, []byte("\n"), 3), bytes.SplitN(out, []byte("\n"), 3); !bytes.Equal(a[0], o[0]) || !bytes.Equal(a[2], o[2]) {
		t.Fatalf("second export differs beyond the session_started line:\n%s\nwant:\n%s", again, out)
	}
	// Imported again, the log keeps both marks, newest first.
	dst2 := store(t, "", nil)
	if _, err := jsonl.ImportStream(t.Context(), dst2, bytes.NewReader(again), &jsonl.ImportOptions{From: "/tmp/x.jsonl"}); err != nil {
		t.Fatal(err)
	}
	got2, _ := checkpoint.ReadAll(t.Context(), dst2, "s1")
	if m := sameImported(t, got, got2, "/tmp/x.jsonl"); m.Previous == nil || m.Previous.From != "stdin" {
		t.Fatalf("a second import's mark %+v does not keep the first one", m)
	}
	if sum, _ := dst2.Head(t.Context(), "s1"); sum.Imported == nil || sum.Imported.From != "/tmp/x.jsonl" || sum.Imported.Previous != nil {
		t.Fatalf("the summary's import mark is %+v; want the newest only", sum.Imported)
	}
}

func TestLineFormat(t *testing.T) {
	log := sampleLog("s1")
	out := export(t, store(t, "s1", log), "s1")
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	cases := []struct {
		line int
		want string
	}{
		{4, `{"v":1,"seq":4,"type":"x_future","time":"2026-11-30T21:10:03.123456789Z","data":{"z":1,"a":[1.50,2e3,-0,null],"s":"\u003c"}}`},
		{5, `{"v":1,"seq":5,"type":"x_pretty","time":"2026-11-30T21:10:04.123456789Z","data64":"ewogICJhIjogMQp9"}`},
		{8, `{"v":1,"seq":8,"type":"x_null","time":"2026-11-30T21:10:07.123456789Z","data":null}`},
		{9, `{"v":1,"seq":9,"type":"x_empty","time":"2026-11-30T21:10:08.123456789Z"}`},
	}
	if want := `{"v":1,"export":{"session":"s1","head":10,"events":10}}`; lines[0] != want {
		t.Errorf("header line:\n got %s\nwant %s", lines[0], want)
	}
	for _, tc := range cases {
		if got := lines[tc.line]; got != tc.want {
			t.Errorf("line %d:\n got %s\nwant %s", tc.line, got, tc.want)
		}
	}
}

func TestImportExisting(t *testing.T) {
	log := sampleLog("s1")
	out := export(t, store(t, "s1", log), "s1")
	dst := store(t, "s1", log[:2])
	_, err := jsonl.Import(t.Context(), dst, bytes.NewReader(out))
	if !errors.Is(err, jsonl.ErrExists) || checkpoint.IsConflict(err) || !strings.Contains(err.Error(), "already holds a session s1 (head 2)") {
		t.Fatalf("import over an existing session: %v, want ErrExists naming the session and its head, not a conflict", err)
	}
	got, _ := checkpoint.ReadAll(t.Context(), dst, "s1")
	if len(got) != 2 {
		t.Fatalf("the existing session has %d events after the refused import, want 2", len(got))
	}
}

func TestImportMalformed(t *testing.T) {
	// The event lines of a stream without a header, as exports were
	// written before it: each line stands on its own.
	good := string(export(t, store(t, "s1", sampleLog("s1")[:3]), "s1"))
	lines := strings.SplitAfter(good, "\n")[1:]
	first, second, third := lines[0], lines[1], lines[2]
	cases := []struct {
		name     string
		in       string
		wantLine int
		wantText string
	}{
		{"not json", first + "hello\n" + third, 2, "not a JSON event envelope"},
		{"truncated line", first + second[:20], 2, "not a JSON event envelope"},
		{"two values", first + strings.TrimSuffix(second, "\n") + " {}\n", 2, "more than one JSON value"},
		{"gap", first + third, 2, "seq 3 where 2 was expected"},
		{"repeat", first + first, 2, "seq 1 where 2 was expected"},
		{"no version", strings.Replace(first, `"v":1,`, "", 1), 1, `no "v"`},
		{"future version", strings.Replace(first, `"v":1`, `"v":9`, 1), 1, "version 9"},
		{"no type", first + strings.Replace(second, `"type":"user_prompt",`, "", 1), 2, `no "type"`},
		{"no time", first + second + strings.Replace(third, `"time"`, `"tim"`, 1), 3, `no "time"`},
		{"bad time", first + strings.Replace(second, `"time":"`, `"time":"x`, 1), 2, "not a JSON event envelope"},
		{"bad base64", first + `{"v":1,"seq":2,"type":"x","time":"2026-01-01T00:00:00Z","data64":"!!"}` + "\n", 2, "base64"},
		{"wrong first event", strings.Replace(second, `"seq":2`, `"seq":1`, 1), 1, "the first event is"},
		{"no id", `{"v":1,"seq":1,"type":"session_started","time":"2026-01-01T00:00:00Z","data":{"namespace":"ns"}}` + "\n", 1, `no "id"`},
		{"blank lines count", first + "\n   \n" + "oops\n", 4, "not a JSON event envelope"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dst := store(t, "", nil)
			_, err := jsonl.Import(t.Context(), dst, strings.NewReader(tc.in))
			if !errors.Is(err, jsonl.ErrFormat) {
				t.Fatalf("import: %v, want an error wrapping ErrFormat", err)
			}
			if want := fmt.Sprintf("line %d:", tc.wantLine); !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), tc.wantText) {
				t.Fatalf("import: %q, want it to name %q and say %q", err, want, tc.wantText)
			}
			if list, _ := dst.List(t.Context(), "", checkpoint.ListOptions{AllKinds: true}); len(list) != 0 {
				t.Fatalf("a malformed stream created %d sessions, want none", len(list))
			}
		})
	}
}

func TestImportEmpty(t *testing.T) {
	for _, in := range []string{"", "\n\n", "  \r\n"} {
		_, err := jsonl.Import(t.Context(), store(t, "", nil), strings.NewReader(in))
		if !errors.Is(err, jsonl.ErrFormat) || !strings.Contains(err.Error(), "no events") {
			t.Fatalf("import of %q: %v, want ErrFormat saying there are no events", in, err)
		}
	}
}

func TestImportCRLF(t *testing.T) {
	log := sampleLog("s1")[:3]
	out := export(t, store(t, "s1", log), "s1")
	crlf := bytes.ReplaceAll(out, []byte("\n"), []byte("\r\n"))
	dst := store(t, "", nil)
	if _, err := jsonl.Import(t.Context(), dst, bytes.NewReader(crlf)); err != nil {
		t.Fatalf("import with CRLF line ends: %v", err)
	}
	got, _ := checkpoint.ReadAll(t.Context(), dst, "s1")
	sameImported(t, log, got, "stdin")
}

func TestExportUnknownSession(t *testing.T) {
	var buf bytes.Buffer
	err := jsonl.Export(t.Context(), store(t, "", nil), "nope", &buf)
	if !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("export of an unknown session: %v, want ErrNotFound", err)
	}
	if buf.Len() != 0 {
		t.Fatalf("export of an unknown session wrote %q", buf.String())
	}
}

// failWriter fails every write.
type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestExportWriteError(t *testing.T) {
	err := jsonl.Export(t.Context(), store(t, "s1", sampleLog("s1")), "s1", failWriter{})
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("export to a failing writer: %v, want the write error", err)
	}
}
