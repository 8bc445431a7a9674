package sqlite

import (
	"database/sql/driver"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
)

// TestDoctorIndexRows: the doctor's check of a session's index rows, which
// decodes only the searchable events without a row, names each way they
// can differ from the log (a row gone, a row of an event that has no
// search text, a row past the head) and nothing when they match, wordless
// events without rows included; CheckDerivedVisit shows it every session
// with its events. Events not indexed yet (pending.go) are not a row gone,
// but a row past the head still is.
func TestDoctorIndexRows(t *testing.T) {
	for _, tc := range []struct {
		name    string
		damage  string // SQL on the session's number n, its prompt seq 2
		pending bool   // the appended events left waiting for the index
		stale   bool
	}{
		{"whole", "", false, false},
		{"row gone", `DELETE FROM search WHERE rowid = ?1 << 32 | 2`, false, true},
		{"row of session_started", `INSERT INTO search (rowid, words) VALUES (?1 << 32 | 1, 'started')`, false, true},
		{"row past the head", `INSERT INTO search (rowid, words) VALUES (?1 << 32 | 99, 'later')`, false, true},
		{"not indexed yet", "", true, false},
		{"not indexed yet, a row past the head", `INSERT INTO search (rowid, words) VALUES (?1 << 32 | 99, 'later')`, true, true},
		{"not indexed yet, a row of session_started", `INSERT INTO search (rowid, words) VALUES (?1 << 32 | 1, 'started')`, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Open(filepath.Join(t.TempDir(), "s.db"), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			evs := []session.Event{
				session.MustNew(session.TypeSessionStarted, session.SessionStarted{ID: "s", Namespace: "ns"}),
				session.MustNew(session.TypeUserPrompt, session.UserPrompt{Text: "find the parser"}),
				session.MustNew(session.TypeAssistantMessage, session.AssistantMessage{Blocks: []session.Block{{Type: session.BlockToolUse, ID: "c1", Name: "read", Input: json.RawMessage(`{"path":"p.go"}`)}}}),
				session.MustNew(session.TypeToolFinished, session.ToolFinished{CallID: "c1", Tool: "read", Output: "package parser"}),
				session.MustNew(session.TypeUserPrompt, session.UserPrompt{Text: "?!"}),
			}
			if _, err := s.Append(t.Context(), "s", 0, evs); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Append(t.Context(), "other", 0, []session.Event{session.MustNew(session.TypeSessionStarted, session.SessionStarted{ID: "other", Namespace: "ns"})}); err != nil {
				t.Fatal(err)
			}
			if !tc.pending {
				if err := s.catchUp(t.Context()); err != nil {
					t.Fatal(err)
				}
			}
			c, err := s.conn(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			dest := make([]driver.Value, 1)
			if _, err := c.row(t.Context(), dest, `SELECT n FROM sessions WHERE id = 's'`); err != nil {
				t.Fatal(err)
			}
			if tc.damage != "" {
				if _, err := c.exec(t.Context(), tc.damage, dest[0]); err != nil {
					t.Fatal(err)
				}
			}
			s.pool.put(c, false)
			seen := map[string]int{}
			found, err := s.CheckDerivedVisit(t.Context(), false, func(id string, events []session.Event) { seen[id] = len(events) })
			if err != nil {
				t.Fatal(err)
			}
			stale := slices.ContainsFunc(found, func(p checkpoint.Problem) bool {
				return p.Kind == checkpoint.ProblemIndexStale && p.Session == "s"
			})
			if stale != tc.stale || len(found) != btoi(tc.stale) {
				t.Errorf("problems %+v; want index_stale of s: %v", found, tc.stale)
			}
			if seen["s"] != len(evs) || seen["other"] != 1 || len(seen) != 2 {
				t.Errorf("visited %v, want s with %d events and other with 1", seen, len(evs))
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
