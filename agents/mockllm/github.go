package mockllm

import (
	_ "embed"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"sync"
)

// copilotModels is a Copilot API model listing in the shape Copilot CLI
// 1.0.102 accepts (found by running it against this server; it drops a
// model it does not know, such as gpt-4.1, and takes gpt-5.4).
//
//go:embed copilot-models.json
var copilotModels []byte

// CopilotModel is the model of the listing GitHub serves.
const CopilotModel = "gpt-5.4"

// GitHub is a TLS server on 127.0.0.1 playing GitHub and the Copilot API
// for a Copilot CLI signed in behind a proxy that sends every host there
// (the model gateway's interception): the sign-in answer
// (/copilot_internal/user, naming https://api.individual.githubcopilot.com
// as the Copilot API host), no organisation settings (404, as GitHub says
// it), the model listing (/models, CopilotModel), and the model requests
// (/responses, /chat/completions) passed to the mock model. Every answer
// carries X-GitHub-Request-Id, without which the CLI takes an answer for a
// firewall's. It keeps every request: "METHOD /path Authorization".
type GitHub struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string
}

// StartGitHub starts the server in front of model. Close it when done.
func StartGitHub(model *Server) *GitHub {
	target, _ := url.Parse(model.URL)
	forward := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(target) }}
	g := &GitHub{}
	g.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		g.seen = append(g.seen, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
		g.mu.Unlock()
		w.Header().Set("X-GitHub-Request-Id", "ALFRED:MOCK")
		switch r.URL.Path {
		case "/copilot_internal/user":
			writeJSON(w, http.StatusOK, map[string]any{"login": "octo", "copilot_plan": "individual", "chat_enabled": true,
				"endpoints": map[string]string{"api": "https://api.individual.githubcopilot.com",
					"proxy": "https://proxy.individual.githubcopilot.com", "telemetry": "https://telemetry.individual.githubcopilot.com"}})
		case "/models":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(copilotModels)
		case "/responses", "/chat/completions":
			forward.ServeHTTP(w, r) // the mock's answers say their own content type
		default:
			writeJSON(w, http.StatusNotFound, map[string]any{"message": "Not Found"})
		}
	}))
	return g
}

// Requests returns "METHOD /path Authorization" of every request so far.
func (g *GitHub) Requests() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.seen)
}
