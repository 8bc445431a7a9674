package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// lockedBuffer collects output written from another goroutine.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// serve runs the command in the background; it returns the base URL it
// printed, a function closing its stdin, and a channel with its result.
func serve(t *testing.T, ctx context.Context, args ...string) (url string, closeStdin func(), done <-chan error, stderr *lockedBuffer) {
	t.Helper()
	stdinR, stdinW := io.Pipe()
	stdoutR, stdoutW := io.Pipe()
	stderr = &lockedBuffer{}
	ch := make(chan error, 1)
	go func() {
		err := run(ctx, args, stdinR, stdoutW, stderr)
		stdoutW.Close()
		ch <- err
	}()
	line, err := bufio.NewReader(stdoutR).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the first line: %v (stderr: %s)", err, stderr)
	}
	go func() { _, _ = io.Copy(io.Discard, stdoutR) }()
	return strings.TrimSpace(line), func() { stdinW.Close() }, ch, stderr
}

func postPrompt(t *testing.T, url, prompt string) (int, string) {
	t.Helper()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	body := `{"model": "m", "stream": true, "max_tokens": 10, "messages": [{"role": "user", "content": "` + prompt + `"}]}`
	res, err := (&http.Client{Transport: tr}).Post(url+"/v1/messages", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func TestServeScriptUntilStdinCloses(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "s.json")
	if err := os.WriteFile(script, []byte(`{"replies": [{"text": "hello", "expect": {"last_user_contains": ["hi"]}}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "requests.jsonl")
	url, closeStdin, done, stderr := serve(t, t.Context(), "-script", script, "-log", logPath, "-stdin")
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("first line %q is not a loopback base URL", url)
	}
	if status, body := postPrompt(t, url, "hi there"); status != 200 || !strings.Contains(body, "message_stop") {
		t.Fatalf("status %d: %s", status, body)
	}
	closeStdin()
	if err := <-done; err != nil {
		t.Fatalf("run: %v (stderr: %s)", err, stderr)
	}
	if !strings.Contains(stderr.String(), "served 1 requests, 0 replies unused") {
		t.Errorf("summary missing from stderr: %s", stderr)
	}
	logged, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(logged, []byte("\n")); n != 1 || !bytes.Contains(logged, []byte(`"hi there"`)) {
		t.Errorf("log has %d lines: %s", n, logged)
	}
}

func TestDemoUntilCancelledReportsFailures(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	url, closeStdin, done, stderr := serve(t, ctx, "-demo")
	defer closeStdin()
	if status, body := postPrompt(t, url, "make a file"); status != 200 || !strings.Contains(body, `"name":"write"`) {
		t.Fatalf("demo turn 1: %d %s", status, body)
	}
	// The demo's second reply expects the write's tool result, which this
	// request does not carry.
	if status, _ := postPrompt(t, url, "no tool result"); status != 400 {
		t.Fatalf("demo turn 1b without a tool result: status %d, want 400", status)
	}
	cancel()
	err := <-done
	if !errors.Is(err, errFailures) {
		t.Fatalf("run = %v, want errFailures", err)
	}
	if !strings.Contains(stderr.String(), `no tool result for call "toolu_demo_write_1"`) {
		t.Errorf("stderr does not explain the failure: %s", stderr)
	}
}

func TestBadArguments(t *testing.T) {
	script := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(script, []byte(`{"replies": [{"txt": "typo"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args    []string
		wantErr string
	}{
		{nil, "no script: pass -script FILE, or -demo"},
		{[]string{"-demo", "-script", script}, "not both"},
		{[]string{"-script", filepath.Join(t.TempDir(), "missing.json")}, "read script"},
		{[]string{"-script", script}, `unknown field "txt"`},
		{[]string{"-demo", "extra"}, `unexpected argument "extra"`},
		{[]string{"-demo", "-addr", "256.0.0.1:0"}, "listen on 256.0.0.1:0"},
		{[]string{"-nope"}, "flag provided but not defined"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(t.Context(), tt.args, strings.NewReader(""), &stdout, &stderr)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("run = %v, want an error containing %q", err, tt.wantErr)
			}
			if stdout.Len() != 0 {
				t.Errorf("printed %q on stdout after an error", stdout.String())
			}
		})
	}
}
