package sandbox

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestMain(m *testing.M) {
	Launch()
	os.Exit(m.Run())
}

// dirs gives a workdir, a temp dir (TMPDIR for the policy) and a directory
// outside both, all fresh.
func dirs(t *testing.T) (work, tmp, outside string) {
	t.Helper()
	base := t.TempDir()
	work, tmp, outside = filepath.Join(base, "work"), filepath.Join(base, "tmp"), filepath.Join(base, "outside")
	for _, d := range []string{work, tmp, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("readable"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", tmp)
	return work, tmp, outside
}

func needLandlock(t *testing.T) {
	t.Helper()
	if ABI() < 1 {
		t.Skip("this kernel has no Landlock")
	}
}

// run runs a bash command through p in dir and returns its output and error.
func run(t *testing.T, p *Policy, dir, command string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(context.Background(), "bash", "-c", command)
	cmd.Dir = dir
	if err := p.Wrap(cmd); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestWorkspaceWrite(t *testing.T) {
	needLandlock(t)
	work, tmp, outside := dirs(t)
	extra := filepath.Join(filepath.Dir(outside), "extra")
	os.Mkdir(extra, 0o755)
	p, err := New(WorkspaceWrite, work, &Options{AllowPaths: []string{extra}})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := run(t, p, work, "touch ./inside && mkdir -p sub/d && mv inside sub/d/ && echo x > "+tmp+"/t && touch "+extra+"/e"); err != nil {
		t.Fatalf("writes in the workdir, the temp dir and an allowed path failed: %v\n%s", err, out)
	}
	out, err := run(t, p, work, "touch "+outside+"/x-outside")
	if err == nil || !strings.Contains(out, "Permission denied") {
		t.Fatalf("a write outside the allowed set succeeded: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(outside, "x-outside")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("the file outside was created")
	}
	if out, err := run(t, p, work, "cat "+outside+"/secret && ls / >/dev/null"); err != nil || out != "readable" {
		t.Fatalf("reads must stay open: %v %q", err, out)
	}
	if out, err := run(t, p, work, "rm "+outside+"/secret"); err == nil {
		t.Fatalf("a delete outside succeeded: %s", out)
	}
	// A process the command leaves behind keeps the policy.
	if out, err := run(t, p, work, "(bash -c 'touch "+outside+"/y' &) ; wait; sleep 0.2; test ! -e "+outside+"/y"); err != nil {
		t.Fatalf("a child escaped the sandbox: %v %s", err, out)
	}
}

func TestReadOnly(t *testing.T) {
	needLandlock(t)
	work, tmp, _ := dirs(t)
	p, err := New(ReadOnly, work, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"touch ./inside", "touch " + tmp + "/t"} {
		if out, err := run(t, p, work, c); err == nil {
			t.Fatalf("%q succeeded in read-only mode: %s", c, out)
		}
	}
	if out, err := run(t, p, work, "echo ok > /dev/null && ls . && cat /etc/passwd >/dev/null"); err != nil {
		t.Fatalf("reads and /dev/null failed in read-only mode: %v %s", err, out)
	}
}

func TestOffConfinesNothing(t *testing.T) {
	work, _, outside := dirs(t)
	p, err := New(Off, work, &Options{NoNetwork: true})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := run(t, p, work, "touch "+outside+"/free"); err != nil {
		t.Fatalf("off mode confined a write: %v %s", err, out)
	}
	if p.Name() != "off" {
		t.Fatal(p.Name())
	}
}

func TestNoNetwork(t *testing.T) {
	needLandlock(t)
	work, _, _ := dirs(t)
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	probe := "exec 3<>/dev/tcp/127.0.0.1/" + strconv.Itoa(port)
	open, err := New(WorkspaceWrite, work, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := run(t, open, work, probe); err != nil {
		t.Fatalf("the network was cut without NoNetwork: %v %s", err, out)
	}
	p, err := New(WorkspaceWrite, work, &Options{NoNetwork: true})
	var de *DegradedError
	if errors.As(err, &de) {
		t.Skipf("no network namespace here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if out, err := run(t, p, work, probe); err == nil {
		t.Fatalf("a connection to the host's loopback succeeded with NoNetwork: %s", out)
	}
}

func TestBadMode(t *testing.T) {
	if _, err := New("strict", t.TempDir(), nil); err == nil || !strings.Contains(err.Error(), "read-only, workspace-write or off") {
		t.Fatalf("got %v", err)
	}
}
