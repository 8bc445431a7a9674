package cli

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/lite-agent/lite-agent/checkpoint/sqlite"
	"github.com/lite-agent/lite-agent/internal/fakemodel"
)

// TestDeleteSessionTakesItsMailbox: --delete-session removes the
// session's mailbox entries (what a serve worker posts for its approvals)
// with its log, so none outlives it and --doctor finds nothing.
func TestDeleteSessionTakesItsMailbox(t *testing.T) {
	model(t, fakemodel.Reply{Text: "ok"})
	work, db := t.TempDir(), filepath.Join(t.TempDir(), "s.db")
	if code, _, errs := runCLI(t, work, "", "--session-db", db, "hello"); code != 0 {
		t.Fatalf("prompt: %d %s", code, errs)
	}
	_, out, _ := runCLI(t, work, "", "--session-db", db, "--sessions")
	var list []struct{ ID string }
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list) != 1 {
		t.Fatalf("--sessions: %q %v", out, err)
	}
	id := list[0].ID
	st, err := sqlite.Open(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := st.Post(ctx, id, "c1", "approval", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if code, _, errs := runCLI(t, work, "", "--session-db", db, "--delete-session", id); code != 0 {
		t.Fatalf("delete: %d %s", code, errs)
	}
	st, err = sqlite.Open(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if ids, err := st.Mailboxes(ctx); err != nil || len(ids) != 0 {
		t.Fatalf("mailboxes after --delete-session = %v, %v; want none", ids, err)
	}
	if code, out, errs := runCLI(t, work, "", "--session-db", db, "--doctor"); code != 0 {
		t.Fatalf("--doctor after the delete: %d %s %s", code, out, errs)
	}
}
