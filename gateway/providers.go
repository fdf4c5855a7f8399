package gateway

import (
	"cmp"
	"net/http"
	"slices"
	"strings"
)

// The providers' names: the first path segment that routes to each, and
// what the agent adapters declare (agents.Sealed.Provider).
const (
	NameAnthropic = "anthropic"
	NameOpenAI    = "openai"
	NameGemini    = "gemini"
	NameXAI       = "xai"
)

// Credential is one variable of the bot's environment a provider's key may
// come from, and how the gateway sends that key on.
type Credential struct {
	Var string
	// Header carries the key, prefixed by Scheme and a space when Scheme
	// is set (Provider.Header, Provider.Scheme).
	Header, Scheme string
	// Flags are what the provider needs with this kind of key, joined to
	// the request's own header of that name (Provider.Flags): a Claude
	// subscription's OAuth token is accepted with anthropic-beta
	// oauth-2025-04-20, which Claude Code sends with that token only.
	Flags http.Header
	// Refused are prefixes of keys the provider is known to refuse, each
	// with why and what to offer instead: Served passes such a key by and
	// Unusable says so.
	Refused []RefusedKey
}

// RefusedKey is a kind of key a provider refuses, known by its prefix.
type RefusedKey struct {
	Prefix, Why string
}

// Catalogued is one provider of the catalogue: everything Alfred knows of
// a model API, in one row. The gateway forwards to it (Provider), the
// wiring finds its address and key in the variables ALFRED_AGENT_ENV
// offers (Served), and the doctor names the variable to set (KeyVar).
type Catalogued struct {
	Name       string
	DefaultURL string
	// URLVar is the variable that moves its address (a proxy, a mock);
	// a trailing "/v1" is dropped, since the CLIs' base URLs may end in
	// the API version their sealed variables add again
	// (agents.Sealed.BaseURLPath).
	URLVar string
	// Credentials are where its key comes from, the first one set winning.
	Credentials []Credential
	// Keyless: served even when no key is offered (the requests then go
	// on without one: a local model or a mock that needs none).
	Keyless    bool
	Endpoints  []Endpoint
	ErrorShape ErrorShape
	// Intercepted, for a provider reached with the gateway as the CLI's
	// HTTPS proxy, are its hosts, at upstream when it is set (every host
	// there: a test's server), else at their own address.
	Intercepted func(upstream string) []Intercepted
}

// Catalogue is every provider the sealed CLIs call.
var Catalogue = []Catalogued{
	{Name: NameAnthropic, DefaultURL: AnthropicURL, URLVar: "ANTHROPIC_BASE_URL",
		Credentials: []Credential{{Var: "ANTHROPIC_API_KEY", Header: "x-api-key"},
			{Var: "ANTHROPIC_AUTH_TOKEN", Header: "Authorization", Scheme: "Bearer"},
			// A Claude subscription (claude setup-token): sent as Claude Code
			// 2.1 sends it (verified against a listener: Bearer, and
			// oauth-2025-04-20 among its anthropic-beta flags).
			{Var: "CLAUDE_CODE_OAUTH_TOKEN", Header: "Authorization", Scheme: "Bearer",
				Flags: http.Header{"Anthropic-Beta": {"oauth-2025-04-20"}}}},
		Keyless: true, Endpoints: anthropicEndpoints, ErrorShape: ErrorShapeAnthropic},
	{Name: NameOpenAI, DefaultURL: OpenAIURL, URLVar: "OPENAI_BASE_URL",
		Credentials: []Credential{bearer("OPENAI_API_KEY"), bearer("CODEX_API_KEY")},
		Endpoints:   openAIEndpoints, ErrorShape: ErrorShapeOpenAI},
	{Name: NameGemini, DefaultURL: GeminiURL, URLVar: "GOOGLE_GEMINI_BASE_URL",
		Credentials: []Credential{{Var: "GEMINI_API_KEY", Header: "x-goog-api-key"}, {Var: "GOOGLE_API_KEY", Header: "x-goog-api-key"}},
		Endpoints:   geminiEndpoints, ErrorShape: ErrorShapeGoogle},
	{Name: NameXAI, DefaultURL: XAIURL, URLVar: "GROK_BASE_URL",
		Credentials: []Credential{bearer("GROK_API_KEY"), bearer("XAI_API_KEY")},
		Endpoints:   xaiEndpoints, ErrorShape: ErrorShapeOpenAI},
	// Copilot's GitHub sign-in: the token the CLI would read, sent with
	// the scheme it uses.
	{Name: NameCopilot, Credentials: []Credential{gitHub("COPILOT_GITHUB_TOKEN"), gitHub("GH_TOKEN"), gitHub("GITHUB_TOKEN")},
		Intercepted: copilotIntercepted},
}

// gitHub is a GitHub token of variable v, sent with the CLI's own scheme.
// Copilot refuses classic personal access tokens (the CLI says so and
// stops), so the gateway does not hold one.
func gitHub(v string) Credential {
	return Credential{Var: v, Header: "Authorization", Scheme: SchemeAsSent, Refused: []RefusedKey{{Prefix: "ghp_",
		Why: "a classic personal access token (ghp_), which Copilot refuses: offer a fine-grained token (github_pat_) or an OAuth token (gho_)"}}}
}

// refusal is why the provider refuses key, or "".
func (cr Credential) refusal(key string) string {
	for _, r := range cr.Refused {
		if strings.HasPrefix(key, r.Prefix) {
			return r.Why
		}
	}
	return ""
}

// bearer is a key of variable v sent as a Bearer token.
func bearer(v string) Credential {
	return Credential{Var: v, Header: "Authorization", Scheme: "Bearer"}
}

// Lookup is the catalogue's provider called name.
func Lookup(name string) (Catalogued, bool) {
	i := slices.IndexFunc(Catalogue, func(c Catalogued) bool { return c.Name == name })
	if i < 0 {
		return Catalogued{}, false
	}
	return Catalogue[i], true
}

// KeyVar is the first variable its key is read from, the one to name to a
// person ("" for a provider outside the catalogue).
func (c Catalogued) KeyVar() string {
	if len(c.Credentials) == 0 {
		return ""
	}
	return c.Credentials[0].Var
}

// KeyVars are the variables its key may come from, in their order.
func (c Catalogued) KeyVars() []string {
	out := make([]string, len(c.Credentials))
	for i, cr := range c.Credentials {
		out[i] = cr.Var
	}
	return out
}

// Provider is the provider at baseURL (empty: DefaultURL) with key, sent as
// its first credential is.
func (c Catalogued) Provider(baseURL, key string) Provider {
	return c.provider(baseURL, key, c.Credentials[0])
}

func (c Catalogued) provider(baseURL, key string, cred Credential) Provider {
	if c.Intercepted != nil {
		return Provider{Name: c.Name, Key: key, Header: cred.Header, Scheme: cred.Scheme, Flags: cred.Flags.Clone(),
			Intercepted: c.Intercepted(baseURL)}
	}
	return Provider{Name: c.Name, BaseURL: cmp.Or(baseURL, c.DefaultURL), Key: key, Header: cred.Header, Scheme: cred.Scheme,
		Flags: cred.Flags.Clone(), Endpoints: slices.Clone(c.Endpoints), ErrorShape: c.ErrorShape}
}

// Served are the providers the gateway serves from the variables offered
// (offered answers "" for one that is not): each with a key, from its first
// credential set, and the keyless ones in any case, at the address their
// URLVar gives, else their default.
func Served(offered func(name string) string) []Provider {
	var out []Provider
	for _, c := range Catalogue {
		base := ""
		if c.URLVar != "" {
			base = strings.TrimSuffix(strings.TrimRight(offered(c.URLVar), "/"), "/v1")
		}
		i := slices.IndexFunc(c.Credentials, func(cr Credential) bool {
			key := offered(cr.Var)
			return key != "" && cr.refusal(key) == ""
		})
		switch {
		case i >= 0:
			out = append(out, c.provider(base, offered(c.Credentials[i].Var), c.Credentials[i]))
		case c.Keyless:
			out = append(out, c.Provider(base, ""))
		}
	}
	return out
}

// Unusable says, for each key offered that its provider is known to refuse
// (Credential.Refused), which variable holds it and why: Served passed it
// by, and the doctor says so.
func Unusable(offered func(name string) string) []string {
	var out []string
	for _, c := range Catalogue {
		for _, cr := range c.Credentials {
			if why := cr.refusal(offered(cr.Var)); offered(cr.Var) != "" && why != "" {
				out = append(out, cr.Var+" holds "+why)
			}
		}
	}
	return out
}

// must is the catalogue's provider called name, for the constructors.
func must(name string) Catalogued {
	c, ok := Lookup(name)
	if !ok {
		panic("gateway: no provider " + name + " in the catalogue")
	}
	return c
}
