package gateway

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// Endpoint is one model endpoint a provider forwards: a method and a path
// pattern, matched after the provider's base path (a request for
// /<provider>/v1/messages is matched as /v1/messages, and goes to
// BaseURL + /v1/messages).
type Endpoint struct {
	// Method is the one method the endpoint takes: GET for a listing, POST
	// for a generation.
	Method string
	// Path is "/"-separated segments, each a literal (letters, digits, '.',
	// '_', '-', ':') or a parameter "{name}" optionally followed by a
	// literal suffix ("{model}:generateContent"). A parameter stands for
	// one segment of letters, digits, '.', '_' and '-' (a model id) that is
	// not all dots.
	Path string
}

// The model endpoints the CLIs call, per provider (the constructors' Endpoints).
var (
	// Claude Code: messages (streamed or not) and count_tokens; the model
	// listing for its model picker.
	anthropicEndpoints = []Endpoint{
		{http.MethodPost, "/v1/messages"},
		{http.MethodPost, "/v1/messages/count_tokens"},
		{http.MethodGet, "/v1/models"},
		{http.MethodGet, "/v1/models/{model}"},
	}
	// Codex and OpenCode: Responses (Codex's remote compaction too);
	// Copilot BYOK: chat completions; the model listing Codex and Copilot
	// may ask for.
	openAIEndpoints = []Endpoint{
		{http.MethodPost, "/v1/responses"},
		{http.MethodPost, "/v1/responses/compact"},
		{http.MethodPost, "/v1/chat/completions"},
		{http.MethodGet, "/v1/models"},
		{http.MethodGet, "/v1/models/{model}"},
	}
	// Gemini CLI (through @google/genai, API version v1beta): generation,
	// streamed or not, token counting, the model listing.
	geminiEndpoints = []Endpoint{
		{http.MethodPost, "/v1beta/models/{model}:generateContent"},
		{http.MethodPost, "/v1beta/models/{model}:streamGenerateContent"},
		{http.MethodPost, "/v1beta/models/{model}:countTokens"},
		{http.MethodGet, "/v1beta/models"},
		{http.MethodGet, "/v1beta/models/{model}"},
	}
	// Grok CLI: chat completions; Responses; the model listing.
	xaiEndpoints = []Endpoint{
		{http.MethodPost, "/v1/chat/completions"},
		{http.MethodPost, "/v1/responses"},
		{http.MethodGet, "/v1/models"},
		{http.MethodGet, "/v1/models/{model}"},
	}
)

// segment is one compiled segment of an endpoint's path.
type segment struct {
	lit   string // the literal, or the suffix after the parameter
	param bool
}

// endpoint is a compiled Endpoint.
type endpoint struct {
	Endpoint
	segs []segment
}

// compileEndpoints checks and compiles a provider's endpoints.
func compileEndpoints(eps []Endpoint) ([]endpoint, error) {
	if len(eps) == 0 {
		return nil, fmt.Errorf("no Endpoints: list the model endpoints it forwards")
	}
	out := make([]endpoint, 0, len(eps))
	for _, e := range eps {
		ce, err := compileEndpoint(e)
		if err != nil {
			return nil, fmt.Errorf("endpoint %s %s: %w", e.Method, e.Path, err)
		}
		out = append(out, ce)
	}
	return out, nil
}

func compileEndpoint(e Endpoint) (endpoint, error) {
	if e.Method == "" || strings.ContainsFunc(e.Method, func(r rune) bool { return r < 'A' || r > 'Z' }) {
		return endpoint{}, fmt.Errorf("method %q: want an upper-case method such as GET or POST", e.Method)
	}
	if e.Method == http.MethodConnect {
		return endpoint{}, fmt.Errorf("method CONNECT is never forwarded")
	}
	rest, ok := strings.CutPrefix(e.Path, "/")
	if !ok {
		return endpoint{}, fmt.Errorf("the path must start with /")
	}
	ce := endpoint{Endpoint: e}
	for s := range strings.SplitSeq(rest, "/") {
		seg := segment{lit: s}
		if name, suffix, found := strings.Cut(s, "}"); found {
			if !strings.HasPrefix(name, "{") || !isName(name[1:]) {
				return endpoint{}, fmt.Errorf("segment %q: want {name} then an optional literal suffix", s)
			}
			seg = segment{lit: suffix, param: true}
		}
		if strings.ContainsAny(seg.lit, "{}") || !seg.param && (!isLiteral(seg.lit) || strings.Trim(seg.lit, ".") == "") {
			return endpoint{}, fmt.Errorf("segment %q: want letters, digits, '.', '_', '-', ':', not only dots", s)
		}
		ce.segs = append(ce.segs, seg)
	}
	return ce, nil
}

func isName(s string) bool {
	return s != "" && !strings.ContainsFunc(s, func(r rune) bool { return (r < 'a' || r > 'z') && r != '_' })
}

// isLiteral: letters, digits, '.', '_', '-', ':' (empty is a literal: a
// parameter without suffix).
func isLiteral(s string) bool {
	return !strings.ContainsFunc(s, func(r rune) bool { return !isIDRune(r) && r != ':' })
}

func isIDRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-'
}

// match tells whether the segments of a clean path are this endpoint's.
func (e *endpoint) match(segs []string) bool {
	if len(segs) != len(e.segs) {
		return false
	}
	for i, s := range segs {
		want := e.segs[i]
		if !want.param {
			if s != want.lit {
				return false
			}
			continue
		}
		id, ok := strings.CutSuffix(s, want.lit)
		if !ok || id == "" || strings.Trim(id, ".") == "" || strings.ContainsFunc(id, func(r rune) bool { return !isIDRune(r) }) {
			return false
		}
	}
	return true
}

// checkPath says why a request of method for rel, the escaped path after
// the provider's base path as the agent sent it, is not forwarded; "" when
// it is one of the provider's endpoints.
func (p *provider) checkPath(method, rel string) string {
	if why := unsafePath(rel); why != "" {
		return why
	}
	clean, _ := url.PathUnescape(rel) // unsafePath checked it decodes
	segs := strings.Split(strings.TrimPrefix(clean, "/"), "/")
	var methods []string
	for i := range p.endpoints {
		e := &p.endpoints[i]
		if !e.match(segs) {
			continue
		}
		if e.Method == method {
			return ""
		}
		methods = append(methods, e.Method)
	}
	if len(methods) > 0 {
		slices.Sort(methods)
		return fmt.Sprintf("method %s is not allowed on this endpoint (%s only)", method, strings.Join(slices.Compact(methods), ", "))
	}
	return "not one of the provider's model endpoints"
}

// unsafePath says why rel (an escaped path) could reach anything else than
// the path it spells: a backslash (raw or encoded), an encoded dot, slash
// or percent sign (in any case), a dot segment, an empty segment, a
// control character, a bad escape; "" when none.
func unsafePath(rel string) string {
	clean, err := url.PathUnescape(rel)
	switch {
	case !strings.HasPrefix(rel, "/"):
		return "not one of the provider's model endpoints"
	case err != nil:
		return "a malformed percent-encoding in the path"
	case strings.ContainsRune(clean, '\\'):
		return "a backslash (raw or percent-encoded) in the path"
	case strings.ContainsFunc(clean, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return "a control character in the path"
	}
	lower := strings.ToLower(rel)
	for _, enc := range []string{"%2e", "%2f", "%25"} {
		if strings.Contains(lower, enc) {
			return "a percent-encoded dot, slash or percent sign (" + enc + ") in the path"
		}
	}
	if clean == "/" {
		return "" // the provider's root: no endpoint, as checkPath says
	}
	for s := range strings.SplitSeq(clean[1:], "/") {
		switch s {
		case ".", "..":
			return "a dot segment (" + s + ") in the path"
		case "":
			return "an empty segment (double or trailing slash) in the path"
		}
	}
	return ""
}

// endpointList names the provider's endpoints, for the refusal's message.
func (p *provider) endpointList() string {
	names := make([]string, len(p.endpoints))
	for i, e := range p.endpoints {
		names[i] = e.Method + " " + e.Path
	}
	return strings.Join(names, ", ")
}
