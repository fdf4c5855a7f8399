package gateway

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ContainerSocket is where the runner mounts a session's socket inside the
// agent's container, and the forwarder's default -socket.
const ContainerSocket = "/run/alfred/gateway.sock"

// DefaultForwardPort is the forwarder's default port on 127.0.0.1 inside the
// container.
const DefaultForwardPort = 47080

// SocketMode is the mode of a session's socket: anyone may connect to the
// socket file itself, whatever uid the container runs as; on the host, only
// the bot (and root) can reach it, through the session's 0700 folder. The
// runner bind-mounts the socket file, not its folder, into the container.
const SocketMode = 0o666

// maxSocketPath is the longest unix socket path Linux accepts (108 bytes with
// the terminating NUL).
const maxSocketPath = 107

// Provider is one model API the gateway forwards to, with its real credential.
type Provider struct {
	// Name is the first path segment that routes to it
	// (http://127.0.0.1:<port>/<Name>/...): lower-case letters, digits, '-'.
	Name string
	// BaseURL is where requests go: scheme, host, optional path prefix
	// (a request for /<Name>/v1/messages goes to BaseURL + /v1/messages).
	BaseURL string
	// Key is the real credential. Empty means none is added.
	Key string
	// Header carries the key (e.g. "x-api-key", "Authorization",
	// "x-goog-api-key"), prefixed by Scheme and a space when Scheme is set
	// (e.g. "Bearer"). Used when Query is empty.
	Header string
	Scheme string
	// Query, when set, carries the key as this query parameter instead
	// (e.g. "key" for Gemini).
	Query string
	// Headers are added to every forwarded request (e.g. an API version or
	// organization header); they must hold no secret the agent may not see
	// (they are not redacted).
	Headers http.Header
	// Flags are joined to the request's own header of each name, as a
	// comma-separated list (anthropic-beta), or set when it has none: what
	// the provider needs with this key beside what the CLI asked for.
	Flags http.Header
	// Endpoints are the only requests forwarded to it: a method and a path
	// after the base path each (see Endpoint); any other is refused (403)
	// and recorded on the session. At least one. The constructors set the
	// endpoints their CLIs call.
	Endpoints []Endpoint
	// ErrorShape is the shape of the errors the gateway answers on its
	// behalf; empty means the gateway's generic one.
	ErrorShape ErrorShape
	// Intercepted, when set, makes this a provider the CLI reaches with
	// the gateway as its HTTPS proxy, at these hosts (BaseURL and
	// Endpoints are then left empty): a CONNECT to one of them with the
	// run's token is answered by the gateway itself, which terminates TLS
	// with a certificate for that host from its own certificate authority
	// (Gateway.CACert; the CLI trusts it through Session.CAPath) and takes
	// each request inside as a request to this provider, as it takes one
	// to /<Name>/: the run's token checked, the host's endpoints only, the
	// key put in, metered, held to the budget, sent on over TLS to the
	// host's URL.
	Intercepted []Intercepted
}

// Intercepted is one host of a provider reached through CONNECT
// (Provider.Intercepted).
type Intercepted struct {
	// Host is the name the CLI connects to (e.g. "api.github.com", port 443).
	Host string
	// URL is where its requests go: https://<Host> but in tests.
	URL string
	// Endpoints are the only requests forwarded to it (see Endpoint).
	Endpoints []Endpoint
	// ErrorShape is the shape of the gateway's answers on its behalf.
	ErrorShape ErrorShape
}

// SchemeAsSent, as Provider.Scheme with Header "Authorization", sends the
// key with the scheme the CLI sent the run's token with (Copilot: Bearer
// to most paths, token to others), Bearer when it sent none.
const SchemeAsSent = "*"

// Default base URLs of the usual providers.
const (
	AnthropicURL = "https://api.anthropic.com"
	OpenAIURL    = "https://api.openai.com"
	GeminiURL    = "https://generativelanguage.googleapis.com"
	XAIURL       = "https://api.x.ai"
)

// Anthropic is the Anthropic API (Claude Code), named "anthropic", key in
// x-api-key. An empty baseURL means AnthropicURL. It forwards POST
// /v1/messages and /v1/messages/count_tokens, GET /v1/models and
// /v1/models/{model}.
func Anthropic(baseURL, key string) Provider { return must(NameAnthropic).Provider(baseURL, key) }

// OpenAI is the OpenAI API (Codex, OpenCode, Copilot BYOK), named "openai",
// key as a Bearer token. An empty baseURL means OpenAIURL. It forwards POST
// /v1/responses, /v1/responses/compact and /v1/chat/completions, GET
// /v1/models and /v1/models/{model}.
func OpenAI(baseURL, key string) Provider { return must(NameOpenAI).Provider(baseURL, key) }

// Gemini is the Gemini API (Gemini CLI), named "gemini", key in
// x-goog-api-key. An empty baseURL means GeminiURL. It forwards POST
// /v1beta/models/{model}:generateContent, :streamGenerateContent and
// :countTokens, GET /v1beta/models and /v1beta/models/{model}.
func Gemini(baseURL, key string) Provider { return must(NameGemini).Provider(baseURL, key) }

// XAI is xAI's API (Grok), named "xai", key as a Bearer token. An empty
// baseURL means XAIURL. It forwards POST /v1/chat/completions and
// /v1/responses, GET /v1/models and /v1/models/{model}.
func XAI(baseURL, key string) Provider { return must(NameXAI).Provider(baseURL, key) }

// ProviderNamed is the catalogue's provider of that name (Anthropic, OpenAI,
// Gemini, XAI) at baseURL with key; false for any other name.
func ProviderNamed(name, baseURL, key string) (Provider, bool) {
	c, ok := Lookup(name)
	if !ok {
		return Provider{}, false
	}
	return c.Provider(baseURL, key), true
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Options configure a Gateway.
type Options struct {
	// Providers are the model APIs the agents may reach; at least one.
	Providers []Provider
	// Allow lists extra hosts reachable through the gateway as an HTTP proxy
	// (absolute-form requests and CONNECT) by every run: "host" (ports 80
	// and 443), "host:port", or "*.domain" (any subdomain, ports 80 and
	// 443). Empty by default: only the providers are reachable. A run's own
	// extra hosts go to Open.
	Allow []string
	// Dir is where each session's 0700 folder is made; empty means
	// os.TempDir(). With the image runner it must be a path the Docker
	// daemon sees at the same place (e.g. under ALFRED_DATA_DIR when the bot
	// runs in a container), and short: a socket path is at most 107 bytes.
	Dir string
	// Transport sends the forwarded requests; nil means a clone of
	// http.DefaultTransport (which honours the bot's own HTTPS_PROXY).
	Transport http.RoundTripper
	// Dial opens CONNECT tunnels; nil means a net.Dialer with a 10 s timeout.
	Dial func(network, addr string) (net.Conn, error)
	// Logger receives one Debug record per forwarded request and one Warn
	// per refusal; nil means slog.Default(). No credential is ever logged.
	Logger *slog.Logger
	// Clock stamps refusals and activity; nil means time.Now.
	Clock func() time.Time
}

// Gateway serves the sessions of all runs. Safe for concurrent use.
type Gateway struct {
	providers []*provider
	byName    map[string]*provider
	allow     []hostRule
	secrets   []string             // every provider key, to redact
	intercept map[string]*provider // by host: the hosts of Provider.Intercepted
	ca        *authority           // nil when no provider is intercepted
	transport http.RoundTripper
	dial      func(network, addr string) (net.Conn, error)
	dir       string
	log       *slog.Logger
	now       func() time.Time

	mu       sync.Mutex
	sessions map[string]*Session
}

// provider is a validated Provider.
type provider struct {
	Provider
	base      *url.URL
	host      hostRule // its host and port
	endpoints []endpoint
	// shown is the host a refusal names: base's, or the intercepted host.
	shown string
	// intercepted: one host of Provider.Intercepted (reached by CONNECT);
	// hosts: a provider's intercepted hosts (origin-form requests refused).
	intercepted bool
	hosts       []*provider
}

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)

// New checks the options and returns a gateway with no session open.
func New(opts Options) (*Gateway, error) {
	if len(opts.Providers) == 0 {
		return nil, errors.New("gateway: no provider configured")
	}
	g := &Gateway{
		byName:    map[string]*provider{},
		intercept: map[string]*provider{},
		transport: opts.Transport,
		dial:      opts.Dial,
		dir:       or(opts.Dir, os.TempDir()),
		log:       opts.Logger,
		now:       opts.Clock,
		sessions:  map[string]*Session{},
	}
	for _, p := range opts.Providers {
		if g.byName[p.Name] != nil {
			return nil, fmt.Errorf("gateway: provider %q configured twice", p.Name)
		}
		pp, err := newProvider(p)
		if err != nil {
			return nil, err
		}
		g.providers = append(g.providers, pp)
		g.byName[p.Name] = pp
		for _, h := range pp.hosts {
			if g.intercept[h.shown] != nil {
				return nil, fmt.Errorf("gateway: host %s intercepted for two providers", h.shown)
			}
			g.intercept[h.shown] = h
		}
		if p.Key != "" {
			g.secrets = append(g.secrets, p.Key)
		}
	}
	allow, err := parseRules(opts.Allow)
	if err != nil {
		return nil, err
	}
	g.allow = allow
	if g.now == nil {
		g.now = time.Now
	}
	if len(g.intercept) > 0 {
		if g.ca, err = newAuthority(g.now); err != nil {
			return nil, err
		}
	}
	if g.transport == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 16
		g.transport = t
	}
	if g.dial == nil {
		d := &net.Dialer{Timeout: 10 * time.Second}
		g.dial = d.Dial
	}
	if g.log == nil {
		g.log = slog.Default()
	}
	return g, nil
}

// newProvider checks p: its name, its base URL (or its intercepted
// hosts), a way to carry its key.
func newProvider(p Provider) (*provider, error) {
	if !nameRE.MatchString(p.Name) {
		return nil, fmt.Errorf("gateway: provider name %q: want lower-case letters, digits and '-'", p.Name)
	}
	if len(p.Intercepted) > 0 {
		return newIntercepted(p)
	}
	return newHost(p)
}

// newIntercepted checks a provider of Intercepted hosts: each one is a
// provider of its own, at its URL, with its endpoints.
func newIntercepted(p Provider) (*provider, error) {
	if p.BaseURL != "" || len(p.Endpoints) > 0 {
		return nil, fmt.Errorf("gateway: provider %q: Intercepted hosts, and a BaseURL or Endpoints too: set them per host", p.Name)
	}
	whole := &provider{Provider: p}
	for _, h := range p.Intercepted {
		host := normHost(h.Host)
		if host == "" || strings.ContainsAny(host, "/@?#*: ") {
			return nil, fmt.Errorf("gateway: provider %q: intercepted host %q: want a host name", p.Name, h.Host)
		}
		one := p
		one.BaseURL, one.Endpoints, one.ErrorShape, one.Intercepted = h.URL, h.Endpoints, h.ErrorShape, nil
		hp, err := newHost(one)
		if err != nil {
			return nil, fmt.Errorf("%w (intercepted host %s)", err, host)
		}
		hp.host, hp.shown, hp.intercepted = hostRule{host: host, port: "443"}, host, true
		whole.hosts = append(whole.hosts, hp)
	}
	return whole, nil
}

// newHost checks a provider at one base URL.
func newHost(p Provider) (*provider, error) {
	u, err := url.Parse(p.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" {
		return nil, fmt.Errorf("gateway: provider %q: base URL %q: want http(s)://host[:port][/path]", p.Name, p.BaseURL)
	}
	if p.Key != "" && p.Header == "" && p.Query == "" {
		return nil, fmt.Errorf("gateway: provider %q: a key but neither Header nor Query to carry it", p.Name)
	}
	switch p.ErrorShape {
	case "", ErrorShapeAnthropic, ErrorShapeOpenAI, ErrorShapeGoogle, ErrorShapeGitHub:
	default:
		return nil, fmt.Errorf("gateway: provider %q: unknown error shape %q", p.Name, p.ErrorShape)
	}
	eps, err := compileEndpoints(p.Endpoints)
	if err != nil {
		return nil, fmt.Errorf("gateway: provider %q: %w", p.Name, err)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = ""
	return &provider{Provider: p, base: u, host: hostRule{host: normHost(u.Hostname()), port: portOf(u)}, endpoints: eps, shown: u.Host}, nil
}

// Providers returns the names of the configured providers, in order.
func (g *Gateway) Providers() []string {
	names := make([]string, len(g.providers))
	for i, p := range g.providers {
		names[i] = p.Name
	}
	return names
}

// Served are the providers the gateway forwards to, as it was given them
// (their keys included: for the bot's own checks, never for a person).
func (g *Gateway) Served() []Provider {
	out := make([]Provider, len(g.providers))
	for i, p := range g.providers {
		out[i] = p.Provider
	}
	return out
}

// TokenPrefix starts every run token.
const TokenPrefix = "alfred-run-"

// TokenPattern matches every run token Open gives (Session.Token: the
// prefix and 32 random bytes in unpadded base64url), this run's and any
// earlier one's: what is scrubbed from a copy of a session folder handed to
// a person, when the tokens themselves are long gone.
var TokenPattern = regexp.MustCompile(TokenPrefix + `[A-Za-z0-9_-]{43}`)

// Open starts the session of a run: a fresh 0700 folder under Options.Dir
// holding the socket (mode SocketMode) the session serves, and a new token.
// allow adds hosts this run alone may reach through the gateway as an HTTP
// proxy, on top of Options.Allow, in the same syntax (a project's allowlist
// setting: a package registry, say); none by default. One session per run
// id at a time. Close it when the run ends.
func (g *Gateway) Open(runID string, allow ...string) (*Session, error) {
	if runID == "" {
		return nil, errors.New("gateway: empty run id")
	}
	rules, err := parseRules(allow)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", runID, err)
	}
	g.mu.Lock()
	if g.sessions[runID] != nil {
		g.mu.Unlock()
		return nil, fmt.Errorf("gateway: run %s already has a session", runID)
	}
	g.sessions[runID] = nil // reserved
	g.mu.Unlock()
	s, err := g.open(runID, rules)
	g.mu.Lock()
	if err != nil {
		delete(g.sessions, runID)
	} else {
		g.sessions[runID] = s
	}
	g.mu.Unlock()
	return s, err
}

func (g *Gateway) open(runID string, allow []hostRule) (*Session, error) {
	dir, err := os.MkdirTemp(g.dir, "alfred-gw-")
	if err != nil {
		return nil, fmt.Errorf("gateway: session folder: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil { // MkdirTemp makes 0700; make sure of it
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("gateway: session folder: %w", err)
	}
	if g.ca != nil { // readable by the container's user, through the file's own bind mount
		if err := os.WriteFile(filepath.Join(dir, caFile), g.ca.pem, 0o644); err != nil {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("gateway: certificate authority file: %w", err)
		}
	}
	path := filepath.Join(dir, "gateway.sock")
	if len(path) > maxSocketPath {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("gateway: socket path %s is %d bytes, over the %d a unix socket allows: choose a shorter Options.Dir", path, len(path), maxSocketPath)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("gateway: listen: %w", err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(true)
	if err := os.Chmod(path, SocketMode); err != nil {
		_ = ln.Close()
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("gateway: socket mode: %w", err)
	}
	var raw [32]byte
	_, _ = rand.Read(raw[:]) // never fails (crypto/rand panics instead)
	s := &Session{
		g:     g,
		id:    runID,
		token: TokenPrefix + base64.RawURLEncoding.EncodeToString(raw[:]),
		dir:   dir,
		path:  path,
		ln:    ln,
		allow: allow,
		log:   g.log.With("run", runID),
	}
	s.last.Store(g.now().UnixNano())
	s.srv = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 30 * time.Second,
		ErrorLog:          slog.NewLogLogger(g.log.Handler(), slog.LevelDebug),
	}
	s.proxy = g.reverseProxy(s)
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Close closes every open session.
func (g *Gateway) Close() error {
	g.mu.Lock()
	var all []*Session
	for _, s := range g.sessions {
		if s != nil {
			all = append(all, s)
		}
	}
	g.mu.Unlock()
	var errs []error
	for _, s := range all {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}

func (g *Gateway) forget(s *Session) {
	g.mu.Lock()
	if g.sessions[s.id] == s {
		delete(g.sessions, s.id)
	}
	g.mu.Unlock()
}

// hostRule matches a host (and port) a request may reach.
type hostRule struct {
	host     string // normalized; for a wildcard, the suffix with its dot (".example.com")
	wildcard bool
	port     string // "" means 80 or 443
}

// CheckHosts reports whether every entry of hosts is an allowed-host rule
// Options.Allow and Open accept: "host", "host:port" or "*.domain".
func CheckHosts(hosts []string) error {
	_, err := parseRules(hosts)
	return err
}

func parseRules(hosts []string) ([]hostRule, error) {
	var rules []hostRule
	for _, h := range hosts {
		r, err := parseRule(h)
		if err != nil {
			return nil, err
		}
		rules = append(rules, r)
	}
	return rules, nil
}

func parseRule(s string) (hostRule, error) {
	h := strings.TrimSpace(s)
	var r hostRule
	if strings.HasPrefix(h, "*.") {
		r.wildcard = true
		h = h[1:]
	}
	if host, port, err := net.SplitHostPort(h); err == nil {
		h, r.port = host, port
	}
	h = normHost(h)
	if _, err := strconv.ParseUint(r.port, 10, 16); r.port != "" && err != nil || h == "" || h == "." || strings.ContainsAny(h, "/@?#*: ") {
		return hostRule{}, fmt.Errorf("gateway: allowed host %q: want host, host:port or *.domain", s)
	}
	r.host = h
	return r, nil
}

func (r hostRule) match(host, port string) bool {
	if r.wildcard {
		if !strings.HasSuffix(host, r.host) {
			return false
		}
	} else if host != r.host {
		return false
	}
	if r.port == "" {
		return port == "80" || port == "443"
	}
	return port == r.port
}

func normHost(h string) string {
	return strings.TrimSuffix(strings.ToLower(strings.Trim(h, "[]")), ".")
}

func portOf(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if u.Scheme == "https" {
		return "443"
	}
	return "80"
}

// allowed tells whether host:port may be reached by every run, and which
// provider it is (nil for an Allow host).
func (g *Gateway) allowed(host, port string) (bool, *provider) {
	host = normHost(host)
	if p := g.intercept[host]; p != nil && (port == "443" || port == "80") {
		return true, p
	}
	for _, p := range g.providers {
		if p.hosts == nil && p.host.host == host && (p.host.port == port || port == "443") {
			return true, p
		}
	}
	return slices.ContainsFunc(g.allow, func(r hostRule) bool { return r.match(host, port) }), nil
}

// allowed is Gateway.allowed, plus the run's own hosts (Open's allow).
func (s *Session) allowed(host, port string) (bool, *provider) {
	if ok, p := s.g.allowed(host, port); ok {
		return ok, p
	}
	host = normHost(host)
	return slices.ContainsFunc(s.allow, func(r hostRule) bool { return r.match(host, port) }), nil
}
