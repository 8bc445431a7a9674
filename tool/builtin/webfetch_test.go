package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/tool"
)

// fetchCall runs web_fetch on u.
func fetchCall(t testing.TB, ctx context.Context, w WebFetch, u string) (string, bool) {
	t.Helper()
	in, _ := json.Marshal(map[string]string{"url": u})
	res := w.Run(ctx, callWith(in))
	return res.Output, res.IsError
}

func callWith(in json.RawMessage) tool.Call { return tool.Call{ID: "call_1", Input: in} }

func TestWebFetchConvertsHTML(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><html><head><title>T</title><script>alert("x")</script><style>p{}</style></head>
<body><h1>Release notes</h1><p>See <a href="/docs/install">the install guide</a> and <b>mind</b> this.</p>
<ul><li>one</li><li>two</li></ul><pre><code>func main() {
	fmt.Println("tab")
}</code></pre></body></html>`)
	}))
	defer srv.Close()
	out, isErr := fetchCall(t, t.Context(), WebFetch{}, srv.URL+"/notes#part")
	if isErr {
		t.Fatalf("fetch failed: %s", out)
	}
	for _, want := range []string{
		"fetched " + srv.URL + "/notes (HTTP 200, text/html,",
		"# Release notes",
		"[the install guide](" + srv.URL + "/docs/install)",
		"**mind**",
		"- one\n- two",
		"\tfmt.Println(\"tab\")",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, bad := range []string{"alert(", "p{}", "<h1>"} {
		if strings.Contains(out, bad) {
			t.Errorf("output holds %q:\n%s", bad, out)
		}
	}
}

func TestWebFetchPassesTextThrough(t *testing.T) {
	bodies := map[string]struct{ ctype, body string }{
		"/plain": {"text/plain", "line one\n\tindented <b>not html</b>\n"},
		"/json":  {"application/json", `{"name": "lite-agent", "tags": ["a", "b"]}`},
		"/latin": {"text/plain; charset=iso-8859-1", "caf\xe9 cr\xe8me"},
		"/none":  {"", "just words, no content type"},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := bodies[r.URL.Path]
		w.Header()["Content-Type"] = []string{b.ctype}
		if b.ctype == "" {
			w.Header()["Content-Type"] = nil
		}
		fmt.Fprint(w, b.body)
	}))
	defer srv.Close()
	for path, want := range map[string]string{
		"/plain": "line one\n\tindented <b>not html</b>",
		"/json":  `{"name": "lite-agent", "tags": ["a", "b"]}`,
		"/latin": "café crème",
		"/none":  "just words, no content type",
	} {
		out, isErr := fetchCall(t, t.Context(), WebFetch{}, srv.URL+path)
		if isErr || !strings.Contains(out, want) {
			t.Errorf("%s: error %v, output lacks %q:\n%s", path, isErr, want, out)
		}
	}
}

func TestWebFetchRefusesBinary(t *testing.T) {
	png := "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/logo.png":
			w.Header().Set("Content-Type", "image/png")
		case "/sniffed":
			w.Header()["Content-Type"] = nil
		case "/lying":
			w.Header().Set("Content-Type", "text/plain")
		}
		fmt.Fprint(w, png)
	}))
	defer srv.Close()
	for path, want := range map[string]string{
		"/logo.png": "is image/png (",
		"/sniffed":  "is image/png (",
		"/lying":    "is not text (it contains NUL bytes)",
	} {
		out, isErr := fetchCall(t, t.Context(), WebFetch{}, srv.URL+path)
		if !isErr || !strings.Contains(out, want) || !strings.Contains(out, "web_fetch returns HTML pages and text only") {
			t.Errorf("%s: error %v, output lacks %q:\n%s", path, isErr, want, out)
		}
	}
}

func TestWebFetchSizeCap(t *testing.T) {
	big := strings.Repeat("0123456789abcdef", 1<<12) // 64 KiB
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		if r.URL.Path == "/declared" {
			w.Header().Set("Content-Length", fmt.Sprint(len(big)))
			fmt.Fprint(w, big)
			return
		}
		// Chunked: the length is known only by reading.
		for i := 0; i < 4; i++ {
			fmt.Fprint(w, big[:len(big)/4])
			w.(http.Flusher).Flush()
		}
	}))
	defer srv.Close()
	w := WebFetch{MaxBytes: 16 << 10}
	out, isErr := fetchCall(t, t.Context(), w, srv.URL+"/declared")
	if !isErr || !strings.Contains(out, "is 64K, over web_fetch's limit of 16K; nothing was read") {
		t.Errorf("declared oversized body: error %v:\n%s", isErr, out)
	}
	out, isErr = fetchCall(t, t.Context(), w, srv.URL+"/chunked")
	if isErr || !strings.Contains(out, "[the response is longer than 16K: only its first 16K were read]") {
		t.Errorf("chunked oversized body: error %v:\n%s", isErr, out)
	}
	if n := strings.Count(out, "0123456789abcdef"); n != 1024 {
		t.Errorf("chunked body: %d blocks of 16 bytes shown, want the first 16 KiB (1024)", n)
	}
}

func TestWebFetchTimeCap(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow-body" {
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprint(w, "the start ")
			w.(http.Flusher).Flush()
		}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	w := WebFetch{Timeout: 300 * time.Millisecond}
	for _, path := range []string{"/slow-headers", "/slow-body"} {
		out, isErr := fetchCall(t, t.Context(), w, srv.URL+path)
		if !isErr || !strings.Contains(out, "took longer than 300ms and was stopped") {
			t.Errorf("%s: error %v:\n%s", path, isErr, out)
		}
	}
	// The user's cancel is not the time cap.
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(50*time.Millisecond, cancel)
	out, isErr := fetchCall(t, ctx, WebFetch{}, srv.URL+"/slow-headers")
	if !isErr || !strings.Contains(out, "cancelled") {
		t.Errorf("cancelled fetch: error %v:\n%s", isErr, out)
	}
}

func TestWebFetchRedirects(t *testing.T) {
	var otherHits atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		otherHits.Add(1)
		fmt.Fprint(w, "the other host")
	}))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/old":
			http.Redirect(w, r, "/new", http.StatusMovedPermanently)
		case "/away":
			http.Redirect(w, r, other.URL+"/page", http.StatusFound)
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		case "/file":
			http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
		default:
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprint(w, "the new page")
		}
	}))
	defer srv.Close()

	out, isErr := fetchCall(t, t.Context(), WebFetch{}, srv.URL+"/old")
	if isErr || !strings.Contains(out, "fetched "+srv.URL+"/new (HTTP 200") || !strings.Contains(out, "redirected from "+srv.URL+"/old") || !strings.Contains(out, "the new page") {
		t.Errorf("same-host redirect: error %v:\n%s", isErr, out)
	}
	out, isErr = fetchCall(t, t.Context(), WebFetch{}, srv.URL+"/away")
	if !isErr || !strings.Contains(out, "redirects to "+other.URL+"/page, which web_fetch did not follow") || !strings.Contains(out, "same host only") {
		t.Errorf("redirect to another host: error %v:\n%s", isErr, out)
	}
	for path, want := range map[string]string{"/loop": "more than 10 redirects", "/file": "not an http:// or https:// URL"} {
		if out, isErr := fetchCall(t, t.Context(), WebFetch{}, srv.URL+path); !isErr || !strings.Contains(out, want) {
			t.Errorf("%s: error %v, output lacks %q:\n%s", path, isErr, want, out)
		}
	}

	// A policy sees each hop; its error is told to the model.
	var seen []string
	policy := WebFetch{Redirect: func(from, to *url.URL) error {
		seen = append(seen, from.Path+" -> "+to.String())
		if to.Host == mustHost(t, other.URL) {
			return errors.New("a permission rule denies it")
		}
		return nil
	}}
	out, isErr = fetchCall(t, t.Context(), policy, srv.URL+"/away")
	if !isErr || !strings.Contains(out, "a permission rule denies it") {
		t.Errorf("denied redirect: error %v:\n%s", isErr, out)
	}
	if len(seen) != 1 || seen[0] != "/away -> "+other.URL+"/page" {
		t.Errorf("the policy saw %q", seen)
	}
	if n := otherHits.Load(); n != 0 {
		t.Errorf("the host redirected to got %d requests; a redirect not followed must not reach it", n)
	}
	allowAll := WebFetch{Redirect: func(from, to *url.URL) error { return nil }}
	if out, isErr := fetchCall(t, t.Context(), allowAll, srv.URL+"/away"); isErr || !strings.Contains(out, "the other host") {
		t.Errorf("allowed redirect: error %v:\n%s", isErr, out)
	}
}

func mustHost(t testing.TB, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

func TestWebFetchBadInputAndStatus(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, "<p>No such page</p>")
	}))
	defer srv.Close()
	out, isErr := fetchCall(t, t.Context(), WebFetch{}, srv.URL+"/missing")
	if !isErr || !strings.Contains(out, "answered HTTP 404 Not Found") || !strings.Contains(out, "No such page") {
		t.Errorf("404: error %v:\n%s", isErr, out)
	}
	for in, want := range map[string]string{
		`{"url": ""}`:                    "url is empty",
		`{"url": "file:///etc/passwd"}`:  "not an http:// or https:// URL",
		`{"url": "http://"}`:             "names no host",
		`{"url": 7}`:                     `field "url" must be a string`,
		`{"url": "http://127.0.0.1:1/"}`: "cannot fetch http://127.0.0.1:1/",
	} {
		res := WebFetch{}.Run(t.Context(), callWith(json.RawMessage(in)))
		if !res.IsError || !strings.Contains(res.Output, want) {
			t.Errorf("%s: error %v, output lacks %q:\n%s", in, res.IsError, want, res.Output)
		}
	}
}
