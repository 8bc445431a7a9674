package server

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestOpenAPIMatchesRoutes: every route the handler serves is in
// openapi.json with its method, and every operation there is served.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(OpenAPI(), &doc); err != nil {
		t.Fatalf("openapi.json does not parse: %v", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("openapi version %q", doc.OpenAPI)
	}
	var documented []string
	for path, ops := range doc.Paths {
		for method := range ops {
			documented = append(documented, strings.ToUpper(method)+" "+path)
		}
	}
	var served []string
	for _, r := range (&Server{}).table() {
		// OpenAPI has no {$} (exact match) and spells {name...} {name}.
		p := strings.ReplaceAll(r.pattern, "{$}", "")
		if p == "" {
			p = "/"
		}
		p = strings.ReplaceAll(p, "...}", "}")
		served = append(served, r.method+" "+p)
	}
	slices.Sort(documented)
	slices.Sort(served)
	for _, s := range served {
		if !slices.Contains(documented, s) {
			t.Errorf("route %s is served but not in openapi.json", s)
		}
	}
	for _, d := range documented {
		if !slices.Contains(served, d) {
			t.Errorf("openapi.json documents %s, which is not served", d)
		}
	}
}
