package checkpoint_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/file"
	"github.com/lite-agent/lite-agent/checkpoint/memory"
	"github.com/lite-agent/lite-agent/checkpoint/sqlite"
	"github.com/lite-agent/lite-agent/session"
)

// TestDoctorForksAndTaskLists: on every local backend (SQLite through its
// own repairer, the others through the generic checks) the doctor names a
// fork whose parent is gone and a private task list whose session is gone,
// and nothing about a fork whose parent was rewound (as a restore does to
// the session its undo fork was taken from) or a list whose session is
// there.
func TestDoctorForksAndTaskLists(t *testing.T) {
	stores := map[string]func(t *testing.T) checkpoint.Checkpointer{
		"memory": func(t *testing.T) checkpoint.Checkpointer { return memory.New() },
		"file": func(t *testing.T) checkpoint.Checkpointer {
			s, err := file.Open(filepath.Join(t.TempDir(), "store"), nil)
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		"sqlite": func(t *testing.T) checkpoint.Checkpointer {
			s, err := sqlite.Open(filepath.Join(t.TempDir(), "s.db"), nil)
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			c := open(t)
			defer c.Close()
			ctx := t.Context()
			add := func(id string, events ...session.Event) {
				t.Helper()
				if _, err := c.Append(ctx, id, 0, events); err != nil {
					t.Fatal(err)
				}
			}
			start := func(id, kind string, parent *session.ForkRef) session.Event {
				return session.MustNew(session.TypeSessionStarted, session.SessionStarted{ID: id, Kind: kind, Namespace: "ns", Parent: parent})
			}
			prompt := session.MustNew(session.TypeUserPrompt, session.UserPrompt{Text: "hello"})
			add("a", start("a", "", nil), prompt)
			add("rewound-fork", start("rewound-fork", "", &session.ForkRef{Session: "a", Seq: 9}), prompt)
			add("orphan-fork", start("orphan-fork", "", &session.ForkRef{Session: "gone", Seq: 2}), prompt)
			list := func(owner string) []session.Event {
				return []session.Event{start("tasks-"+owner, session.KindTaskList, nil),
					session.MustNew(session.TypeTaskListCreated, session.TaskListCreated{Session: owner})}
			}
			add("tasks-a", list("a")...)
			add("tasks-gone", list("gone")...)
			rep, err := checkpoint.Doctor(ctx, c, checkpoint.DoctorOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range rep.Problems {
				got = append(got, p.Session+" "+p.Kind)
				if p.Fix == "" || p.Detail == "" {
					t.Errorf("problem without detail or fix: %+v", p)
				}
			}
			slices.Sort(got)
			want := []string{"orphan-fork " + checkpoint.ProblemParentMissing, "tasks-gone " + checkpoint.ProblemTaskListOrphaned}
			if !slices.Equal(got, want) {
				t.Fatalf("doctor found %q, want %q", got, want)
			}
			// One session at a time, the same.
			for _, id := range []string{"orphan-fork", "tasks-gone", "rewound-fork", "tasks-a"} {
				rep, err := checkpoint.Doctor(ctx, c, checkpoint.DoctorOptions{Session: id})
				if err != nil {
					t.Fatal(err)
				}
				if want := id == "orphan-fork" || id == "tasks-gone"; (len(rep.Problems) == 1) != want || len(rep.Problems) > 1 {
					t.Errorf("doctor of %s alone: %+v", id, rep.Problems)
				}
			}
		})
	}
}

// TestHasWords: HasWords agrees with Words on texts with and without
// words, words too long to index among them.
func TestHasWords(t *testing.T) {
	long := strings.Repeat("x", checkpoint.MaxWordBytes+1)
	for _, text := range []string{"", " ", "!?", "a", " héllo ", "42", long, long + " b", "— …", "日本"} {
		if got, want := checkpoint.HasWords(text), len(checkpoint.Words(text)) > 0; got != want {
			t.Errorf("HasWords(%q) = %v, Words has %d", text, got, len(checkpoint.Words(text)))
		}
	}
}
