package postgres

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/session"
)

func TestStatements(t *testing.T) {
	big := session.Event{Type: "x", Data: make([]byte, statementBytes/2+1)}
	small := session.Event{Type: "x", Data: []byte(`{}`)}
	req := func(id string, events ...session.Event) plan {
		return plan{r: &appendReq{id: id, events: events}}
	}
	cases := []struct {
		name  string
		plans []plan
		solo  bool
		want  string // statements separated by |, appends by their session ids
	}{
		{"distinct sessions share one", []plan{req("a", small), req("b", small), req("c", small)}, false, "a b c"},
		{"solo", []plan{req("a", small), req("b", small)}, true, "a|b"},
		{"chained appends follow", []plan{req("a", small), req("a", small), req("b", small), req("a", small)}, false, "a b|a|a"},
		{"later sessions fill earlier statements", []plan{req("a", small), req("a", small), req("b", small), req("c", small)}, false, "a b c|a"},
		{"big data splits", []plan{req("a", big), req("b", big), req("c", small)}, false, "a c|b"},
		{"one append over the cap goes alone", []plan{req("a", big, big, big), req("b", small)}, false, "a|b"},
		{"order kept past a split", []plan{req("a", big), req("b", big), req("b", small)}, false, "a|b|b"},
	}
	for _, tc := range cases {
		var got []string
		for _, st := range statements(tc.plans, tc.solo) {
			var ids []string
			for _, p := range st.plans {
				ids = append(ids, p.r.id)
			}
			got = append(got, strings.Join(ids, " "))
		}
		if g := strings.Join(got, "|"); g != tc.want {
			t.Errorf("%s: statements %q, want %q", tc.name, g, tc.want)
		}
	}
}

func TestURLSecrets(t *testing.T) {
	cases := []struct {
		url  string
		want []string
	}{
		{"postgres://u:p%40ss-word@h/db", []string{"p@ss-word", "p%40ss-word"}},
		{"postgres://u:secret@h:notaport/db", []string{"secret"}},
		{"postgres://h/db?user=u&password=qsecret", []string{"qsecret"}},
		{"postgresql://u:a:b:c@h:1/db", []string{"a:b:c"}},
		{"postgres://u@h/db", nil},
	}
	for _, tc := range cases {
		got := urlSecrets(tc.url)
		for _, w := range tc.want {
			found := false
			for _, g := range got {
				found = found || g == w
			}
			if !found {
				t.Errorf("secrets of %s: %q, missing %q", tc.url, got, w)
			}
		}
		if tc.want == nil && len(got) != 0 {
			t.Errorf("secrets of %s: %q, want none", tc.url, got)
		}
		err := scrubError(fmt.Errorf("failed at %s", tc.url), got)
		for _, w := range tc.want {
			if strings.Contains(err.Error(), w) {
				t.Errorf("scrubbed %q still shows %q", err, w)
			}
		}
	}
}
