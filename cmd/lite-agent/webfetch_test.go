package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/lite-agent/lite-agent/internal/fakemodel"
)

// webSites starts two local web sites: docs, which a rule allows, and
// blocked, which a rule denies; blocked counts the requests it gets.
func webSites(t *testing.T) (docs, blocked *httptest.Server, blockedHits *atomic.Int32) {
	t.Helper()
	blockedHits = &atomic.Int32{}
	blocked = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		blockedHits.Add(1)
		fmt.Fprint(w, "secret page")
	}))
	t.Cleanup(blocked.Close)
	docs = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/moved" {
			http.Redirect(w, r, blocked.URL+"/leak", http.StatusFound)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<html><body><h2>Install</h2><p>Run <code>go install</code>, see <a href="/faq">the FAQ</a>.</p></body></html>`)
	}))
	t.Cleanup(docs.Close)
	return docs, blocked, blockedHits
}

func hostOf(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// TestWebFetchByRules: in a one-shot run the model fetches a page a
// project rule allows and gets it as Markdown; a fetch of a denied host is
// denied with the rule's reason and never reaches it, nor does a redirect
// to it; a host no rule names is denied with how to allow it.
func TestWebFetchByRules(t *testing.T) {
	docs, blocked, hits := webSites(t)
	work := project(t, "", fmt.Sprintf("[permissions]\nallow = [\"web_fetch(domain:%s)\"]\ndeny = [{ pattern = \"web_fetch(domain:%s)\", reason = \"that host is off limits\" }]\n",
		hostOf(t, docs.URL), hostOf(t, blocked.URL)))
	srv := startModel(t,
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{
			toolCall("f1", "web_fetch", map[string]string{"url": docs.URL + "/install"}),
			toolCall("f2", "web_fetch", map[string]string{"url": blocked.URL + "/direct"}),
			toolCall("f3", "web_fetch", map[string]string{"url": docs.URL + "/moved"}),
		}},
		fakemodel.Reply{Expect: &fakemodel.Expect{ToolResultFor: []string{"f1", "f2", "f3"}, BodyContains: []string{
			`## Install`, "Run `go install`, see [the FAQ](" + docs.URL + "/faq).",
			"A permission rule denied this call: that host is off limits.",
			"redirects to " + blocked.URL + "/leak, which web_fetch did not follow: a permission rule denies it (that host is off limits)",
		}}, Text: "Read the docs."},
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{toolCall("f4", "web_fetch", map[string]string{"url": "http://127.0.0.1:1/unnamed"})}},
		fakemodel.Reply{Expect: &fakemodel.Expect{ToolResultFor: []string{"f4"}, BodyContains: []string{"nobody to approve it", "--allow network"}}, Text: "Could not."},
	)
	code, out, errs := run(t, srv, work, "read the install docs")
	if code != 0 || !strings.Contains(out, "Read the docs.") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the denied host got %d requests", n)
	}
	code, out, errs = run(t, srv, work, "and the other page")
	if code != 0 || !strings.Contains(out, "Could not.") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	if !strings.Contains(errs, "denied web_fetch (one-shot runs need --allow network (every fetch; or a rule such as web_fetch(domain:HOST))") {
		t.Errorf("stderr does not say how to allow the fetch:\n%s", errs)
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
}

// TestWebFetchAsksInLineMode: with no rule, the line mode asks before a
// fetch, naming the URL, and offers to allow the host.
func TestWebFetchAsksInLineMode(t *testing.T) {
	docs, _, _ := webSites(t)
	work := project(t, "", "")
	srv := startModel(t,
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{toolCall("f1", "web_fetch", map[string]string{"url": docs.URL + "/install"})}},
		fakemodel.Reply{Expect: &fakemodel.Expect{ToolResultFor: []string{"f1"}, BodyContains: []string{"## Install"}}, Text: "Fetched."},
	)
	r := liteAgent(t, srv, work, "read the docs\ny\n/exit\n", []string{"XDG_CONFIG_HOME=" + configHome}, "--plain")
	if r.code != 0 || !strings.Contains(r.stdout, "Fetched.") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.errs)
	}
	for _, want := range []string{
		"allow web_fetch " + docs.URL + "/install?",
		"[p] web_fetch(domain:127.0.0.1) this session",
	} {
		if !strings.Contains(r.errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.errs)
		}
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
}
