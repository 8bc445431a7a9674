package builtin

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/lite-agent/lite-agent/sandbox"
	"github.com/lite-agent/lite-agent/tool"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	sandbox.Launch() // the sandbox tests re-execute this binary as their launcher
	goleak.VerifyTestMain(m)
}

// workdir is a test workdir and a directory outside it, both canonical.
type workdir struct {
	dir, outside string
	root         *tool.Root
}

func newWorkdir(t testing.TB, allowOutside ...bool) *workdir {
	t.Helper()
	base, err := tool.Canonical(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w := &workdir{dir: filepath.Join(base, "work"), outside: filepath.Join(base, "outside")}
	for _, d := range []string{w.dir, w.outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFiles(t, w.outside, map[string]string{"secret.txt": "secret\n", "src/x.go": "package x // outside\n"})
	var allow []string
	if len(allowOutside) > 0 && allowOutside[0] {
		allow = append(allow, w.outside)
	}
	if w.root, err = tool.OpenRoot(w.dir, allow...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.root.Close() })
	return w
}

// writeFiles creates files below dir; a name ending in "/" is a directory.
func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if strings.HasSuffix(name, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func symlink(t testing.TB, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func readFile(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// call runs a tool with a JSON input.
func (w *workdir) call(t testing.TB, tl tool.Tool, input string) tool.Result {
	t.Helper()
	return tl.Run(t.Context(), tool.Call{ID: "c1", Input: json.RawMessage(input), Root: w.root})
}

// check compares a result with what a test expects: IsError, and that the
// output holds every want (and none of notWant).
func check(t testing.TB, name string, got tool.Result, wantErr bool, want []string, notWant ...string) {
	t.Helper()
	if got.IsError != wantErr {
		t.Errorf("%s: IsError = %v, want %v; output:\n%s", name, got.IsError, wantErr, clipOutput(got.Output))
	}
	for _, w := range want {
		if !strings.Contains(got.Output, w) {
			t.Errorf("%s: output lacks %q; output:\n%s", name, w, clipOutput(got.Output))
		}
	}
	for _, w := range notWant {
		if strings.Contains(got.Output, w) {
			t.Errorf("%s: output has %q; output:\n%s", name, w, clipOutput(got.Output))
		}
	}
}

// inputTypes maps each tool to its input struct, to check the schemas.
var inputTypes = map[string]any{
	"read": readInput{}, "write": writeInput{}, "edit": editInput{}, "delete": deleteInput{},
	"glob": globInput{}, "grep": grepInput{}, "ls": lsInput{}, "bash": bashInput{},
	"web_fetch": webFetchInput{},
}

func TestSpecs(t *testing.T) {
	wantKinds := map[string]tool.Kind{
		"read": tool.KindRead, "write": tool.KindEdit, "edit": tool.KindEdit, "delete": tool.KindEdit,
		"glob": tool.KindRead, "grep": tool.KindRead, "ls": tool.KindRead, "bash": tool.KindExec,
		"web_fetch": tool.KindNetwork,
	}
	seen := map[string]bool{}
	for _, tl := range All() {
		s := tl.Spec()
		if seen[s.Name] {
			t.Errorf("tool %q listed twice", s.Name)
		}
		seen[s.Name] = true
		if s.Kind != wantKinds[s.Name] {
			t.Errorf("%s: kind %q, want %q", s.Name, s.Kind, wantKinds[s.Name])
		}
		if len(strings.TrimSpace(s.Description)) < 100 {
			t.Errorf("%s: description too short: %q", s.Name, s.Description)
		}
		var schema struct {
			Type       string                    `json:"type"`
			Properties map[string]map[string]any `json:"properties"`
			Required   []string                  `json:"required"`
		}
		if err := json.Unmarshal(s.InputSchema, &schema); err != nil {
			t.Errorf("%s: schema is not JSON: %v", s.Name, err)
			continue
		}
		if schema.Type != "object" {
			t.Errorf("%s: schema type %q", s.Name, schema.Type)
		}
		var props []string
		for p, def := range schema.Properties {
			props = append(props, p)
			if def["type"] == nil || def["description"] == nil {
				t.Errorf("%s: property %s needs a type and a description", s.Name, p)
			}
		}
		for _, r := range schema.Required {
			if schema.Properties[r] == nil {
				t.Errorf("%s: required %q is not a property", s.Name, r)
			}
		}
		var fields []string
		for _, f := range reflect.VisibleFields(reflect.TypeOf(inputTypes[s.Name])) {
			if !f.Anonymous {
				fields = append(fields, strings.Split(f.Tag.Get("json"), ",")[0])
			}
		}
		slices.Sort(props)
		slices.Sort(fields)
		if diff := cmp.Diff(fields, props); diff != "" {
			t.Errorf("%s: schema properties differ from the input struct (-struct +schema):\n%s", s.Name, diff)
		}
		_, isMutator := tl.(tool.Mutator)
		if isMutator != (s.Kind == tool.KindEdit) {
			t.Errorf("%s: Mutator = %v for kind %s", s.Name, isMutator, s.Kind)
		}
	}
	if len(seen) != len(wantKinds) {
		t.Errorf("All() has %d tools, want %d", len(seen), len(wantKinds))
	}
}

func TestDecode(t *testing.T) {
	type args struct {
		N flexInt   `json:"n"`
		F flexFloat `json:"f"`
		B flexBool  `json:"b"`
		S string    `json:"s"`
	}
	tests := []struct {
		in      string
		want    args
		wantErr string
	}{
		{in: ``, want: args{}},
		{in: `null`, want: args{}},
		{in: `{"n": 3, "f": 1.5, "b": true, "s": "x"}`, want: args{3, 1.5, true, "x"}},
		{in: `{"n": "3", "f": "2.5", "b": "true"}`, want: args{N: 3, F: 2.5, B: true}},
		{in: `{"n": 3.0, "b": "False", "extra": 1}`, want: args{N: 3}},
		{in: `{"n": null, "b": null}`, want: args{}},
		{in: `{"n": 1.5}`, wantErr: "not a whole number"},
		{in: `{"n": "x"}`, wantErr: "not a number"},
		{in: `{"b": "yes"}`, wantErr: "not true or false"},
		{in: `{"s": 5}`, wantErr: `field "s" must be a string`},
		{in: `[1]`, wantErr: "expected a JSON object"},
		{in: `"path"`, wantErr: "expected a JSON object"},
		{in: `{"s": "a"} {"s": "b"}`, wantErr: "extra data"},
		{in: `{"s": `, wantErr: "invalid input"},
	}
	for _, tt := range tests {
		var got args
		err := decode(json.RawMessage(tt.in), &got)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("decode(%s) error = %v; want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("decode(%s) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

// FuzzDecode feeds arbitrary input to every tool's argument parsing and
// checks it never panics and rejects non-objects.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{}`, `{"path": "a", "offset": "2"}`, `{"replace_all": "true"}`, `{"timeout_seconds": 1e400}`, `[`, `{"path": 1}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		for _, v := range []any{&readInput{}, &writeInput{}, &editInput{}, &globInput{}, &grepInput{}, &lsInput{}, &bashInput{}} {
			err := decode(json.RawMessage(in), v)
			if err == nil && !json.Valid([]byte(in)) && strings.TrimSpace(in) != "" {
				t.Fatalf("decode accepted invalid JSON %q", in)
			}
		}
	})
}

func TestHumanSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 1023: "1023", 1024: "1.0K", 1536: "1.5K", 20 << 20: "20M", 5 << 30: "5.0G"} {
		if got := humanSize(n); got != want {
			t.Errorf("humanSize(%d) = %q, want %q", n, got, want)
		}
	}
}

func contextWithCancel(t testing.TB) (context.Context, context.CancelFunc) {
	t.Helper()
	return context.WithCancel(t.Context())
}

func callFor(w *workdir, input string) tool.Call {
	return tool.Call{ID: "c1", Input: json.RawMessage(input), Root: w.root}
}

// clipOutput keeps test failure messages readable.
func clipOutput(s string) string {
	if len(s) <= 3000 {
		return s
	}
	return s[:2000] + "\n[… test output clipped …]\n" + s[len(s)-1000:]
}
