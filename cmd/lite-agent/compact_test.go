package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/lite-agent/lite-agent/internal/fakemodel"
)

// summaryMarker is a phrase of the SDK's compaction prompt.
const summaryMarker = "Summarise this conversation so far"

// talk is a server that answers n turns with about 2 KB each and summary
// requests with a fixed summary (after delay ms), in a window of tokens.
func talk(t testing.TB, n, window, delay int) *fakemodel.Server {
	t.Helper()
	var replies []fakemodel.Reply
	for i := range n {
		replies = append(replies, fakemodel.Reply{Text: fmt.Sprintf("answer %d %s", i, strings.Repeat("blah ", 400))})
	}
	srv, err := fakemodel.Start(&fakemodel.Script{Replies: replies, ContextWindow: window,
		Summary: &fakemodel.SummaryRule{Marker: summaryMarker, Text: "SUMMARY-OF-EARLIER-TURNS", DelayMS: delay}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// modelsFile writes a model table giving model "fake-small" a window.
func modelsFile(t testing.TB, window int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "models.toml")
	writeFile(t, path, fmt.Sprintf("[\"fake-small\"]\nwindow = %d\n", window))
	return path
}

// TestResumeAfterCompactionSendsSummaryAndTail: a line-mode session of 26
// turns in a small window compacts by itself; resumed in a new process it
// sends the summary and the turns after it, not the early prompts; a fork
// at an early checkpoint sends those again.
func TestResumeAfterCompactionSendsSummaryAndTail(t *testing.T) {
	const window = 16000
	srv := talk(t, 30, window, 0)
	work, db := t.TempDir(), filepath.Join(t.TempDir(), "s.db")
	var input strings.Builder
	for i := range 26 {
		fmt.Fprintf(&input, "early-prompt-%02d\n", i)
	}
	p := startInput(t, srv, work, nil, input.String(), "--session-db", db, "--plain", "--model", "fake-small", "--models", modelsFile(t, window))
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("line mode: %v\n%s", err, p.stderr)
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
	id := onlySession(t, work, db)
	_, export, _ := run(t, nil, work, "--session-db", db, "--export", id)
	if strings.Count(export, `"type":"compaction"`) == 0 {
		t.Fatalf("26 turns of ~550 tokens in a %d-token window did not compact (%d requests, the last %d bytes; stderr %s)", window, len(srv.Requests()), len(srv.Requests()[len(srv.Requests())-1].Body), p.stderr)
	}
	code, _, errs := run(t, srv, work, "--session-db", db, "--model", "fake-small", "--models", modelsFile(t, window), "--resume", id, "the-tail-prompt")
	if code != 0 {
		t.Fatalf("resume: %d %s", code, errs)
	}
	reqs := srv.Requests()
	body := string(reqs[len(reqs)-1].Body)
	if !strings.Contains(body, "SUMMARY-OF-EARLIER-TURNS") || strings.Contains(body, "early-prompt-00") ||
		!strings.Contains(body, "early-prompt-25") || !strings.Contains(body, "the-tail-prompt") {
		t.Fatal("the resumed request does not carry just the summary and the tail")
	}

	_, cpsOut, _ := run(t, nil, work, "--session-db", db, "--checkpoints", id)
	var cps []struct {
		Seq int64 `json:"seq"`
	}
	if err := json.Unmarshal([]byte(cpsOut), &cps); err != nil {
		t.Fatal(err)
	}
	if len(cps) < 27 {
		t.Fatalf("--checkpoints printed %d checkpoints: %s", len(cps), cpsOut)
	}
	code, out, errs := run(t, nil, work, "--session-db", db, "--fork", id, "--to", fmt.Sprint(cps[4].Seq))
	if code != 0 {
		t.Fatalf("fork: %d %s", code, errs)
	}
	fork := strings.Split(strings.Split(out, `"id": "`)[1], `"`)[0]
	if code, _, errs := run(t, srv, work, "--session-db", db, "--model", "fake-small", "--resume", fork, "after-the-fork"); code != 0 {
		t.Fatalf("resume the fork: %d %s", code, errs)
	}
	reqs = srv.Requests()
	body = string(reqs[len(reqs)-1].Body)
	if strings.Contains(body, "SUMMARY-OF") || !strings.Contains(body, "after-the-fork") || !strings.Contains(body, "early-prompt-00") ||
		!strings.Contains(body, "early-prompt-03") || strings.Contains(body, "early-prompt-04") {
		t.Fatal("a fork at the fifth checkpoint does not send the four turns before it uncompacted")
	}
}

// TestKillDuringCompaction: SIGKILL while --compact waits for the summary
// leaves the log exactly as it was; the session resumes as before.
func TestKillDuringCompaction(t *testing.T) {
	srv := talk(t, 3, 0, 60_000)
	work, db := t.TempDir(), filepath.Join(t.TempDir(), "s.db")
	for _, prompt := range []string{"first-turn", "second-turn"} {
		args := []string{"--session-db", db, prompt}
		if prompt != "first-turn" {
			args = []string{"--session-db", db, "--resume", onlySession(t, work, db), prompt}
		}
		if code, _, errs := run(t, srv, work, args...); code != 0 {
			t.Fatalf("%s: %d %s", prompt, code, errs)
		}
	}
	id := onlySession(t, work, db)
	_, before, _ := run(t, nil, work, "--session-db", db, "--export", id)
	p := start(t, srv, work, "--session-db", db, "--compact", id)
	waitFor(t, "the summary request", func() bool {
		for _, r := range srv.Requests() {
			if strings.Contains(string(r.Body), summaryMarker) {
				return true
			}
		}
		return false
	})
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.cmd.Wait()
	_, after, _ := run(t, nil, work, "--session-db", db, "--export", id)
	if after != before {
		t.Fatalf("the log changed under a killed compaction:\nbefore %s\nafter %s", before, after)
	}
	n := len(srv.Requests())
	if code, _, errs := run(t, srv, work, "--session-db", db, "--resume", id, "third-turn"); code != 0 {
		t.Fatalf("resume after the kill: %d %s", code, errs)
	}
	body := string(srv.Requests()[n].Body)
	if !strings.Contains(body, "first-turn") || !strings.Contains(body, "second-turn") || strings.Contains(body, summaryMarker) {
		t.Fatal("after the kill the session does not replay as before")
	}
}

// twoTurns runs two one-shot turns in a new session of db and returns its
// id and its export.
func twoTurns(t *testing.T, srv *fakemodel.Server, work, db string) (string, string) {
	t.Helper()
	if code, _, errs := run(t, srv, work, "--session-db", db, "first-turn"); code != 0 {
		t.Fatalf("first turn: %d %s", code, errs)
	}
	id := onlySession(t, work, db)
	if code, _, errs := run(t, srv, work, "--session-db", db, "--resume", id, "second-turn"); code != 0 {
		t.Fatalf("second turn: %d %s", code, errs)
	}
	_, export, _ := run(t, nil, work, "--session-db", db, "--export", id)
	return id, export
}

// lastBody is the body of the server's latest request.
func lastBody(srv *fakemodel.Server) string {
	reqs := srv.Requests()
	return string(reqs[len(reqs)-1].Body)
}

// TestManualCompaction: --compact ID FOCUS asks for a summary with the
// focus, records one compaction event naming the seq it goes through, and
// a resume in a new process sends the summary and the tail, not the turns
// it replaced; --checkpoints still lists them.
func TestManualCompaction(t *testing.T) {
	srv := talk(t, 3, 0, 0)
	work, db := t.TempDir(), filepath.Join(t.TempDir(), "s.db")
	id, before := twoTurns(t, srv, work, db)
	code, out, errs := run(t, srv, work, "--session-db", db, "--compact", id, "keep the file paths")
	if code != 0 {
		t.Fatalf("--compact: %d %s", code, errs)
	}
	if b := lastBody(srv); !strings.Contains(b, summaryMarker) || !strings.Contains(b, "Focus the summary on: keep the file paths") || !strings.Contains(b, "first-turn") {
		t.Fatalf("the summary request lacks the prompt, the focus or the transcript: %s", b)
	}
	var res struct {
		Seq        int64  `json:"seq"`
		ThroughSeq int64  `json:"through_seq"`
		Summary    string `json:"summary"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Summary != "SUMMARY-OF-EARLIER-TURNS" || res.ThroughSeq == 0 || res.Seq <= res.ThroughSeq {
		t.Fatalf("--compact printed %q (%v)", out, err)
	}
	_, after, _ := run(t, nil, work, "--session-db", db, "--export", id)
	if strings.Count(after, `"type":"compaction"`) != 1 ||
		!strings.Contains(after, fmt.Sprintf(`"through_seq":%d`, res.ThroughSeq)) || !strings.Contains(after, `"focus":"keep the file paths"`) {
		t.Fatalf("the log does not show one compaction through %d:\n%s", res.ThroughSeq, after)
	}
	for _, line := range strings.Split(strings.TrimSpace(before), "\n")[1:] {
		if !strings.Contains(after, line) {
			t.Fatalf("the compaction changed an earlier event: %s", line)
		}
	}
	if code, _, errs := run(t, srv, work, "--session-db", db, "--resume", id, "third-turn"); code != 0 {
		t.Fatalf("resume after --compact: %d %s", code, errs)
	}
	b := lastBody(srv)
	if !strings.Contains(b, "SUMMARY-OF-EARLIER-TURNS") || strings.Contains(b, "first-turn") || !strings.Contains(b, "third-turn") || strings.Contains(b, summaryMarker) {
		t.Fatalf("the request after the compaction is not the compacted one: %s", b)
	}
	_, cps, _ := run(t, nil, work, "--session-db", db, "--checkpoints", id)
	if !strings.Contains(cps, "first-turn") || !strings.Contains(cps, "third-turn") {
		t.Fatalf("--checkpoints lost prompts the compaction summarised: %s", cps)
	}
}

// TestLineModeCompact: /compact in line mode compacts the session between
// two prompts: the next request is the compacted one.
func TestLineModeCompact(t *testing.T) {
	srv := talk(t, 3, 0, 0)
	work, db := t.TempDir(), filepath.Join(t.TempDir(), "s.db")
	p := startInput(t, srv, work, nil, "first-turn\nsecond-turn\n/compact the numbers\nthird-turn\n", "--session-db", db, "--plain")
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("line mode: %v\n%s", err, p.stderr)
	}
	if !strings.Contains(p.stdout.String()+p.stderr.String(), "compact") {
		t.Fatalf("line mode said nothing of the compaction:\n%s\n%s", p.stdout, p.stderr)
	}
	b := lastBody(srv)
	if !strings.Contains(b, "SUMMARY-OF-EARLIER-TURNS") || strings.Contains(b, "first-turn") || !strings.Contains(b, "third-turn") {
		t.Fatalf("the request after /compact is not the compacted one: %s", b)
	}
	_, export, _ := run(t, nil, work, "--session-db", db, "--export", onlySession(t, work, db))
	if strings.Count(export, `"type":"compaction"`) != 1 || !strings.Contains(export, `"focus":"the numbers"`) {
		t.Fatalf("the log does not show the compaction:\n%s", export)
	}
}

// TestInterruptDuringCompaction: SIGINT while --compact waits for the
// summary ends the run with an error saying nothing changed, the log is
// byte for byte as it was, and the session goes on uncompacted.
func TestInterruptDuringCompaction(t *testing.T) {
	srv := talk(t, 3, 0, 60_000)
	work, db := t.TempDir(), filepath.Join(t.TempDir(), "s.db")
	id, before := twoTurns(t, srv, work, db)
	p := start(t, srv, work, "--session-db", db, "--compact", id)
	waitFor(t, "the summary request", func() bool { return strings.Contains(lastBody(srv), summaryMarker) })
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := p.cmd.Wait()
	if err == nil || !strings.Contains(p.stderr.String(), "nothing was changed") {
		t.Fatalf("an interrupted --compact: %v, stderr %s", err, p.stderr)
	}
	_, after, _ := run(t, nil, work, "--session-db", db, "--export", id)
	if after != before {
		t.Fatalf("the log changed under an interrupted compaction:\nbefore %s\nafter %s", before, after)
	}
	if code, _, errs := run(t, srv, work, "--session-db", db, "--resume", id, "third-turn"); code != 0 {
		t.Fatalf("resume after the interrupt: %d %s", code, errs)
	}
	if b := lastBody(srv); !strings.Contains(b, "first-turn") || !strings.Contains(b, "second-turn") || strings.Contains(b, "SUMMARY-OF") {
		t.Fatal("after the interrupt the session does not go on uncompacted")
	}
}
