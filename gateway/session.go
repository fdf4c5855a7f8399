package gateway

import (
	"bufio"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// MaxRefusals bounds what a session keeps of its refusals; later ones are
// counted (Session.RefusedTotal) but not kept.
const MaxRefusals = 1000

// Usage is what a session's provider requests cost, in tokens, as the
// providers' answers said. InputTokens counts cached input too (Anthropic's
// cache reads and writes are added to input_tokens, as the Claude Code
// adapter does); OutputTokens counts Gemini's thinking tokens too.
type Usage struct {
	Requests     int64 `json:"requests"`
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
}

// Refusal is one request the gateway refused: to a host that is not
// allowed, to a provider outside its model endpoints, or over the token
// budget.
type Refusal struct {
	// Host is the target, host or host:port: as the agent asked for it,
	// or the provider's host for a request to a provider.
	Host   string `json:"host"`
	Method string `json:"method"`
	// Path is without the query, at most 200 bytes: as the agent sent it
	// (a host refused) or as it would have gone to the provider, still
	// percent-encoded (a provider request refused).
	Path string `json:"path,omitempty"`
	// Reason says why a provider request was refused; empty for a host
	// that is not allowed.
	Reason string    `json:"reason,omitempty"`
	At     time.Time `json:"at"`
}

// String is the sentence the run page shows.
func (r Refusal) String() string {
	target := r.Host
	if r.Method != http.MethodConnect {
		target += r.Path
	}
	if r.Reason != "" {
		return fmt.Sprintf("the agent tried to reach %s (%s): refused: %s", target, r.Method, r.Reason)
	}
	return fmt.Sprintf("the agent tried to reach %s (%s): refused", target, r.Method)
}

// Session is one run's gateway: its socket, its token, its usage, its
// token budget and its refusals. Safe for concurrent use.
type Session struct {
	g     *Gateway
	id    string
	token string
	dir   string
	path  string
	ln    net.Listener
	allow []hostRule // the run's own hosts, beside Options.Allow
	srv   *http.Server
	proxy *httputil.ReverseProxy
	log   *slog.Logger

	closed    atomic.Bool
	inflight  sync.WaitGroup // forwarded requests, so that Close returns with their usage counted
	closeOnce sync.Once
	closeErr  error
	last      atomic.Int64 // unix nanos of the last sign of activity (see LastActivity)
	busy      atomic.Int64 // requests being answered (not tunnels nor upgrades)

	mu        sync.Mutex
	usage     Usage
	refused   []Refusal
	nRefuse   int
	tunnels   map[net.Conn]struct{} // hijacked CONNECT connections, cut by Close
	budget    Budget
	budgetHit bool // a request was refused for the budget
}

// RunID is the run the session serves.
func (s *Session) RunID() string { return s.id }

// Token is the per-run token the agent sends in place of a key. It is a
// secret of the run: give it to the container's environment only, and add
// it to the run's redaction list.
func (s *Session) Token() string { return s.token }

// SocketPath is the socket on the host. The runner bind-mounts this file
// (not its folder) at ContainerSocket; it is mode SocketMode in a 0700
// folder owned by the bot.
func (s *Session) SocketPath() string { return s.path }

// CAPath is the file, in the session's folder, of the gateway's
// certificate authority (Gateway.CACert), which the runner bind-mounts
// read-only at ContainerCA for a CLI reaching an intercepted provider; ""
// when the gateway intercepts no provider.
func (s *Session) CAPath() string {
	if s.g.ca == nil {
		return ""
	}
	return filepath.Join(s.dir, caFile)
}

// Dir is the session's 0700 folder, removed by Close.
func (s *Session) Dir() string { return s.dir }

// Usage returns the tokens counted so far: a request counts when it is
// forwarded, its tokens when its answer ends. After Close it is final.
func (s *Session) Usage() Usage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.usage
}

// Refused returns the refused requests, oldest first (at most MaxRefusals).
func (s *Session) Refused() []Refusal {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.refused)
}

// RefusedTotal counts every refusal, kept or not.
func (s *Session) RefusedTotal() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nRefuse
}

// LastActivity is when the session last showed activity, for telling a CLI
// that makes no model request apart from a busy one: its opening, the
// arrival of a request, the end of its answer, and every byte through a
// tunnel (CONNECT) or an upgraded connection (WebSocket). While a request
// is being answered, waiting for the provider's first byte or streaming a
// long answer, it is now: a model that thinks for minutes is not a stall.
func (s *Session) LastActivity() time.Time {
	if s.busy.Load() > 0 {
		return s.g.now()
	}
	return time.Unix(0, s.last.Load())
}

// touch records activity now.
func (s *Session) touch() { s.last.Store(s.g.now().UnixNano()) }

// Close ends the session: the token stops working at once, open connections
// (streams included) are cut, the socket and its folder are removed.
// Closing twice is harmless.
func (s *Session) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		err := s.srv.Close()
		s.mu.Lock()
		for c := range s.tunnels {
			_ = c.Close()
		}
		s.mu.Unlock()
		// The cut connections end their handlers at once (the upstream
		// requests are canceled); a stream cut short counts what it had said.
		s.inflight.Wait()
		if errors.Is(err, net.ErrClosed) {
			err = nil
		}
		s.closeErr = errors.Join(err, os.RemoveAll(s.dir))
		s.g.forget(s)
	})
	return s.closeErr
}

// ServeHTTP is the session's handler, served on its socket.
func (s *Session) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.touch()
	if r.Method == http.MethodConnect || r.Header.Get("Upgrade") != "" {
		// A tunnel or an upgrade may stay open and idle: the bytes that go
		// through it are its activity, not its being open.
		w = &activeWriter{ResponseWriter: w, s: s}
	} else {
		s.busy.Add(1)
		defer func() {
			s.touch() // the answer has ended: idle from now on
			s.busy.Add(-1)
		}()
	}
	switch {
	case r.Method == http.MethodConnect:
		s.connect(w, r)
	case r.URL.IsAbs() && s.selfAddressed(r):
		s.origin(w, r) // a CLI that sends everything through a proxy, the forwarder included
	case r.URL.IsAbs():
		s.absolute(w, r)
	default:
		s.origin(w, r)
	}
}

// selfAddressed tells whether an absolute-form request is meant for the
// gateway itself: a loopback host (inside the container, only the forwarder
// listens there) that is no provider's, and a path that names a provider.
// Any other loopback request is judged by the egress policy, so that nothing
// reaches the bot's own loopback unless configured.
func (s *Session) selfAddressed(r *http.Request) bool {
	host := normHost(r.URL.Hostname())
	if host != "localhost" && host != "127.0.0.1" && host != "::1" {
		return false
	}
	if ok, p := s.allowed(host, portOf(r.URL)); ok && p != nil {
		return false
	}
	name, _, _ := strings.Cut(strings.TrimPrefix(r.URL.EscapedPath(), "/"), "/")
	return s.g.byName[name] != nil
}

// authorized tells whether the request carries this session's token
// wherever a CLI puts its key, and the session is open.
func (s *Session) authorized(r *http.Request) bool {
	if s.closed.Load() {
		return false
	}
	for _, c := range candidates(r) {
		if isToken(c, s.token) {
			return true
		}
	}
	return false
}

// isToken tells whether c is token, bare or behind one of TokenPrefixes.
func isToken(c, token string) bool {
	if c == "" {
		return false
	}
	for _, prefix := range TokenPrefixes {
		if rest, ok := strings.CutPrefix(c, prefix); ok && subtle.ConstantTimeCompare([]byte(rest), []byte(token)) == 1 {
			return true
		}
	}
	return subtle.ConstantTimeCompare([]byte(c), []byte(token)) == 1
}

// credentialHeaders are the request headers a CLI may carry its key in; the
// gateway strips them all before forwarding.
var credentialHeaders = []string{"Authorization", "X-Api-Key", "X-Goog-Api-Key", "Api-Key", "Proxy-Authorization"}

// candidates are the values that may be the token.
func candidates(r *http.Request) []string {
	var out []string
	for _, h := range credentialHeaders {
		for _, v := range r.Header.Values(h) {
			v = strings.TrimSpace(v)
			scheme, rest, ok := strings.Cut(v, " ")
			switch {
			case ok && (strings.EqualFold(scheme, "Bearer") || strings.EqualFold(scheme, "token")):
				out = append(out, strings.TrimSpace(rest))
			case ok && strings.EqualFold(scheme, "Basic"):
				if raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(rest)); err == nil {
					user, pass, _ := strings.Cut(string(raw), ":")
					out = append(out, pass, user)
				}
			default:
				out = append(out, v)
			}
		}
	}
	out = append(out, r.URL.Query()["key"]...)
	return out
}

// refuse answers 403 to a request for a host that is not allowed, and
// records the refusal.
func (s *Session) refuse(w http.ResponseWriter, r *http.Request, host string) {
	path := r.URL.Path
	if r.Method == http.MethodConnect {
		path = ""
	}
	s.record(r, host, path, "")
	writeError(w, http.StatusForbidden, "forbidden",
		fmt.Sprintf("alfred gateway: %s is not an allowed destination for this run (only the configured model providers%s are); the attempt is recorded on the run", host, s.allowSuffix()))
}

// refuseEndpoint answers 403 in p's error shape to a request for p that is
// not one of its model endpoints (path: where it would have gone, asked:
// the path the agent asked for), and records the refusal.
func (s *Session) refuseEndpoint(w http.ResponseWriter, r *http.Request, p *provider, path, asked, reason string) {
	s.record(r, p.shown, path, reason)
	p.writeAPIError(w, errRefused, fmt.Sprintf("alfred gateway: %s %s refused: %s; this run reaches only %s's model endpoints (%s); the attempt is recorded on the run",
		r.Method, clip(asked), reason, p.Name, p.endpointList()))
}

// record keeps a refusal (at most MaxRefusals, all counted) and logs it.
func (s *Session) record(r *http.Request, host, path, reason string) {
	path = clip(path)
	ref := Refusal{Host: host, Method: r.Method, Path: path, Reason: reason, At: s.g.now()}
	s.mu.Lock()
	s.nRefuse++
	if len(s.refused) < MaxRefusals {
		s.refused = append(s.refused, ref)
	}
	s.mu.Unlock()
	attrs := []any{"host", host, "method", r.Method, "path", path}
	if reason != "" {
		attrs = append(attrs, "reason", reason)
	}
	s.log.Warn("gateway: egress refused", attrs...)
}

// clip cuts a path to the 200 bytes a refusal keeps.
func clip(path string) string {
	if len(path) > 200 {
		return path[:200]
	}
	return path
}

func (s *Session) allowSuffix() string {
	if len(s.g.allow)+len(s.allow) == 0 {
		return ""
	}
	return " and the project's allowed hosts"
}

// unauthorized answers 401 (407 for a proxy request). A HEAD is only
// logged at Debug: Claude Code probes its base URL with a keyless HEAD before
// its first request, every run.
func (s *Session) unauthorized(w http.ResponseWriter, r *http.Request, proxy bool) {
	msg := "alfred gateway: missing or wrong run token (it works for its own run only, while the run lasts)"
	if s.closed.Load() {
		msg = "alfred gateway: this run has ended; its token no longer works"
	}
	level := slog.LevelWarn
	if r.Method == http.MethodHead {
		level = slog.LevelDebug
	}
	s.log.Log(r.Context(), level, "gateway: request without a valid run token", "method", r.Method, "proxy", proxy)
	if proxy {
		w.Header().Set("Proxy-Authenticate", `Basic realm="alfred"`)
		writeError(w, http.StatusProxyAuthRequired, "authentication_error", msg)
		return
	}
	writeError(w, http.StatusUnauthorized, "authentication_error", msg)
}

// writeError answers a JSON error most CLIs show as is: the OpenAI and
// Anthropic shapes both read error.message.
func writeError(w http.ResponseWriter, status int, kind, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Alfred-Gateway", "1")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"type":  "error",
		"error": map[string]any{"type": kind, "message": msg, "code": status},
	})
}

func (s *Session) addUsage(u Usage) {
	s.mu.Lock()
	s.usage.Requests += u.Requests
	s.usage.InputTokens += u.InputTokens
	s.usage.OutputTokens += u.OutputTokens
	s.mu.Unlock()
}

// activeWriter hands out hijacked connections that record activity.
type activeWriter struct {
	http.ResponseWriter
	s *Session
}

func (w *activeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *activeWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, fmt.Errorf("gateway: hijack: %w", err)
	}
	return &activeConn{Conn: conn, s: w.s}, brw, nil
}

// activeConn records activity at every byte read or written.
type activeConn struct {
	net.Conn
	s *Session
}

func (c *activeConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.s.touch()
	}
	return n, err
}

func (c *activeConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if n > 0 {
		c.s.touch()
	}
	return n, err
}
