package gateway

import (
	"net/http"
	"strings"
)

// NameCopilot is the provider of the Copilot CLI signed in to GitHub: the
// GitHub API's Copilot paths and the Copilot API (CAPI) hosts, reached with
// the gateway as the CLI's HTTPS proxy (Provider.Intercepted).
const NameCopilot = "github-copilot"

// GitHubTokenPrefix is the shape the Copilot CLI demands of a token (it
// refuses a classic ghp_ one): a sealed Copilot gets the run's token behind
// it, which the gateway takes as the token itself (see TokenPrefixes).
const GitHubTokenPrefix = "github_pat_"

// TokenPrefixes are the prefixes a CLI may put before the run's token (a
// sealed CLI that accepts only keys of a given shape): the gateway takes
// "<prefix><token>" as the token.
var TokenPrefixes = []string{GitHubTokenPrefix}

// IsRunToken tells whether v has the shape of a run's token (Session.Token),
// bare or behind one of TokenPrefixes: an adapter tells by its CLI's key
// that it runs behind the gateway.
func IsRunToken(v string) bool {
	for _, p := range TokenPrefixes {
		v = strings.TrimPrefix(v, p)
	}
	return strings.HasPrefix(v, TokenPrefix) && len(v) > len(TokenPrefix)
}

// The hosts of the Copilot provider: the GitHub API (the CLI's sign-in:
// who the token is, which Copilot API host serves it, its organisation's
// settings) and the Copilot API hosts its answer may name.
const (
	GitHubAPIHost  = "api.github.com"
	CopilotAPIHost = "api.githubcopilot.com"
)

// CopilotAPIHosts are the Copilot API hosts: the default one and those of
// the individual, business and enterprise plans (copilot_internal/user's
// endpoints.api).
var CopilotAPIHosts = []string{CopilotAPIHost, "api.individual.githubcopilot.com",
	"api.business.githubcopilot.com", "api.enterprise.githubcopilot.com"}

var (
	// The GitHub API, as Copilot CLI 1.0.102 calls it signed in (watched
	// through an intercepting proxy): the token's user and Copilot API
	// host, its organisation's managed settings and customizations. Its
	// update check (GET /repos/github/copilot-cli/releases) is refused:
	// a sealed run never updates.
	gitHubCopilotEndpoints = []Endpoint{
		{http.MethodGet, "/copilot_internal/user"},
		{http.MethodGet, "/copilot_internal/managed_settings"},
		{http.MethodGet, "/copilot_internal/team_customizations"},
	}
	// The Copilot API, as the same CLI calls it: the model listing, the
	// Auto model routing, and generation (Responses, chat completions,
	// Anthropic messages, as a model's supported_endpoints say). Its
	// GitHub MCP server (/mcp/readonly), memory (/agents/swe/...) and
	// telemetry are refused: the sealed adapter turns the first and the
	// last off, and the CLI goes on without memory.
	copilotAPIEndpoints = []Endpoint{
		{http.MethodGet, "/models"},
		{http.MethodPost, "/models/session"},
		{http.MethodPost, "/auto"},
		{http.MethodPost, "/responses"},
		{http.MethodPost, "/chat/completions"},
		{http.MethodPost, "/v1/messages"},
	}
)

// copilotIntercepted are the Copilot provider's hosts, each reached at
// upstream when it is set (a test's server playing all of them), else at
// https://<host>.
func copilotIntercepted(upstream string) []Intercepted {
	at := func(host string) string {
		if upstream != "" {
			return upstream
		}
		return "https://" + host
	}
	out := []Intercepted{{Host: GitHubAPIHost, URL: at(GitHubAPIHost), Endpoints: gitHubCopilotEndpoints, ErrorShape: ErrorShapeGitHub}}
	for _, h := range CopilotAPIHosts {
		out = append(out, Intercepted{Host: h, URL: at(h), Endpoints: copilotAPIEndpoints, ErrorShape: ErrorShapeOpenAI})
	}
	return out
}

// Copilot is the Copilot CLI's GitHub sign-in (named "github-copilot"),
// with a GitHub token (a fine-grained PAT or an OAuth token) sent in the
// Authorization scheme the CLI used (Bearer or token). Its hosts are
// api.github.com and the Copilot API hosts (CopilotAPIHosts), reached at
// upstream when it is set (tests), else at their own address. See
// Intercepted for what it forwards.
func Copilot(upstream, key string) Provider { return must(NameCopilot).Provider(upstream, key) }
