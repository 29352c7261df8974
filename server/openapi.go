package server

import (
	_ "embed"
	"net/http"
)

// openAPIDoc is the OpenAPI 3 description of every route; a test keeps it and the router in
// step.
//
//go:embed openapi.yaml
var openAPIDoc []byte

func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/yaml")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(openAPIDoc)
}
