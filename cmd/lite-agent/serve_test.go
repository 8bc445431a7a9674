package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/lite-agent/lite-agent/internal/fakemodel"
)

// served is a `lite-agent serve` process.
type served struct {
	cmd    *exec.Cmd
	base   string // http://127.0.0.1:PORT
	token  string
	mu     sync.Mutex
	stderr bytes.Buffer
}

func (s *served) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stderr.Write(p)
}

func (s *served) log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stderr.String()
}

// startServe runs lite-agent serve on a free port against the fake model
// and reads the address and token it prints.
func startServe(t testing.TB, model *fakemodel.Server, work, db string, extra ...string) *served {
	t.Helper()
	return startServeBin(t, os.Args[0], model, work, db, extra...)
}

// startServeBin is startServe running bin serve (the test binary when bin
// is os.Args[0]).
func startServeBin(t testing.TB, bin string, model *fakemodel.Server, work, db string, extra ...string) *served {
	t.Helper()
	args := append([]string{"serve", "--listen", "127.0.0.1:0", "--workdir", work, "--session-db", db}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "LITE_AGENT_TEST_MAIN=1", "ANTHROPIC_API_KEY=test-key", "OPENAI_API_KEY=",
		"HOME="+t.TempDir(), "XDG_STATE_HOME=", "XDG_CONFIG_HOME="+configHome, "LITE_AGENT_SERVE_TOKEN=")
	if model != nil {
		cmd.Env = append(cmd.Env, "ANTHROPIC_BASE_URL="+model.URL())
	}
	s := &served{cmd: cmd}
	cmd.Stderr = s
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := bufio.NewScanner(out)
	deadline := time.AfterFunc(30*time.Second, func() { cmd.Process.Kill() })
	for (s.base == "" || s.token == "") && lines.Scan() {
		line := lines.Text()
		if rest, ok := strings.CutPrefix(line, "lite-agent serve: listening on "); ok {
			s.base = strings.Fields(rest)[0]
		}
		if rest, ok := strings.CutPrefix(line, "token: "); ok {
			s.token = rest
		}
	}
	deadline.Stop()
	if s.base == "" || s.token == "" {
		t.Fatalf("serve printed no address and token; stderr: %s", s.log())
	}
	go io.Copy(io.Discard, out)
	return s
}

// call sends a JSON request with the token and returns the status and body.
func (s *served) call(t testing.TB, method, path string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, s.base+path, rd)
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// watch follows a session's stream and returns a function that waits
// until it has delivered n turn_completed events and returns the seqs it
// delivered.
func (s *served) watch(t testing.TB, id string) func(n int) []int64 {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", s.base+"/api/sessions/"+id+"/stream", nil)
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("stream: %v %v", err, resp)
	}
	var mu sync.Mutex
	var seqs []int64
	completed := 0
	go func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 8<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var e struct {
				Seq  int64
				Type string
			}
			if json.Unmarshal([]byte(data), &e) != nil || e.Seq == 0 || e.Type == "" {
				continue
			}
			mu.Lock()
			seqs = append(seqs, e.Seq)
			if e.Type == "turn_completed" {
				completed++
			}
			mu.Unlock()
		}
	}()
	return func(n int) []int64 {
		t.Helper()
		waitFor(t, "the stream to deliver the turn", func() bool { mu.Lock(); defer mu.Unlock(); return completed >= n })
		mu.Lock()
		defer mu.Unlock()
		return append([]int64(nil), seqs...)
	}
}

// TestServeSIGTERMInterruptsTurn: the real binary serves a prompt; SIGTERM
// with a turn running past the grace period interrupts it, the log says
// so, the process exits 0 and the session's log ends the turn cleanly.
func TestServeSIGTERMInterruptsTurn(t *testing.T) {
	m := startModel(t, fakemodel.Reply{Text: "too late", DelayMS: 60000})
	work := t.TempDir()
	db := filepath.Join(t.TempDir(), "s.db")
	s := startServe(t, m, work, db, "--shutdown-grace", "300ms")
	status, body := s.call(t, "POST", "/api/sessions", map[string]any{"prompt": "take your time"})
	if status != 202 {
		t.Fatalf("create: %d %s", status, body)
	}
	var c struct{ Session string }
	json.Unmarshal(body, &c)
	s.cmd.Process.Signal(syscall.SIGTERM)
	if err := s.cmd.Wait(); err != nil {
		t.Fatalf("serve after SIGTERM: %v; stderr: %s", err, s.log())
	}
	for _, want := range []string{"shutting down", "running_turns=1", "turn interrupted by shutdown", c.Session, "stopped"} {
		if !strings.Contains(s.log(), want) {
			t.Fatalf("stderr lacks %q:\n%s", want, s.log())
		}
	}
	in := sessionInfo(t, work, db, c.Session)
	if in.Status != "interrupted" || len(in.Hazards) != 0 {
		t.Fatalf("session after shutdown: %+v", in)
	}
}

// TestServeRefusesBadSetup: no store, a non-loopback address and a short
// token file are refused with exit 2 before anything listens.
func TestServeRefusesBadSetup(t *testing.T) {
	work := t.TempDir()
	short := filepath.Join(t.TempDir(), "tok")
	os.WriteFile(short, []byte("abc\n"), 0o600)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve"}, "--session-db"},
		{[]string{"serve", "--session-db", filepath.Join(work, "s.db"), "--listen", "0.0.0.0:0"}, "--allow-remote"},
		{[]string{"serve", "--session-db", filepath.Join(work, "s.db"), "--listen", "nonsense"}, "host:port"},
		{[]string{"serve", "--session-db", filepath.Join(work, "s.db"), "--token-file", short}, "at least 16"},
		{[]string{"serve", "--session-db", filepath.Join(work, "s.db"), "a prompt"}, "no prompt"},
	} {
		cmd := exec.Command(os.Args[0], tc.args...)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "LITE_AGENT_TEST_MAIN=1", "HOME="+t.TempDir(), "XDG_CONFIG_HOME="+configHome)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: %v, stderr %q; want exit 2 saying %q", tc.args, err, stderr.String(), tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(work, "s.db")); err == nil {
		t.Fatal("a refused serve created the database")
	}
}

// twoWorkers runs the many-workers check on db: two serve processes on
// one store; a prompt sent to both at once for one session gives one turn
// and one 409 with the head, never an interleaved log, and the stream of
// each worker sees the turn whichever ran it.
func twoWorkers(t *testing.T, db string) {
	m := startModel(t,
		fakemodel.Reply{Text: "first"},
		fakemodel.Reply{Text: "the raced turn", DelayMS: 2000}, // long enough for the other prompt to arrive under load
	)
	work := t.TempDir()
	a := startServe(t, m, work, db)
	b := startServe(t, m, work, db)
	status, body := a.call(t, "POST", "/api/sessions", map[string]any{"prompt": "start", "wait": true})
	if status != 200 {
		t.Fatalf("first turn on worker A: %d %s", status, body)
	}
	var c struct{ Session string }
	json.Unmarshal(body, &c)
	if status, body := b.call(t, "GET", "/api/sessions/"+c.Session, nil); status != 200 {
		t.Fatalf("worker B does not see A's session: %d %s", status, body)
	}
	waitA, waitB := a.watch(t, c.Session), b.watch(t, c.Session)

	type answer struct {
		status int
		body   []byte
	}
	answers := make(chan answer, 2)
	start := make(chan struct{})
	for _, w := range []*served{a, b} {
		go func() {
			<-start
			st, bd := w.call(t, "POST", "/api/sessions/"+c.Session+"/prompts", map[string]any{"prompt": "race"})
			answers <- answer{st, bd}
		}()
	}
	close(start)
	got := map[int]int{}
	var conflict []byte
	for range 2 {
		ans := <-answers
		got[ans.status]++
		if ans.status == 409 {
			conflict = ans.body
		}
	}
	if got[202] != 1 || got[409] != 1 {
		t.Fatalf("statuses %v, want one 202 and one 409 (%s)\nA: %s\nB: %s", got, conflict, a.log(), b.log())
	}
	var e struct {
		Code       string
		ActualHead *int64 `json:"actual_head"`
	}
	json.Unmarshal(conflict, &e)
	if e.ActualHead == nil || (e.Code != "conflict" && e.Code != "turn_running") {
		t.Fatalf("the 409 does not carry the head: %s", conflict)
	}
	seqA, seqB := waitA(2), waitB(2)
	for name, seqs := range map[string][]int64{"A": seqA, "B": seqB} {
		for i, s := range seqs {
			if s != int64(i)+1 {
				t.Fatalf("worker %s's stream delivered seqs %v: want 1, 2, 3, … once each", name, seqs)
			}
		}
	}
	code, out, errs := run(t, nil, work, "--session-db", db, "--export", c.Session)
	if code != 0 {
		t.Fatalf("--export: %d %s", code, errs)
	}
	var types []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		var ev struct{ Type string }
		json.Unmarshal([]byte(line), &ev)
		types = append(types, ev.Type)
	}
	// Two turns, each whole: prompt … completed, prompt … completed.
	var turns []string
	for _, ty := range types {
		if ty == "user_prompt" || ty == "turn_completed" || ty == "turn_interrupted" {
			turns = append(turns, ty)
		}
	}
	if strings.Join(turns, " ") != "user_prompt turn_completed user_prompt turn_completed" {
		t.Fatalf("log %v: want two whole turns", types)
	}
	if len(seqA) != len(types) {
		t.Fatalf("streams saw %d events, the log has %d", len(seqA), len(types))
	}
}

func TestServeTwoWorkersSQLite(t *testing.T) {
	twoWorkers(t, filepath.Join(t.TempDir(), "s.db"))
}

func TestServeTwoWorkersPostgres(t *testing.T) {
	base := os.Getenv("LITE_AGENT_TEST_POSTGRES")
	if base == "" {
		t.Skip("LITE_AGENT_TEST_POSTGRES is not set: this test needs a PostgreSQL server (source .ci/postgres.sh starts one)")
	}
	var b [6]byte
	rand.Read(b[:])
	schema := "serve_test_" + hex.EncodeToString(b[:])
	pgExec(t, base, "CREATE SCHEMA "+schema)
	t.Cleanup(func() { pgExec(t, base, "DROP SCHEMA "+schema+" CASCADE") })
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	twoWorkers(t, u.String())
}

func pgExec(t testing.TB, loc, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// TestServeKilledMidToolLeavesHazard: a serve process SIGKILLed while a
// shell command runs leaves a hazard; a new serve process on the same
// database shows it, refuses prompts with 409 until it is acknowledged,
// and then goes on without re-running the command.
func TestServeKilledMidToolLeavesHazard(t *testing.T) {
	m := startModel(t,
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{toolCall("b1", "bash", map[string]any{"command": "echo $$ > tool.pid; touch started; sleep 60"})}},
		fakemodel.Reply{Expect: &fakemodel.Expect{ToolResultFor: []string{"b1"}, BodyContains: []string{"outcome of this tool call is unknown"}}, Text: "carried on"},
	)
	work := t.TempDir()
	db := filepath.Join(t.TempDir(), "s.db")
	s := startServe(t, m, work, db, "--allow", "bash", "--sandbox", "off")
	status, body := s.call(t, "POST", "/api/sessions", map[string]any{"prompt": "run the slow thing"})
	if status != 202 {
		t.Fatalf("create: %d %s", status, body)
	}
	var c struct{ Session string }
	json.Unmarshal(body, &c)
	waitFor(t, "the tool to start", func() bool { _, err := os.Stat(filepath.Join(work, "started")); return err == nil })
	s.cmd.Process.Signal(syscall.SIGKILL)
	s.cmd.Wait()
	if b, err := os.ReadFile(filepath.Join(work, "tool.pid")); err == nil {
		var pid int
		if _, err := fmt.Sscan(string(b), &pid); err == nil && pid > 0 {
			t.Cleanup(func() { syscall.Kill(-pid, syscall.SIGKILL) })
		}
	}

	s2 := startServe(t, m, work, db)
	status, body = s2.call(t, "GET", "/api/sessions/"+c.Session, nil)
	var info struct {
		Hazards []struct {
			Token  string
			CallID string `json:"call_id"`
		}
	}
	json.Unmarshal(body, &info)
	if status != 200 || len(info.Hazards) != 1 || info.Hazards[0].CallID != "b1" {
		t.Fatalf("info after the kill: %d %s", status, body)
	}
	status, body = s2.call(t, "POST", "/api/sessions/"+c.Session+"/prompts", map[string]any{"prompt": "carry on"})
	if status != 409 || !strings.Contains(string(body), `"hazards"`) {
		t.Fatalf("prompt with a hazard: %d %s", status, body)
	}
	if status, body := s2.call(t, "POST", "/api/sessions/"+c.Session+"/acknowledge", map[string]any{"tokens": []string{info.Hazards[0].Token}}); status != 200 {
		t.Fatalf("acknowledge: %d %s", status, body)
	}
	status, body = s2.call(t, "POST", "/api/sessions/"+c.Session+"/prompts", map[string]any{"prompt": "carry on", "wait": true})
	if status != 200 || !strings.Contains(string(body), "carried on") {
		t.Fatalf("prompt after acknowledging: %d %s", status, body)
	}
	if err := m.Err(); err != nil {
		t.Fatal(err)
	}
}

// TestServeTokenFromFile: a token given in a file is the one required
// and printed; another is refused.
func TestServeTokenFromFile(t *testing.T) {
	work := t.TempDir()
	db := filepath.Join(t.TempDir(), "s.db")
	file := filepath.Join(t.TempDir(), "token")
	os.WriteFile(file, []byte("file-token-0123456789abcdef\n"), 0o600)
	s := startServe(t, nil, work, db, "--token-file", file)
	if s.token != "file-token-0123456789abcdef" {
		t.Fatalf("printed token %q", s.token)
	}
	if status, body := s.call(t, "GET", "/api/sessions", nil); status != 200 {
		t.Fatalf("with the file's token: %d %s", status, body)
	}
	s.token = "another-token-0123456789abcdef"
	if status, _ := s.call(t, "GET", "/api/sessions", nil); status != 401 {
		t.Fatalf("with another token: %d", status)
	}
}
