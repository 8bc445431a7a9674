package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/lite-agent/lite-agent/internal/fakemodel"
	"github.com/lite-agent/lite-agent/permission"
	"github.com/lite-agent/lite-agent/tool"
)

// runDemo is the offline demo: the bundled fake model server on 127.0.0.1
// and a scratch workdir and session database. Two turns in one session (the
// first writes a file through a tool), then the sessions listed and the
// session resumed, each in a new lite-agent process.
func runDemo(ctx context.Context, c *config, std IO) error {
	srv, err := fakemodel.Start(fakemodel.DemoScript())
	if err != nil {
		return fmt.Errorf("start the fake model server: %w", err)
	}
	defer srv.Close()
	dir, err := os.MkdirTemp("", "lite-agent-demo-")
	if err != nil {
		return err
	}
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		return err
	}
	db := filepath.Join(dir, "sessions.db")
	say := func(format string, args ...any) { fmt.Fprintf(std.Stdout, "\n== "+format+"\n", args...) }
	say("offline demo: fake model at %s, workdir %s, sessions in %s", srv.URL(), work, db)

	d := *c
	d.demo, d.provider, d.model, d.baseURL = false, "anthropic", "demo-model", srv.URL()
	d.sessionDB, d.workdir, d.allow, d.output = db, work, []string{"edit"}, "text"
	d.approve, d.sandboxMode = oneShotApproval(std.Stderr), "off"
	d.rules, err = permission.New([]permission.Rule{{Effect: permission.Allow, Kind: string(tool.KindEdit), Source: "--allow edit"}})
	if err != nil {
		return err
	}
	os.Unsetenv("ANTHROPIC_API_KEY") // the demo never sends a real key anywhere

	e, err := openSession(ctx, &d, std)
	if err != nil {
		return err
	}
	say("turn 1: lite-agent --session-db %s --allow edit \"Create hello.txt with a greeting\"", db)
	if _, err := runTurn(ctx, e, &d, std, "Create hello.txt with a greeting"); err != nil {
		e.close()
		return err
	}
	content, err := os.ReadFile(filepath.Join(work, "hello.txt"))
	if err != nil {
		e.close()
		return fmt.Errorf("the demo's write tool left no hello.txt: %w", err)
	}
	fmt.Fprintf(std.Stdout, "(hello.txt on disk: %q)\n", content)
	say("turn 2, same session: \"What did you just do?\"")
	if _, err := runTurn(ctx, e, &d, std, "What did you just do?"); err != nil {
		e.close()
		return err
	}
	id := e.agent.SessionID()
	e.close()

	self, err := os.Executable()
	if err != nil {
		return err
	}
	common := []string{"--session-db", db, "--workdir", work}
	steps := [][]string{
		append(append([]string{}, common...), "--sessions"),
		append(append([]string{}, common...), "--resume", id, "--base-url", srv.URL(), "--model", "demo-model", "Remind me what we did"),
	}
	titles := []string{"a new process lists the sessions: lite-agent --session-db DB --sessions",
		"a new process resumes the session: lite-agent --session-db DB --resume " + id + " \"Remind me what we did\""}
	for i, args := range steps {
		say("%s", titles[i])
		cmd := exec.CommandContext(ctx, self, args...)
		cmd.Stdout, cmd.Stderr = std.Stdout, std.Stderr
		cmd.Env = append(os.Environ(), "ANTHROPIC_API_KEY=")
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("demo step %q: %w", titles[i], err)
		}
	}
	say("done. Look around: ls %s; lite-agent --session-db %s --workdir %s --session-info %s", work, db, work, id)
	return nil
}
