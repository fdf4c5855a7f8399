package gateway

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// endpointCase is one provider of TestEndpoints: the requests its CLIs
// send, which pass, and its generation and listing endpoints, around which
// the refused forms are built.
type endpointCase struct {
	provider func(base, key string) Provider
	allowed  []string // "METHOD /path?query" after /<provider>
	gen      string   // a POST endpoint
	list     string   // a GET endpoint
	unlisted string   // a real API path of the provider that is no model endpoint
	shape    func(t *testing.T, body string) string
}

var endpointCases = map[string]endpointCase{
	"anthropic": {
		provider: Anthropic,
		allowed: []string{"POST /v1/messages", "POST /v1/messages?beta=true", "POST /v1/messages/count_tokens?beta=true",
			"GET /v1/models?limit=1000", "GET /v1/models/claude-sonnet-4-5-20250929"},
		gen: "/v1/messages", list: "/v1/models", unlisted: "/v1/files",
		shape: func(t *testing.T, body string) string {
			var b struct {
				Type  string `json:"type"`
				Error struct{ Type, Message string }
			}
			if json.Unmarshal([]byte(body), &b) != nil || b.Type != "error" || b.Error.Type != "permission_error" {
				t.Errorf("not Anthropic's error shape: %s", body)
			}
			return b.Error.Message
		},
	},
	"openai": {
		provider: OpenAI,
		allowed: []string{"POST /v1/responses", "POST /v1/responses/compact", "POST /v1/chat/completions",
			"GET /v1/models?client_version=0.171.0", "GET /v1/models/gpt-5.1-codex"},
		gen: "/v1/responses", list: "/v1/models", unlisted: "/v1/files",
		shape: openAIShape,
	},
	"gemini": {
		provider: Gemini,
		allowed: []string{"POST /v1beta/models/gemini-2.5-pro:generateContent", "POST /v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
			"POST /v1beta/models/gemini-2.5-flash-lite:countTokens", "POST /v1beta/models/gemini-2.5-pro%3AgenerateContent",
			"GET /v1beta/models?pageSize=50", "GET /v1beta/models/gemini-2.5-pro"},
		gen: "/v1beta/models/gemini-2.5-pro:generateContent", list: "/v1beta/models", unlisted: "/upload/v1beta/files",
		shape: func(t *testing.T, body string) string {
			var b struct {
				Error struct {
					Code            int
					Message, Status string
				}
			}
			if json.Unmarshal([]byte(body), &b) != nil || b.Error.Code != 403 || b.Error.Status != "PERMISSION_DENIED" {
				t.Errorf("not Google's error shape: %s", body)
			}
			return b.Error.Message
		},
	},
	"xai": {
		provider: XAI,
		allowed:  []string{"POST /v1/chat/completions", "POST /v1/responses", "GET /v1/models", "GET /v1/models/grok-code-fast-1"},
		gen:      "/v1/chat/completions", list: "/v1/models", unlisted: "/v1/files",
		shape: openAIShape,
	},
}

func openAIShape(t *testing.T, body string) string {
	var b struct {
		Error struct{ Message, Type, Code string }
	}
	if json.Unmarshal([]byte(body), &b) != nil || b.Error.Code != "alfred_endpoint_refused" || b.Error.Message == "" {
		t.Errorf("not OpenAI's error shape: %s", body)
	}
	return b.Error.Message
}

// refusedForm is a request the gateway must refuse: its request line and
// extra headers, whether it is a host refusal (no reason recorded).
type refusedForm struct {
	name, line, hdr string
	host            bool
}

// refusedForms are the forms a request for the provider named name (base
// path prefix, upstream host uphost) is refused in.
func refusedForms(name, prefix, uphost string, c endpointCase) []refusedForm {
	o := func(method, path string) string { return method + " /" + name + path }
	gen, list := c.gen, c.list
	slash := strings.Index(gen[1:], "/") + 1 // the gen path's second slash
	forms := []refusedForm{
		{name: "unlisted", line: o("POST", c.unlisted)},
		{name: "the provider's root", line: o("GET", "")},
		{name: "the provider's root with a slash", line: o("GET", "/")},
		{name: "trailing slash", line: o("POST", gen+"/")},
		{name: "dot-dot", line: o("POST", gen+"/../../files")},
		{name: "dot", line: o("POST", "/."+gen)},
		{name: "%2e%2e", line: o("POST", gen+"/%2e%2e/%2e%2e/files")},
		{name: "%2E%2e", line: o("POST", gen+"/%2E%2e/files")},
		{name: "%2E.", line: o("POST", gen+"/%2E./files")},
		{name: "%2e in a segment", line: o("POST", list+"/gemini-2%2e5")},
		{name: "%2f", line: o("POST", gen[:slash]+"%2f"+gen[slash+1:])},
		{name: "%2F", line: o("POST", gen[:slash]+"%2F"+gen[slash+1:])},
		{name: "%5c", line: o("POST", gen[:slash]+"%5c"+gen[slash+1:])},
		{name: "raw backslash", line: o("POST", gen[:slash]+`\`+gen[slash+1:])},
		{name: "double-encoded dot", line: o("POST", gen+"/%252e%252e/files")},
		{name: "double slash", line: o("POST", "/"+gen)},
		{name: "double slash inside", line: o("POST", gen[:slash]+"/"+gen[slash:])},
		{name: "NUL", line: o("POST", gen+"%00")},
		{name: "GET on a generation endpoint", line: o("GET", gen)},
		{name: "PUT on a generation endpoint", line: o("PUT", gen)},
		{name: "OPTIONS on a generation endpoint", line: o("OPTIONS", gen)},
		{name: "POST on a listing", line: o("POST", list)},
		{name: "DELETE on a model", line: o("DELETE", list+"/some-model")},
		{name: "an all-dots model id", line: o("GET", list+"/...")},
		{name: "a WebSocket upgrade", line: o("GET", gen), hdr: "Connection: Upgrade\r\nUpgrade: websocket\r\n"},
		{name: "absolute-form to the provider with a dot-dot", line: "POST http://" + uphost + prefix + gen + "/../files"},
		{name: "absolute-form to the provider, unlisted", line: "POST http://" + uphost + prefix + c.unlisted},
		{name: "absolute-form to another host", line: "POST http://attacker.example" + gen, host: true},
		{name: "absolute-form to the provider's port elsewhere", line: "POST http://attacker.example:" + strings.Split(uphost, ":")[1] + gen, host: true},
		{name: "CONNECT to the provider", line: "CONNECT " + uphost},
	}
	if prefix != "" {
		forms = append(forms, refusedForm{name: "absolute-form outside the base path", line: "POST http://" + uphost + gen})
	}
	return forms
}

// TestEndpoints: for each provider, with a base URL with and without a
// path prefix, the requests its CLIs send reach the upstream at base path +
// path; every refused form gets a 403 (in the provider's error shape for a
// provider request, naming the path), never reaches the upstream, and is
// recorded with its reason.
func TestEndpoints(t *testing.T) {
	for name, c := range endpointCases {
		for _, prefix := range []string{"", "/gw/" + name} {
			t.Run(name+" base path "+prefix, func(t *testing.T) {
				up, got := recorder(t, 200, `{}`, nil)
				g, _ := newGateway(t, Options{Providers: []Provider{c.provider(up.URL+prefix, realKey)}})
				s := open(t, g, "run")
				auth := "Authorization: Bearer " + s.Token() + "\r\nProxy-Authorization: Basic " +
					base64.StdEncoding.EncodeToString([]byte("agent:"+s.Token())) + "\r\n"
				for i, a := range c.allowed {
					method, path, _ := strings.Cut(a, " ")
					resp, body := rawRequest(t, s, method+" /"+name+path+" HTTP/1.1\r\nHost: gateway\r\n"+auth+"Content-Length: 0\r\n\r\n")
					all := got()
					want, _, _ := strings.Cut(strings.ReplaceAll(prefix+path, "%3A", ":"), "?")
					if resp.StatusCode != 200 || len(all) != i+1 || all[i].Path != want {
						t.Fatalf("%s: status %d %s, the upstream got %v, want %s", a, resp.StatusCode, body, all, want)
					}
				}
				if ref := s.Refused(); len(ref) != 0 {
					t.Fatalf("allowed requests were refused: %v", ref)
				}
				checkRefusedForms(t, s, name, prefix, c, auth, func() int { return len(got()) })
			})
		}
	}
}

// checkRefusedForms sends every refused form to s and checks it never
// reached the upstream (whose request count is upstream) and was recorded.
func checkRefusedForms(t *testing.T, s *Session, name, prefix string, c endpointCase, auth string, upstream func() int) {
	t.Helper()
	before := upstream()
	uphost := s.g.byName[name].base.Host
	for i, f := range refusedForms(name, prefix, uphost, c) {
		resp, body := rawRequest(t, s, f.line+" HTTP/1.1\r\nHost: "+uphost+"\r\n"+auth+f.hdr+"Content-Length: 0\r\n\r\n")
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s (%s): status %d %s, want 403", f.name, f.line, resp.StatusCode, body)
			continue
		}
		if n := upstream(); n != before {
			t.Fatalf("%s (%s) reached the upstream", f.name, f.line)
		}
		ref := s.Refused()
		if len(ref) != i+1 {
			t.Fatalf("%s (%s): %d refusals recorded, want %d", f.name, f.line, len(ref), i+1)
		}
		last := ref[i]
		if last.Method != strings.Fields(f.line)[0] || (last.Reason == "") != f.host {
			t.Errorf("%s: recorded %+v", f.name, last)
		}
		if f.host || last.Method == http.MethodConnect || last.Method == http.MethodHead {
			continue
		}
		if !strings.HasPrefix(last.Path, prefix+"/") && !strings.Contains(f.name, "outside") || last.Host != uphost {
			t.Errorf("%s: recorded %+v, want the path under %s/ on %s", f.name, last, prefix, uphost)
		}
		target, err := url.ParseRequestURI(strings.Fields(f.line)[1])
		if err != nil {
			t.Fatal(err)
		}
		asked := target.EscapedPath()
		if msg := c.shape(t, body); !strings.Contains(msg, asked) || !strings.Contains(msg, last.Reason) {
			t.Errorf("%s: message %q does not name %s and %q", f.name, msg, asked, last.Reason)
		}
	}
	if s.RefusedTotal() != len(s.Refused()) {
		t.Errorf("RefusedTotal %d", s.RefusedTotal())
	}
}

// TestEndpointsUnauthenticated: a request without the run token is
// answered 401 whatever its path, not recorded (Claude Code's keyless HEAD
// of its base URL, every run).
func TestEndpointsUnauthenticated(t *testing.T) {
	up, got := recorder(t, 200, `{}`, nil)
	g, _ := newGateway(t, Options{Providers: []Provider{Anthropic(up.URL, realKey)}})
	s := open(t, g, "run")
	for _, line := range []string{"HEAD /anthropic", "POST /anthropic/v1/files", "POST /anthropic/v1/%2e%2e/x"} {
		if resp, _ := rawRequest(t, s, line+" HTTP/1.1\r\nHost: gateway\r\n\r\n"); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s: status %d, want 401", line, resp.StatusCode)
		}
	}
	if len(got()) != 0 || s.RefusedTotal() != 0 {
		t.Errorf("the upstream got %v, refusals %v", got(), s.Refused())
	}
}

// TestRefusalString: the run page's sentence says why.
func TestRefusalString(t *testing.T) {
	r := Refusal{Host: "api.anthropic.com", Method: "POST", Path: "/v1/files", Reason: "not one of the provider's model endpoints"}
	want := "the agent tried to reach api.anthropic.com/v1/files (POST): refused: not one of the provider's model endpoints"
	if got := r.String(); got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	r = Refusal{Host: "api.openai.com:443", Method: "CONNECT", Reason: "CONNECT to a model provider"}
	if got := r.String(); got != "the agent tried to reach api.openai.com:443 (CONNECT): refused: CONNECT to a model provider" {
		t.Errorf("String() = %q", got)
	}
	if fmt.Sprint(Refusal{Host: "x", Method: "GET", Path: "/y"}) != "the agent tried to reach x/y (GET): refused" {
		t.Error("a host refusal's sentence changed")
	}
}
