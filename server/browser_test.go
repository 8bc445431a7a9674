package server_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/lite-agent/lite-agent/internal/fakemodel"
)

// chromium finds a Chromium binary, or skips the test.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no chromium binary on PATH: install Debian's chromium package (apt-get install -y chromium) to run the viewer's browser test")
	return ""
}

// artifacts is where screenshots go: $LITE_AGENT_TEST_ARTIFACTS, else a
// temp dir kept for the test's log.
func artifacts(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("LITE_AGENT_TEST_ARTIFACTS")
	if dir == "" {
		d, err := os.MkdirTemp("", "lite-agent-viewer-")
		if err != nil {
			t.Fatal(err)
		}
		dir = d
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s", dir)
	return dir
}

// TestViewerInBrowser drives the viewer in headless Chromium: the
// one-time link opens the list, a session opens, a prompt is sent, its
// tool call is approved, the answer streams in, and a rewind shows its
// preview before it puts the file back. Screenshots of each step are saved.
func TestViewerInBrowser(t *testing.T) {
	bin := chromium(t)
	m := startModel(t,
		fakemodel.Reply{Text: "Hello from the **model**: ask me to write a file."},
		fakemodel.Reply{Text: "I'll write it.", ToolCalls: []fakemodel.ToolCall{toolCall("w1", "write", map[string]any{"path": "browser.txt", "content": "written from the browser\n"})}},
		fakemodel.Reply{Expect: &fakemodel.Expect{ToolResultFor: []string{"w1"}}, Text: "Wrote `browser.txt` for you, streaming word by word as it goes.", ChunkSize: 2, DeltaDelayMS: 40},
	)
	w := startWorker(t, workerOptions{model: m})
	c := w.newSession("say hello")
	shots := artifacts(t)

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true), chromedp.WindowSize(1100, 850))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelA()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelT := context.WithTimeout(ctx, 90*time.Second)
	defer cancelT()

	shot := func(name string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			png, err := chromedp.FullScreenshot(100)(ctx, tg)
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(shots, name), png, 0o644)
		})
	}
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return s
	}
	poll := func(what, expr string) chromedp.Action[chromedp.Void] {
		return chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(30*time.Second))
	}
	do("open the list through the one-time link",
		chromedp.Navigate(w.http.URL+"/?token="+w.srv.Token()),
		chromedp.WaitVisible(chromedp.CSS(`table.sessions a.session-link`)),
		shot("1-list.png"),
	)
	if url, err := chromedp.Run(ctx, chromedp.Location()); err != nil || strings.Contains(url, "token") {
		t.Fatalf("the address after the link: %q %v", url, err)
	}
	do("open the session",
		chromedp.Click(chromedp.CSS(`a.session-link[href="/s/`+c.Session+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#timeline .item.answer strong`)),
	)
	do("send a prompt and see the approval",
		chromedp.SendKeys(chromedp.CSS(`#prompt`), "write browser.txt"),
		chromedp.Click(chromedp.CSS(`#send`)),
		chromedp.WaitVisible(chromedp.CSS(`.card.approval [data-decision="once"]`)),
		shot("2-approval.png"),
	)
	if !strings.Contains(text(".card.approval"), "+written from the browser") {
		t.Fatalf("the approval card does not show the diff: %q", text(".card.approval"))
	}
	if _, err := os.Stat(filepath.Join(w.work, "browser.txt")); err == nil {
		t.Fatal("the file was written before the approval")
	}
	do("approve and watch the answer stream",
		chromedp.Click(chromedp.CSS(`.card.approval [data-decision="once"]`)),
		poll("streamed text", `document.querySelector('#streaming').textContent.includes('streaming')`),
	)
	streamed := text("#streaming")
	do("the answer in the timeline",
		shot("3-streaming.png"),
		chromedp.WaitVisible(`//article[contains(@class,"answer")]//code[text()="browser.txt"]`),
		poll("the turn's end", `document.querySelector('#cancel').hidden`),
		shot("4-answer.png"),
	)
	const answer = "Wrote `browser.txt` for you, streaming word by word as it goes."
	if streamed == "" || !strings.HasPrefix(answer, streamed) {
		t.Fatalf("streamed text %q is not a prefix of the answer", streamed)
	}
	if b, err := os.ReadFile(filepath.Join(w.work, "browser.txt")); err != nil || string(b) != "written from the browser\n" {
		t.Fatalf("browser.txt after the approval: %q %v", b, err)
	}
	do("open the tool call's diff, then the rewind preview",
		chromedp.Click(chromedp.CSS(`#call-w1 summary`)),
		chromedp.WaitVisible(chromedp.CSS(`#call-w1 pre.diff .add`)),
		shot("5-diff.png"),
		chromedp.Click(`(//button[contains(@class,"rewind")])[last()]`),
		chromedp.WaitVisible(chromedp.CSS(`#rewind-dialog #rewind-preview li`)),
		shot("6-rewind-preview.png"),
	)
	if preview := text("#rewind-preview"); !strings.Contains(preview, "remove browser.txt") {
		t.Fatalf("rewind preview %q does not name the file", preview)
	}
	if _, err := os.Stat(filepath.Join(w.work, "browser.txt")); err != nil {
		t.Fatal("the preview changed the workdir")
	}
	do("rewind", chromedp.Click(chromedp.CSS(`#rewind-confirm`)))
	// The page reloads: ask again until the new one shows the rewound log.
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.readyState === 'complete' && document.querySelectorAll('#timeline .item.prompt').length === 1 && !document.querySelector('#rewind-dialog').open`))
		if err == nil && ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page never showed the rewound session (last error %v)", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	do("the rewound page", shot("7-rewound.png"))
	if _, err := os.Stat(filepath.Join(w.work, "browser.txt")); !os.IsNotExist(err) {
		t.Fatalf("browser.txt after the rewind: %v", err)
	}
}
