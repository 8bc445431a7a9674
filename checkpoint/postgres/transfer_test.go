package postgres_test

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/jsonl"
	"github.com/lite-agent/lite-agent/checkpoint/sqlite"
	"github.com/lite-agent/lite-agent/session"
)

// transferLog is a session with every kind of event and payload a store
// must keep byte for byte.
func transferLog(id string) []session.Event {
	at := session.Now().Add(-time.Hour)
	events := []session.Event{
		session.MustNew(session.TypeSessionStarted, session.SessionStarted{ID: id, Namespace: "transfer", Workdir: "/w", Model: "m", Parent: &session.ForkRef{Session: "p", Seq: 3}}),
		session.MustNew(session.TypeUserPrompt, session.UserPrompt{Text: "héllo \"quoted\" \\ \t\n \u2028 \U0001F600"}),
		session.MustNew(session.TypeAssistantMessage, session.AssistantMessage{Blocks: []session.Block{
			{Type: session.BlockText, Text: "let me look"},
			{Type: session.BlockToolUse, ID: "c1", Name: "read", Input: []byte(`{"path":"a.bin"}`)},
		}, StopReason: "tool_use", Usage: session.Usage{InputTokens: 10, OutputTokens: 5}}),
		session.MustNew(session.TypeToolStarted, session.ToolStarted{CallID: "c1", Tool: "read", Input: []byte(`{"path":"a.bin"}`)}),
		session.MustNew(session.TypeFileSnapshot, session.FileSnapshot{CallID: "c1", Path: "a.bin", Existed: true, Mode: 0o644, Content: []byte{0, 1, 0xff, '\n'}}),
		session.MustNew(session.TypeToolFinished, session.ToolFinished{CallID: "c1", Tool: "read", Output: "\x00binary"}),
		{Type: "x_future", Data: []byte(`{"z":1,"a":[1.50,2e3,-0,null],"s":"\u003c"}`)},
		{Type: "x_no_data"},
		session.MustNew(session.TypeTurnCompleted, session.TurnCompleted{StopReason: "end_turn"}),
	}
	for i := range events {
		events[i].Seq = int64(i + 1)
		events[i].Time = at.Add(time.Duration(i) * 1234567 * time.Microsecond)
	}
	return events
}

// exactEvent compares events as the conformance suite does: the same
// instant in UTC, the same data bytes.
var exactEvent = cmp.Comparer(func(a, b session.Event) bool {
	return a.Seq == b.Seq && a.Type == b.Type && a.Time.Equal(b.Time) &&
		a.Time.Location() == b.Time.Location() && string(a.Data) == string(b.Data)
})

// TestTransferSQLitePostgresSQLite copies a session from SQLite to
// PostgreSQL and back through jsonl, and checks every event is identical at
// each step, as are the summaries the stores keep.
func TestTransferSQLitePostgresSQLite(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	openSQLite := func(name string) *sqlite.Store {
		s, err := sqlite.Open(filepath.Join(dir, name), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	want := transferLog("moved")
	src := openSQLite("src.db")
	if _, err := src.Append(ctx, "moved", 0, want); err != nil {
		t.Fatal(err)
	}
	pg := openStore(t, newSchema(t), nil)
	dst := openSQLite("dst.db")

	var first, second bytes.Buffer
	if err := jsonl.Export(ctx, src, "moved", &first); err != nil {
		t.Fatal(err)
	}
	if id, err := jsonl.Import(ctx, pg, bytes.NewReader(first.Bytes())); err != nil || id != "moved" {
		t.Fatalf("import into postgres: %q, %v", id, err)
	}
	if err := jsonl.Export(ctx, pg, "moved", &second); err != nil {
		t.Fatal(err)
	}
	// The same stream, but for the import mark on session_started (line 2).
	f, g := bytes.SplitN(first.Bytes(), []byte("\n"), 3), bytes.SplitN(second.Bytes(), []byte("\n"), 3)
	if len(f) != 3 || len(g) != 3 || !bytes.Equal(f[0], g[0]) || !bytes.Equal(f[2], g[2]) || !bytes.Contains(g[1], []byte(`"imported":{`)) {
		t.Fatalf("postgres exports a different stream than sqlite:\n%s\nwant:\n%s", second.Bytes(), first.Bytes())
	}
	if _, err := jsonl.Import(ctx, dst, bytes.NewReader(second.Bytes())); err != nil {
		t.Fatalf("import back into sqlite: %v", err)
	}
	for _, step := range []struct {
		name string
		c    checkpoint.Checkpointer
	}{{"sqlite", src}, {"postgres", pg}, {"sqlite again", dst}} {
		got, err := checkpoint.ReadAll(ctx, step.c, "moved")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want[1:], got[1:], exactEvent); diff != "" || got[0].Type != session.TypeSessionStarted {
			t.Fatalf("log in %s (-want +got):\n%s", step.name, diff)
		}
		sum, err := step.c.Head(ctx, "moved")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(session.Summarize("moved", got), sum); diff != "" || (sum.Imported == nil) != (step.c == src) {
			t.Fatalf("summary in %s (-want +got):\n%s", step.name, diff)
		}
	}
}
