package server_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/internal/fakemodel"
	"github.com/lite-agent/lite-agent/server"
)

// TestTurnWithApprovalOverHTTP: a prompt creates a session; its write
// call waits for approval on the stream, is approved over HTTP, runs, and
// the answer streams; the API then shows the session, its checkpoints and
// its events.
func TestTurnWithApprovalOverHTTP(t *testing.T) {
	m := startModel(t,
		fakemodel.Reply{Text: "I'll write it.", ToolCalls: []fakemodel.ToolCall{toolCall("w1", "write", map[string]any{"path": "hello.txt", "content": "hi\n"})}},
		fakemodel.Reply{Expect: &fakemodel.Expect{ToolResultFor: []string{"w1"}}, Text: "Wrote **hello.txt**.", ChunkSize: 3},
	)
	w := startWorker(t, workerOptions{model: m})
	var c created
	w.must(http.StatusAccepted, "POST", "/api/sessions", map[string]any{"prompt": "write hello"}).decode(t, &c)
	if c.Session == "" || c.PromptSeq < 2 || !strings.HasPrefix(c.Stream, "/api/sessions/"+c.Session+"/stream") {
		t.Fatalf("create: %+v", c)
	}
	st := w.follow("/api/sessions/" + c.Session + "/stream")
	ap := st.waitFor("the approval", func(m sse) bool { return m.event == "approval" })
	var req struct {
		CallID, Tool, Diff string `json:"-"`
	}
	var raw map[string]any
	json.Unmarshal([]byte(ap.data), &raw)
	req.CallID, req.Tool, req.Diff = raw["call_id"].(string), raw["tool"].(string), raw["diff"].(string)
	if req.CallID != "w1" || req.Tool != "write" || !strings.Contains(req.Diff, "+hi") {
		t.Fatalf("approval message: %s", ap.data)
	}
	var pend struct{ Approvals []map[string]any }
	w.must(200, "GET", "/api/sessions/"+c.Session+"/pending", nil).decode(t, &pend)
	if len(pend.Approvals) != 1 || pend.Approvals[0]["call_id"] != "w1" {
		t.Fatalf("pending: %+v", pend)
	}
	if _, err := os.Stat(filepath.Join(w.work, "hello.txt")); err == nil {
		t.Fatal("the file was written before the approval")
	}
	if r := w.call("POST", "/api/sessions/"+c.Session+"/approvals/w1", map[string]any{"decision": "maybe"}); r.status != 400 {
		t.Fatalf("bad decision: %d %s", r.status, r.body)
	}
	w.must(200, "POST", "/api/sessions/"+c.Session+"/approvals/w1", map[string]any{"decision": "once"})
	st.waitEvent("turn_completed")
	var text strings.Builder
	for _, m := range st.snapshot() {
		if m.event == "delta" {
			var d struct{ Kind, Text string }
			json.Unmarshal([]byte(m.data), &d)
			if d.Kind == "text" {
				text.WriteString(d.Text)
			}
		}
	}
	if !strings.Contains(text.String(), "Wrote **hello.txt**.") {
		t.Fatalf("deltas streamed %q", text.String())
	}
	if b, err := os.ReadFile(filepath.Join(w.work, "hello.txt")); err != nil || string(b) != "hi\n" {
		t.Fatalf("hello.txt: %q %v", b, err)
	}
	contiguous(t, st.events(), 1)
	st.waitFor("the turn's end", func(m sse) bool { return m.event == "turn" && strings.Contains(m.data, `"ended"`) })

	var info struct {
		ID          string
		Head        int64
		Status      string
		Checkpoints []struct{ Seq int64 }
	}
	w.must(200, "GET", "/api/sessions/"+c.Session, nil).decode(t, &info)
	if info.ID != c.Session || info.Status != "completed" || len(info.Checkpoints) != 1 {
		t.Fatalf("info: %+v", info)
	}
	var list struct{ Sessions []struct{ ID string } }
	w.must(200, "GET", "/api/sessions", nil).decode(t, &list)
	if len(list.Sessions) != 1 || list.Sessions[0].ID != c.Session {
		t.Fatalf("list: %+v", list)
	}
	var cps struct{ Checkpoints []struct{ Seq int64 } }
	w.must(200, "GET", "/api/sessions/"+c.Session+"/checkpoints", nil).decode(t, &cps)
	if len(cps.Checkpoints) != 1 || cps.Checkpoints[0].Seq != info.Checkpoints[0].Seq {
		t.Fatalf("checkpoints: %+v", cps)
	}
	var hits struct{ Hits []struct{ Session string } }
	w.must(200, "GET", "/api/search?q=hello", nil).decode(t, &hits)
	if len(hits.Hits) == 0 || hits.Hits[0].Session != c.Session {
		t.Fatalf("search: %s", fmtJSON(hits))
	}
}

// TestEventsPagedAndStreamResumes: the log comes in pages; a stream
// resumed with Last-Event-ID (or ?after=) starts right after that seq.
func TestEventsPagedAndStreamResumes(t *testing.T) {
	m := startModel(t, fakemodel.Reply{Text: "one"}, fakemodel.Reply{Text: "two"})
	w := startWorker(t, workerOptions{model: m})
	c := w.newSession("first")
	w.must(200, "POST", "/api/sessions/"+c.Session+"/prompts", map[string]any{"prompt": "second", "wait": true})
	var all struct {
		Events []struct{ Seq int64 }
		Head   int64
		Next   int64
	}
	w.must(200, "GET", "/api/sessions/"+c.Session+"/events?limit=1000", nil).decode(t, &all)
	if len(all.Events) < 6 || all.Next != 0 || all.Events[len(all.Events)-1].Seq != all.Head {
		t.Fatalf("whole log: %+v", all)
	}
	var page struct {
		Events []struct{ Seq int64 }
		Next   int64
	}
	w.must(200, "GET", "/api/sessions/"+c.Session+"/events?from=2&limit=2", nil).decode(t, &page)
	if len(page.Events) != 2 || page.Events[0].Seq != 2 || page.Next != 4 {
		t.Fatalf("page from 2: %+v", page)
	}
	for _, bad := range []string{"from=0", "limit=0", "limit=5000", "from=x"} {
		if r := w.call("GET", "/api/sessions/"+c.Session+"/events?"+bad, nil); r.status != 400 {
			t.Fatalf("events?%s: %d %s", bad, r.status, r.body)
		}
	}

	resumeAt := all.Head - 2
	st := w.follow("/api/sessions/"+c.Session+"/stream", "Last-Event-ID", strconv.FormatInt(resumeAt, 10))
	st.waitFor("the head", func(m sse) bool { return m.id == strconv.FormatInt(all.Head, 10) })
	if got := st.events(); !slices.Equal(got, []int64{resumeAt + 1, resumeAt + 2}) {
		t.Fatalf("resumed after %d: got seqs %v", resumeAt, got)
	}
	st2 := w.follow("/api/sessions/" + c.Session + "/stream?after=" + strconv.FormatInt(all.Head-1, 10))
	st2.waitFor("the head", func(m sse) bool { return m.id == strconv.FormatInt(all.Head, 10) })
	if got := st2.events(); !slices.Equal(got, []int64{all.Head}) {
		t.Fatalf("after %d: got seqs %v", all.Head-1, got)
	}
	if r := w.call("GET", "/api/sessions/"+c.Session+"/stream", nil, "Last-Event-ID", "nope"); r.status != 400 || !strings.Contains(string(r.body), "Last-Event-ID") {
		t.Fatalf("bad Last-Event-ID: %d %s", r.status, r.body)
	}
	// A live stream sees the next turn's events after the ones it had.
	m.Close()
}

// TestAuthTokenAndCookie: no token and a wrong token are 401 everywhere;
// the viewer's ?token= link sets an HttpOnly SameSite=Strict cookie and
// redirects to the page without the token.
func TestAuthTokenAndCookie(t *testing.T) {
	w := startWorker(t, workerOptions{})
	for _, path := range []string{"/api/sessions", "/openapi.json", "/api/sessions/x/stream"} {
		if r := w.callWith("GET", path, nil); r.status != 401 || !strings.Contains(string(r.body), "token") {
			t.Fatalf("GET %s without a token: %d %s", path, r.status, r.body)
		}
		if r := w.callWith("GET", path, nil, "Authorization", "Bearer wrong-token-wrong-token"); r.status != 401 {
			t.Fatalf("GET %s with a wrong token: %d %s", path, r.status, r.body)
		}
	}
	if r := w.callWith("GET", "/", nil, "Accept", "text/html"); r.status != 401 || !strings.Contains(string(r.body), "viewer: link") || !strings.Contains(r.header.Get("Content-Type"), "text/html") {
		t.Fatalf("a browser without the cookie: %d %v %s", r.status, r.header, r.body)
	}
	if r := w.callWith("POST", "/api/sessions", `{"prompt":"x"}`); r.status != 401 {
		t.Fatalf("POST without a token: %d", r.status)
	}
	if r := w.callWith("GET", "/api/sessions?token="+w.srv.Token(), nil); r.status != 401 {
		t.Fatalf("the token in an API URL must not count: %d", r.status)
	}
	if r := w.callWith("GET", "/openapi.json?token=wrong", nil); r.status != 401 {
		t.Fatalf("a wrong link token: %d", r.status)
	}
	r := w.callWith("GET", "/openapi.json?token="+w.srv.Token()+"&x=1", nil)
	if r.status != http.StatusSeeOther || r.header.Get("Location") != "/openapi.json?x=1" {
		t.Fatalf("link: %d %v", r.status, r.header)
	}
	cookie := r.header.Get("Set-Cookie")
	for _, want := range []string{server.CookieName + "=" + w.srv.Token(), "HttpOnly", "SameSite=Strict", "Path=/"} {
		if !strings.Contains(cookie, want) {
			t.Fatalf("Set-Cookie %q lacks %q", cookie, want)
		}
	}
	if r := w.callWith("GET", "/api/sessions", nil, "Cookie", server.CookieName+"="+w.srv.Token()); r.status != 200 {
		t.Fatalf("with the cookie: %d %s", r.status, r.body)
	}
	if r := w.callWith("GET", "/api/sessions", nil, "Cookie", server.CookieName+"=nope"); r.status != 401 {
		t.Fatalf("with a wrong cookie: %d", r.status)
	}
	var doc map[string]any
	w.must(200, "GET", "/openapi.json", nil).decode(t, &doc)
	if doc["openapi"] == nil {
		t.Fatalf("openapi.json: %v", doc)
	}
}

// TestHostOriginAndCORS: a Host that is not loopback (DNS rebinding) and
// a foreign Origin (CSRF) are 403 even with the token; the server's own
// origin passes; CORS headers go only to configured origins.
func TestHostOriginAndCORS(t *testing.T) {
	w := startWorker(t, workerOptions{server: &server.Options{CORSOrigins: []string{"http://app.example:3000"}}})
	host := strings.TrimPrefix(w.http.URL, "http://")
	if r := w.call("GET", "/api/sessions", nil, "Host", "evil.example"); r.status != 403 || !strings.Contains(string(r.body), "Host") {
		t.Fatalf("rebinding Host: %d %s", r.status, r.body)
	}
	if r := w.call("GET", "/api/sessions", nil, "Host", "localhost:1234"); r.status != 200 {
		t.Fatalf("localhost Host: %d %s", r.status, r.body)
	}
	if r := w.call("POST", "/api/sessions", `{"prompt":"x"}`, "Origin", "http://evil.example"); r.status != 403 || !strings.Contains(string(r.body), "origin") {
		t.Fatalf("foreign Origin: %d %s", r.status, r.body)
	}
	if r := w.call("POST", "/api/sessions", `{"prompt":"x"}`, "Sec-Fetch-Site", "cross-site"); r.status != 403 {
		t.Fatalf("cross-site fetch: %d %s", r.status, r.body)
	}
	r := w.call("GET", "/api/sessions", nil, "Origin", "http://"+host)
	if r.status != 200 || r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("own origin: %d %v", r.status, r.header)
	}
	pre := w.callWith("OPTIONS", "/api/sessions", nil, "Origin", "http://app.example:3000", "Access-Control-Request-Method", "POST")
	if pre.status != 204 || pre.header.Get("Access-Control-Allow-Origin") != "http://app.example:3000" {
		t.Fatalf("preflight: %d %v", pre.status, pre.header)
	}
	if r := w.call("GET", "/api/sessions", nil, "Origin", "http://app.example:3000"); r.status != 200 || r.header.Get("Access-Control-Allow-Origin") != "http://app.example:3000" {
		t.Fatalf("CORS origin: %d %v", r.status, r.header)
	}
	if r := w.callWith("GET", "/api/sessions", nil, "Origin", "http://app.example:3000"); r.status != 401 {
		t.Fatalf("a CORS origin still needs the token: %d", r.status)
	}
	plain := startWorker(t, workerOptions{})
	if r := plain.callWith("OPTIONS", "/api/sessions", nil, "Origin", "http://app.example:3000"); r.status != 403 || r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("no CORS configured: %d %v", r.status, r.header)
	}
}

// TestBadInput: malformed JSON, unknown fields, oversized bodies, unknown
// sessions and calls each get their status and a message saying what to
// do, and nothing is written.
func TestBadInput(t *testing.T) {
	m := startModel(t, fakemodel.Reply{Text: "ok"})
	w := startWorker(t, workerOptions{model: m, server: &server.Options{MaxBodyBytes: 1024}})
	c := w.newSession("hello")
	id := c.Session
	before := logTypes(t, w.store, id)
	cases := []struct {
		method, path string
		body         any
		status       int
		want         string
	}{
		{"POST", "/api/sessions", `{"prompt": `, 400, "JSON"},
		{"POST", "/api/sessions", `{"prompt": "x", "extra": 1}`, 400, "unknown field"},
		{"POST", "/api/sessions", `{}`, 400, "first prompt"},
		{"POST", "/api/sessions", `{"prompt":"` + strings.Repeat("a", 2000) + `"}`, 413, "limit"},
		{"POST", "/api/sessions/" + id + "/prompts", `[1,2]`, 400, "JSON"},
		{"POST", "/api/sessions/" + id + "/prompts", `{"prompt":"a"} {"prompt":"b"}`, 400, "more than one"},
		{"POST", "/api/sessions/" + id + "/prompts", `{"prompt":"   "}`, 400, "empty"},
		{"POST", "/api/sessions/" + id + "/rewind", `{"seq": 3}`, 400, "checkpoint"},
		{"POST", "/api/sessions/" + id + "/rewind", `{}`, 400, "seq"},
		{"POST", "/api/sessions/" + id + "/fork", `{"seq": -1}`, 400, "seq"},
		{"POST", "/api/sessions/" + id + "/acknowledge", `{"tokens": []}`, 400, "tokens"},
		{"POST", "/api/sessions/" + id + "/acknowledge", `{"tokens": ["rv-nope"]}`, 400, "rv-nope"},
		{"POST", "/api/sessions/" + id + "/approvals/nope", `{"decision":"once"}`, 404, "no call"},
		{"POST", "/api/sessions/" + id + "/questions/nope", `{"answer":"x"}`, 404, "no call"},
		{"POST", "/api/sessions/" + id + "/cancel", nil, 409, "no turn"},
		{"GET", "/api/search?q=", nil, 400, "words"},
		{"GET", "/api/sessions?limit=x", nil, 400, "number"},
		{"GET", "/api/sessions/nope", nil, 404, "not found"},
		{"GET", "/api/sessions/nope/checkpoints", nil, 404, "not found"},
		{"GET", "/api/sessions/nope/events", nil, 404, "not found"},
		{"GET", "/api/sessions/nope/stream", nil, 404, "not found"},
		{"GET", "/api/sessions/nope/pending", nil, 404, "not found"},
		{"POST", "/api/sessions/nope/prompts", `{"prompt":"x"}`, 404, "not found"},
		{"POST", "/api/sessions/nope/cancel", nil, 404, "not found"},
		{"POST", "/api/sessions/nope/rewind", `{"seq": 1}`, 404, "not found"},
		{"POST", "/api/sessions/nope/fork", `{}`, 404, "not found"},
		{"POST", "/api/sessions/nope/acknowledge", `{"tokens":["rv-x"]}`, 404, "not found"},
		{"DELETE", "/api/sessions/nope", nil, 404, "not found"},
		{"GET", "/api/nothing", nil, 404, ""},
		{"PUT", "/api/sessions", nil, 405, ""},
	}
	for _, tc := range cases {
		r := w.call(tc.method, tc.path, tc.body)
		if r.status != tc.status {
			t.Errorf("%s %s %v: status %d, want %d: %s", tc.method, tc.path, tc.body, r.status, tc.status, r.body)
			continue
		}
		if tc.want == "" {
			continue
		}
		var e apiErr
		r.decode(t, &e)
		if e.Code == "" || !strings.Contains(e.Error, tc.want) {
			t.Errorf("%s %s: error %+v does not say %q", tc.method, tc.path, e, tc.want)
		}
	}
	var e apiErr
	w.call("POST", "/api/sessions/"+id+"/rewind", `{"seq": 3}`).decode(t, &e)
	if len(e.Valid) != 1 {
		t.Fatalf("a rewind to a non-checkpoint lists the valid ones: %+v", e)
	}
	if after := logTypes(t, w.store, id); !slices.Equal(before, after) {
		t.Fatalf("bad requests changed the log: %v → %v", before, after)
	}
	var list struct{ Sessions []any }
	w.must(200, "GET", "/api/sessions", nil).decode(t, &list)
	if len(list.Sessions) != 1 {
		t.Fatalf("bad requests created sessions: %d", len(list.Sessions))
	}
}
