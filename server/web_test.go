package server_test

import (
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/internal/fakemodel"
)

// TestViewerPages: the list links the sessions and searches them; a
// session's page shows prompts, answers as Markdown (raw HTML dropped),
// tool calls with their diffs and the checkpoints' rewind buttons, under
// a CSP that allows the page's own script only.
func TestViewerPages(t *testing.T) {
	m := startModel(t,
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{toolCall("w1", "write", map[string]any{"path": "notes.md", "content": "line one\n"})}},
		fakemodel.Reply{Text: "Wrote **notes.md**. <script>alert('x')</script> [link](javascript:alert(1))"},
	)
	w := startWorker(t, workerOptions{model: m})
	c, _ := w.approvedTurn("take notes <b>now</b>", "w1", "once")

	list := w.must(200, "GET", "/", nil)
	if !strings.Contains(string(list.body), `href="/s/`+c.Session+`"`) || !strings.Contains(list.header.Get("Content-Security-Policy"), "script-src 'self'") {
		t.Fatalf("list page: %v\n%s", list.header, list.body)
	}
	found := w.must(200, "GET", "/?q=notes", nil)
	if !strings.Contains(string(found.body), "/s/"+c.Session+"#seq-") {
		t.Fatalf("search page:\n%s", found.body)
	}
	none := w.must(200, "GET", "/?q=zebra", nil)
	if !strings.Contains(string(none.body), "No session holds") {
		t.Fatalf("empty search page:\n%s", none.body)
	}

	page := string(w.must(200, "GET", "/s/"+c.Session, nil).body)
	for _, want := range []string{
		"take notes &lt;b&gt;now&lt;/b&gt;",      // the prompt, escaped
		"<strong>notes.md</strong>",              // the answer, as Markdown
		`<span class="add">&#43;line one</span>`, // the write's diff
		`data-rewind="`,                          // the checkpoint's rewind button
		`data-session="` + c.Session + `"`,       // what the script follows
		`<script src="/static/viewer.js" defer>`, // the one script
	} {
		if !strings.Contains(page, want) {
			t.Errorf("session page lacks %q", want)
		}
	}
	for _, bad := range []string{"<script>alert", "javascript:alert", "<b>now</b>"} {
		if strings.Contains(page, bad) {
			t.Errorf("session page carries %q unescaped", bad)
		}
	}
	frag := string(w.must(200, "GET", "/s/"+c.Session+"/timeline", nil).body)
	if !strings.Contains(frag, "<strong>notes.md</strong>") || strings.Contains(frag, "<html") {
		t.Fatalf("timeline fragment:\n%s", frag)
	}
	if r := w.call("GET", "/s/nope", nil); r.status != 404 || !strings.Contains(string(r.body), "not found") {
		t.Fatalf("unknown session page: %d %s", r.status, r.body)
	}
	js := w.must(200, "GET", "/static/viewer.js", nil)
	if !strings.Contains(js.header.Get("Content-Type"), "javascript") || !strings.Contains(string(js.body), "EventSource") {
		t.Fatalf("viewer.js: %v", js.header)
	}
	if r := w.call("GET", "/static/session.html", nil); r.status != 404 {
		t.Fatalf("templates are not static files: %d", r.status)
	}
	if r := w.callWith("GET", "/s/"+c.Session, nil); r.status != 401 {
		t.Fatalf("a page without the token: %d", r.status)
	}
}
