package builtin

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/sandbox"
)

// TestBashSandboxConfinesForegroundAndJobs runs bash with a workspace-write
// policy: writes in the workdir work, writes outside it (and outside the
// temp dir) fail, in the foreground and in a background job alike.
func TestBashSandboxConfinesForegroundAndJobs(t *testing.T) {
	if sandbox.ABI() < 1 {
		t.Skip("this kernel has no Landlock")
	}
	w := newWorkdir(t)
	t.Setenv("TMPDIR", w.dir) // the temp dir must not cover w.outside
	p, err := sandbox.New(sandbox.WorkspaceWrite, w.dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	tab, r := jobTable(t)
	b := Bash{Sandbox: p, Jobs: r, Grace: 100 * time.Millisecond}
	if b.SandboxMode() != "workspace-write" || (Bash{}).SandboxMode() != "off" {
		t.Fatalf("modes %q %q", b.SandboxMode(), Bash{}.SandboxMode())
	}
	got := w.call(t, b, `{"command": "touch ./inside && cat `+w.outside+`/secret.txt"}`)
	check(t, "inside", got, false, []string{"secret"})
	got = w.call(t, b, `{"command": "touch `+w.outside+`/x-outside"}`)
	check(t, "outside", got, false, []string{"Permission denied", "[exit code 1]"})
	if _, err := os.Stat(filepath.Join(w.outside, "x-outside")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a sandboxed command wrote outside the workdir")
	}

	got = w.call(t, b, `{"command": "touch `+w.outside+`/job-outside; touch job-inside", "background": true}`)
	check(t, "job", got, false, []string{"Started background job"})
	j := onlyJob(t, tab)
	<-j.Done()
	if _, err := os.Stat(filepath.Join(w.outside, "job-outside")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a sandboxed background job wrote outside the workdir")
	}
	if _, err := os.Stat(filepath.Join(w.dir, "job-inside")); err != nil {
		t.Fatalf("the job could not write inside the workdir: %v", err)
	}
}
