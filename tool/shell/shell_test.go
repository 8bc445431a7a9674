package shell

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	state, pg, ok := parseStat([]byte("42 (a (weird) name) S 1 4242 4242 0 -1"))
	if !ok || state != 'S' || pg != 4242 {
		t.Errorf("parseStat = %c, %d, %v", state, pg, ok)
	}
	if _, _, ok := parseStat([]byte("garbage")); ok {
		t.Error("parseStat accepted garbage")
	}
}

// TestEndStopsLeftovers starts a command that leaves a process behind in
// its group: End stops it and says so.
func TestEndStopsLeftovers(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	p, err := Start(Command{Line: "sleep 60 & echo $! > child; echo hi", Dir: dir, Env: os.Environ()}, &out)
	if err != nil {
		t.Fatal(err)
	}
	<-p.Exited()
	leftovers, detached := p.End(false, 500*time.Millisecond)
	if !leftovers || detached {
		t.Errorf("End = leftovers %v, detached %v; want true, false", leftovers, detached)
	}
	if out.String() != "hi\n" || ExitNote(p.State()) != "[exit code 0]" {
		t.Errorf("output %q, note %q", out.String(), ExitNote(p.State()))
	}
	if GroupAlive(p.PID()) {
		t.Errorf("process group %d still alive", p.PID())
	}
	b, err := os.ReadFile(dir + "/child")
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	for _, c := range strings.TrimSpace(string(b)) {
		pid = pid*10 + int(c-'0')
	}
	if !Exited(pid) {
		t.Errorf("the left-behind process %d still runs", pid)
	}
}
