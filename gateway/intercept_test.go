package gateway

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// gitHubKey is the GitHub token the gateway holds in the interception tests.
const gitHubKey = "github_pat_11REALREALREAL_0123456789abcdef"

// upstreamSaw is one request the test upstream got.
type upstreamSaw struct{ method, path, auth string }

// copilotUpstream plays GitHub and the Copilot API over TLS: the sign-in
// answer, a Responses answer with its usage, a chat completion, and a 401
// that repeats the credential it got (which the gateway must hide).
func copilotUpstream(t *testing.T) (*httptest.Server, func() []upstreamSaw) {
	t.Helper()
	var mu sync.Mutex
	var log []upstreamSaw
	up := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		log = append(log, upstreamSaw{r.Method, r.URL.Path, r.Header.Get("Authorization")})
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-GitHub-Request-Id", "TEST:1")
		switch r.URL.Path {
		case "/copilot_internal/user":
			_, _ = io.WriteString(w, `{"login":"octo","copilot_plan":"individual","chat_enabled":true,"endpoints":{"api":"https://api.individual.githubcopilot.com"}}`)
		case "/responses":
			_, _ = io.WriteString(w, `{"id":"resp_1","object":"response","output":[],"usage":{"input_tokens":7,"output_tokens":3}}`)
		case "/chat/completions":
			_, _ = io.WriteString(w, `{"id":"c1","object":"chat.completion","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2}}`)
		default:
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"message":"bad credentials: `+r.Header.Get("Authorization")+`"}`)
		}
	}))
	t.Cleanup(up.Close)
	return up, func() []upstreamSaw {
		mu.Lock()
		defer mu.Unlock()
		return append([]upstreamSaw(nil), log...)
	}
}

// copilotGateway serves the Copilot provider at the test upstream, trusted
// by the gateway's transport, and opens a session.
func copilotGateway(t *testing.T, up *httptest.Server, opts Options) (*Gateway, *Session) {
	t.Helper()
	opts.Providers = []Provider{Copilot(up.URL, gitHubKey)}
	opts.Transport = up.Client().Transport.(*http.Transport).Clone()
	g, _ := newGateway(t, opts)
	return g, open(t, g, "run-copilot")
}

// proxyClient is the CLI's client: the gateway as its HTTPS proxy (the
// run's token as the proxy password, as HTTPS_PROXY carries it), trusting
// the CA file of the session only.
func proxyClient(t testing.TB, s *Session, proxyToken string) *http.Client {
	t.Helper()
	ca, err := os.ReadFile(s.CAPath())
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(ca) {
		t.Fatalf("no certificate in %s", s.CAPath())
	}
	proxy := mustURL("http://gateway:80")
	if proxyToken != "" {
		proxy = mustURL("http://agent:" + proxyToken + "@gateway:80")
	}
	return &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{
		Proxy: http.ProxyURL(proxy),
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", s.SocketPath())
		},
		TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
	}}
}

// TestIntercepted: through CONNECT, each request inside is the Copilot
// provider's: the run's token (behind github_pat_, in the scheme the CLI
// chose) swapped for the real one in that same scheme, only its endpoints
// forwarded (403 in the host's own error shape otherwise, recorded), 401
// without the token, the answers metered, the real key hidden in an error.
func TestIntercepted(t *testing.T) {
	up, log := copilotUpstream(t)
	_, s := copilotGateway(t, up, Options{})
	c := proxyClient(t, s, s.Token())
	run := GitHubTokenPrefix + s.Token()
	cases := []struct {
		name, method, url, auth string
		status                  int
		upstream                string // the Authorization the upstream got; "" when it got nothing
		body                    string // in the answer
	}{
		{"sign-in, Bearer", "GET", "https://api.github.com/copilot_internal/user", "Bearer " + run, 200, "Bearer " + gitHubKey, `"login":"octo"`},
		{"sign-in, token scheme", "GET", "https://api.github.com/copilot_internal/user", "token " + run, 200, "token " + gitHubKey, `"login":"octo"`},
		{"the bare token", "GET", "https://api.github.com/copilot_internal/managed_settings?client_id=x", "bearer " + s.Token(), 401, "bearer " + gitHubKey, "[redacted]"},
		{"a model answer", "POST", "https://api.individual.githubcopilot.com/responses", "Bearer " + run, 200, "Bearer " + gitHubKey, `"resp_1"`},
		{"a chat completion", "POST", "https://api.githubcopilot.com/chat/completions", "Bearer " + run, 200, "Bearer " + gitHubKey, `"c1"`},
		{"the update check", "GET", "https://api.github.com/repos/github/copilot-cli/releases?per_page=100", "token " + run, 403, "", `"documentation_url"`},
		{"a Copilot session token", "GET", "https://api.github.com/copilot_internal/v2/token", "token " + run, 403, "", `"documentation_url"`},
		{"the GitHub MCP server", "POST", "https://api.individual.githubcopilot.com/mcp/readonly", "Bearer " + run, 403, "", `"code":"alfred_endpoint_refused"`},
		{"a model path of the other host", "POST", "https://api.github.com/responses", "Bearer " + run, 403, "", "not one of the provider's model endpoints"},
		{"no token", "GET", "https://api.github.com/copilot_internal/user", "", 401, "", "missing or wrong run token"},
		{"the real key itself", "GET", "https://api.github.com/copilot_internal/user", "Bearer " + gitHubKey, 401, "", "missing or wrong run token"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := len(log())
			hdr := map[string]string{}
			if tc.auth != "" {
				hdr["Authorization"] = tc.auth
			}
			status, h, body := do(t, c, tc.method, tc.url, "{}", hdr)
			if status != tc.status || !strings.Contains(body, tc.body) {
				t.Errorf("%d %s, want %d with %q", status, body, tc.status, tc.body)
			}
			if strings.Contains(body+headerDump(h), gitHubKey) {
				t.Errorf("the answer shows the real key: %s", body)
			}
			got := log()[before:]
			switch {
			case tc.upstream == "" && len(got) != 0:
				t.Errorf("the upstream got %+v, want nothing", got)
			case tc.upstream != "" && (len(got) != 1 || got[0].auth != tc.upstream):
				t.Errorf("the upstream got %+v, want one request with %q", got, tc.upstream)
			}
		})
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if u := s.Usage(); u != (Usage{Requests: 5, InputTokens: 12, OutputTokens: 5}) {
		t.Errorf("usage %+v, want 5 requests, 7+5 input and 3+2 output tokens", u)
	}
	want := []string{"api.github.com GET /repos/github/copilot-cli/releases", "api.github.com GET /copilot_internal/v2/token",
		"api.individual.githubcopilot.com POST /mcp/readonly", "api.github.com POST /responses"}
	var got []string
	for _, r := range s.Refused() {
		got = append(got, r.Host+" "+r.Method+" "+r.Path)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("refused %q, want %q", got, want)
	}
}

// TestInterceptRefusals: a CONNECT without the run's token is answered 407
// before any TLS; one to a host of no provider is refused and recorded; a
// provider of Intercepted hosts is not reached at /<name>/.
func TestInterceptRefusals(t *testing.T) {
	up, log := copilotUpstream(t)
	_, s := copilotGateway(t, up, Options{})
	auth := "Proxy-Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("agent:"+s.Token())) + "\r\n"
	cases := []struct {
		name, req string
		status    int
		refused   string
	}{
		{"no token", "CONNECT api.github.com:443 HTTP/1.1\r\nHost: api.github.com:443\r\n\r\n", 407, ""},
		{"another run's token", "CONNECT api.github.com:443 HTTP/1.1\r\nHost: api.github.com:443\r\nProxy-Authorization: Basic YWdlbnQ6eA==\r\n\r\n", 407, ""},
		{"an unrelated host", "CONNECT github.com:443 HTTP/1.1\r\nHost: github.com:443\r\n" + auth + "\r\n", 403, "github.com:443"},
		{"telemetry", "CONNECT telemetry.individual.githubcopilot.com:443 HTTP/1.1\r\nHost: telemetry.individual.githubcopilot.com:443\r\n" + auth + "\r\n", 403, "telemetry.individual.githubcopilot.com:443"},
		{"another port", "CONNECT api.github.com:8443 HTTP/1.1\r\nHost: api.github.com:8443\r\n" + auth + "\r\n", 403, "api.github.com:8443"},
		{"at its name", "GET /github-copilot/copilot_internal/user HTTP/1.1\r\nHost: gateway\r\nAuthorization: Bearer " + s.Token() + "\r\n\r\n", 404, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := s.RefusedTotal()
			resp, _ := rawRequest(t, s, tc.req)
			if resp.StatusCode != tc.status {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.status)
			}
			refused := s.Refused()[before:]
			if tc.refused == "" && len(refused) != 0 || tc.refused != "" && (len(refused) != 1 || refused[0].Host != tc.refused) {
				t.Errorf("refused %v, want %q", refused, tc.refused)
			}
		})
	}
	if got := log(); len(got) != 0 {
		t.Errorf("the upstream got %+v", got)
	}
}

// TestInterceptCertificates: the certificate a CLI sees is its host's
// only, signed by the gateway's authority, short-lived and kept until it
// nears its end; the authority's key is in no answer, no file and no log.
func TestInterceptCertificates(t *testing.T) {
	start := time.Now() // the client checks the certificates against the real clock
	now := start
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	up, _ := copilotUpstream(t)
	g, s := copilotGateway(t, up, Options{Clock: clock})
	leaf, err := g.ca.leaf("api.github.com")
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(g.CACert())
	if _, err := leaf.Leaf.Verify(x509.VerifyOptions{DNSName: "api.github.com", Roots: roots, CurrentTime: now}); err != nil {
		t.Errorf("the host's certificate does not verify: %v", err)
	}
	if err := leaf.Leaf.VerifyHostname("github.com"); err == nil {
		t.Error("the certificate of api.github.com is good for github.com too")
	}
	if d := leaf.Leaf.NotAfter.Sub(now); d > leafValidity {
		t.Errorf("the host's certificate lasts %v, want at most %v", d, leafValidity)
	}
	if again, _ := g.ca.leaf("api.github.com"); again != leaf {
		t.Error("the host's certificate was made again at once")
	}
	other, _ := g.ca.leaf("renew.test")
	mu.Lock()
	now = now.Add(leafValidity - leafRenewBefore/2)
	mu.Unlock()
	if renewed, _ := g.ca.leaf("renew.test"); renewed == other || !renewed.Leaf.NotAfter.After(other.Leaf.NotAfter) {
		t.Error("a certificate near its end was not made again")
	}
	mu.Lock()
	now = start
	mu.Unlock()

	der, err := x509.MarshalPKCS8PrivateKey(g.ca.key)
	if err != nil {
		t.Fatal(err)
	}
	ecDER, _ := x509.MarshalECPrivateKey(g.ca.key)
	secrets := []string{base64.StdEncoding.EncodeToString(der), base64.StdEncoding.EncodeToString(ecDER), g.ca.key.D.Text(16), "PRIVATE KEY"}
	file, err := os.ReadFile(s.CAPath())
	if err != nil {
		t.Fatal(err)
	}
	if b, rest := pem.Decode(file); b == nil || b.Type != "CERTIFICATE" || len(strings.TrimSpace(string(rest))) != 0 {
		t.Errorf("the CA file holds more than one certificate: %q", file)
	}
	c := proxyClient(t, s, s.Token())
	var answers strings.Builder
	answers.Write(file)
	answers.Write(g.CACert())
	for _, u := range []string{"https://api.github.com/copilot_internal/user", "https://api.github.com/nothing", "https://api.githubcopilot.com/models"} {
		_, h, body := do(t, c, "GET", u, "", map[string]string{"Authorization": "Bearer " + GitHubTokenPrefix + s.Token()})
		answers.WriteString(headerDump(h) + body)
	}
	for _, secret := range secrets {
		if strings.Contains(answers.String(), secret) {
			t.Errorf("the authority's key (%.12s...) is in an answer or file", secret)
		}
	}
	var cert struct{ Endpoints map[string]string }
	_, _, body := do(t, c, "GET", "https://api.github.com/copilot_internal/user", "", map[string]string{"Authorization": "token " + GitHubTokenPrefix + s.Token()})
	if err := json.Unmarshal([]byte(body), &cert); err != nil || cert.Endpoints["api"] == "" {
		t.Errorf("the sign-in answer %q did not come through: %v", body, err)
	}
}

// TestInterceptBudget: inside an intercepted connection the budget holds
// as at /<provider>/: the request that crosses it is answered, the next is
// refused (400 in the Copilot API's shape) and not forwarded; closing the
// session cuts the connection.
func TestInterceptBudget(t *testing.T) {
	up, log := copilotUpstream(t)
	_, s := copilotGateway(t, up, Options{})
	s.SetBudget(Budget{Limit: 10})
	c := proxyClient(t, s, s.Token())
	auth := map[string]string{"Authorization": "Bearer " + GitHubTokenPrefix + s.Token()}
	if status, _, body := do(t, c, "POST", "https://api.individual.githubcopilot.com/responses", "{}", auth); status != 200 {
		t.Fatalf("first answer %d %s", status, body)
	}
	status, _, body := do(t, c, "POST", "https://api.individual.githubcopilot.com/responses", "{}", auth)
	if status != http.StatusBadRequest || !strings.Contains(body, `"code":"alfred_budget_reached"`) || len(log()) != 1 || !s.BudgetReached() {
		t.Errorf("over the budget: %d %s, the upstream got %d requests", status, body, len(log()))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get("https://api.github.com/copilot_internal/user"); err == nil {
		t.Error("a request went through after the session closed")
	}
}
