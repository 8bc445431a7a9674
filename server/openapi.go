package server

import (
	_ "embed"
	"net/http"
)

// openAPISpec describes every route of the server (OpenAPI 3.1);
// TestOpenAPIMatchesRoutes keeps it and the route table equal.
//
//go:embed openapi.json
var openAPISpec []byte

// OpenAPI returns the server's OpenAPI document.
func OpenAPI() []byte { return openAPISpec }

func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Write(openAPISpec)
}
