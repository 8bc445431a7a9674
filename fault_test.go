package liteagent_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/faulty"
	"github.com/lite-agent/lite-agent/checkpoint/memory"
	"github.com/lite-agent/lite-agent/internal/fakemodel"
	"github.com/lite-agent/lite-agent/session"
)

// TestAppendFaultsMidTurn makes one append of a tool-using turn fail or
// conflict and checks what is left: a clear error naming the session, a
// log that replays to a consistent state (the turn closed as interrupted,
// a tool cut off after its intent a hazard), and no file change without
// its snapshot in the log.
//
// The turn's appends, in order (see held.go): 1 session_started+
// project_context+user_prompt, 2 assistant_message+tool_started+
// file_snapshot (the intent), 3 tool_finished (the receipt),
// 4 assistant_message+turn_completed. When the intent's append fails, the
// model's answer is written with turn_interrupted.
func TestAppendFaultsMidTurn(t *testing.T) {
	cases := []struct {
		name      string
		inject    func(*faulty.Store)
		want      error // what the store's error is
		conflict  bool
		written   bool   // the tool changed the file
		log       string // the event types left
		hazardous bool
	}{
		{name: "intent fails", inject: func(s *faulty.Store) { s.Fail(2) }, want: faulty.ErrInjected,
			log: "session_started project_context user_prompt assistant_message turn_interrupted"},
		{name: "intent conflicts", inject: func(s *faulty.Store) { s.Conflict(2) }, conflict: true,
			log: "session_started project_context user_prompt assistant_message turn_interrupted"},
		{name: "receipt fails", inject: func(s *faulty.Store) { s.Fail(3) }, want: faulty.ErrInjected, written: true, hazardous: true,
			log: "session_started project_context user_prompt assistant_message tool_started file_snapshot turn_interrupted"},
		{name: "receipt conflicts", inject: func(s *faulty.Store) { s.Conflict(3) }, conflict: true, written: true, hazardous: true,
			log: "session_started project_context user_prompt assistant_message tool_started file_snapshot turn_interrupted"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, p := startModel(t, "anthropic",
				fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{call("c1", "write", map[string]string{"path": "a.txt", "content": "new\n"})}},
				fakemodel.Reply{Text: "done"},
			)
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("old\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			store := faulty.New(memory.New())
			tc.inject(store)
			a := newAgent(t, p, liteagent.Options{Checkpointer: store, Workdir: dir})
			_, err := a.Send(t.Context(), "change a.txt")
			var ae *liteagent.AppendError
			if !errors.As(err, &ae) || ae.Session == "" || !strings.Contains(err.Error(), ae.Session) {
				t.Fatalf("Send: %v, want an *AppendError naming the session", err)
			}
			if tc.conflict != checkpoint.IsConflict(err) || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("Send: %v; conflict %v, want %v", err, checkpoint.IsConflict(err), tc.conflict)
			}
			got, _ := os.ReadFile(filepath.Join(dir, "a.txt"))
			if (string(got) == "new\n") != tc.written {
				t.Fatalf("a.txt holds %q; the tool should have run: %v", got, tc.written)
			}
			if log := strings.Join(types(t, store, ae.Session), " "); log != tc.log {
				t.Fatalf("log:\n%s\nwant:\n%s", log, tc.log)
			}
			info, err := a.SessionInfo(t.Context(), ae.Session)
			if err != nil {
				t.Fatal(err)
			}
			if info.Status == session.StatusRunning || (len(info.Hazards) == 1) != tc.hazardous {
				t.Fatalf("replayed: status %s, hazards %+v", info.Status, info.Hazards)
			}
			if tc.hazardous && info.Hazards[0].CallID != "c1" {
				t.Fatalf("hazard %+v, want the cut-off call c1", info.Hazards[0])
			}
			checkServer(t, srv)
		})
	}
}
