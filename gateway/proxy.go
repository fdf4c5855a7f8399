package gateway

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/alchemic-studio/alfred/internal/redact"
)

// maxErrorBody bounds the error answer the gateway reads to redact.
const maxErrorBody = 1 << 20

// route is where one request goes, set by the handler for Rewrite.
type route struct {
	p      *provider // nil for an Allow host
	target *url.URL
}

type routeKey struct{}

// origin serves an origin-form request: /<provider>/<path> goes to the
// provider's base URL + /<path>, when /<path> is one of its endpoints.
func (s *Session) origin(w http.ResponseWriter, r *http.Request) {
	escaped := r.URL.EscapedPath()
	name, rest, _ := strings.Cut(strings.TrimPrefix(escaped, "/"), "/")
	p := s.g.byName[name]
	if p == nil {
		writeError(w, http.StatusNotFound, "not_found_error",
			fmt.Sprintf("alfred gateway: no provider at /%s/; this run's providers are at /%s/", name, strings.Join(s.g.Providers(), "/, /")))
		return
	}
	if !s.authorized(r) {
		s.unauthorized(w, r, false)
		return
	}
	if p.hosts != nil {
		writeError(w, http.StatusNotFound, "not_found_error",
			fmt.Sprintf("alfred gateway: %s is reached with the gateway as the CLI's HTTPS proxy, not at /%s/", name, name))
		return
	}
	s.provider(w, r, p, "/"+rest, escaped)
}

// provider forwards a request for p whose escaped path after p's base path
// is rel (asked: the path the agent asked for) when it is one of p's
// endpoints and the budget allows; else it refuses and records it.
func (s *Session) provider(w http.ResponseWriter, r *http.Request, p *provider, rel, asked string) {
	rawPath := p.base.EscapedPath() + rel
	reason := p.checkPath(r.Method, rel)
	if r.Header.Get("Upgrade") != "" {
		reason = "a connection upgrade (WebSocket) to a model provider: its frames could not be metered"
	}
	if reason != "" {
		s.refuseEndpoint(w, r, p, rawPath, asked, reason)
		return
	}
	if s.holdToBudget(w, r, p, rawPath) {
		return
	}
	path, err := url.PathUnescape(rawPath)
	if err != nil { // checkPath made sure it decodes
		writeError(w, http.StatusBadRequest, "invalid_request_error", "alfred gateway: bad path")
		return
	}
	target := *p.base
	target.Path, target.RawPath = path, rawPath
	target.RawQuery = withoutKey(r.URL, "")
	s.forward(w, r, &route{p: p, target: &target})
}

// absolute serves an absolute-form (proxy) request: to a provider host it is
// a provider request (token checked, endpoint checked, key added, metered);
// to an Allow host it is forwarded as is; anything else is refused.
func (s *Session) absolute(w http.ResponseWriter, r *http.Request) {
	ok, p := s.allowed(r.URL.Hostname(), portOf(r.URL))
	if !ok {
		s.refuse(w, r, r.URL.Host)
		return
	}
	if !s.authorized(r) {
		s.unauthorized(w, r, true)
		return
	}
	if p != nil {
		// The path is the provider's whole path: its base path, then an endpoint's.
		escaped := r.URL.EscapedPath()
		rel, ok := strings.CutPrefix(escaped, p.base.EscapedPath())
		if !ok || !strings.HasPrefix(rel, "/") {
			s.refuseEndpoint(w, r, p, escaped, escaped, "outside the provider's base path "+or(p.base.EscapedPath(), "/"))
			return
		}
		s.provider(w, r, p, rel, escaped)
		return
	}
	target := *r.URL
	target.User = nil
	target.RawQuery = withoutKey(r.URL, s.token)
	s.forward(w, r, &route{target: &target})
}

// withoutKey is u's query without the key parameter: any value of it when
// token is empty, else only the value equal to token.
func withoutKey(u *url.URL, token string) string {
	q := u.Query()
	vals, ok := q["key"]
	if !ok {
		return u.RawQuery
	}
	if token == "" {
		q.Del("key")
	} else {
		var keep []string
		for _, v := range vals {
			if v != token {
				keep = append(keep, v)
			}
		}
		q["key"] = keep
		if len(keep) == 0 {
			q.Del("key")
		}
	}
	return q.Encode()
}

func (s *Session) forward(w http.ResponseWriter, r *http.Request, rt *route) {
	s.inflight.Add(1)
	defer s.inflight.Done()
	// Leave the request body to the proxy: without this, the server would
	// discard what is left of it when the answer's headers go out, racing
	// the transport that is still sending it upstream (an upstream may
	// answer before it has read the whole request).
	_ = http.NewResponseController(w).EnableFullDuplex()
	if rt.p != nil {
		s.addUsage(Usage{Requests: 1})
	}
	if r.Header.Get("Upgrade") != "" {
		// A WebSocket (or other upgrade) to an allowed host (one to a
		// provider is refused) is hijacked by the proxy: track it, so that
		// Close cuts it like a CONNECT tunnel. Its frames are not inspected.
		w = &hijackTracker{ResponseWriter: w, s: s}
	}
	s.proxy.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), routeKey{}, rt)))
}

// hijackTracker registers the connection the proxy hijacks for an upgrade.
type hijackTracker struct {
	http.ResponseWriter
	s *Session
}

func (h *hijackTracker) Unwrap() http.ResponseWriter { return h.ResponseWriter }

func (h *hijackTracker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(h.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	if !h.s.track(conn, true) {
		_ = conn.Close()
		return nil, nil, errors.New("gateway: session closed")
	}
	return &trackedConn{Conn: conn, s: h.s}, brw, nil
}

// trackedConn forgets itself when closed.
type trackedConn struct {
	net.Conn
	s *Session
}

func (c *trackedConn) Close() error {
	c.s.track(c.Conn, false)
	return c.Conn.Close()
}

// reverseProxy is the session's forwarding half.
func (g *Gateway) reverseProxy(s *Session) *httputil.ReverseProxy {
	secrets := g.allSecrets()
	return &httputil.ReverseProxy{
		Transport:     g.transport,
		FlushInterval: -1, // every chunk is flushed as it comes
		ErrorLog:      slog.NewLogLogger(g.log.Handler(), slog.LevelDebug),
		Rewrite: func(pr *httputil.ProxyRequest) {
			rt := pr.In.Context().Value(routeKey{}).(*route)
			out := pr.Out
			out.URL = rt.target
			out.Host = ""
			// Transparent compression by the transport, so that the meter
			// reads plain text and the agent gets it.
			out.Header.Del("Accept-Encoding")
			if rt.p == nil {
				stripToken(out.Header, s.token)
				return
			}
			for _, h := range credentialHeaders {
				out.Header.Del(h)
			}
			for k, vs := range rt.p.Headers {
				out.Header[http.CanonicalHeaderKey(k)] = slices.Clone(vs)
			}
			addFlags(out.Header, rt.p.Flags)
			if rt.p.Key == "" {
				return
			}
			if rt.p.Query != "" {
				q := out.URL.Query()
				q.Set(rt.p.Query, rt.p.Key)
				u := *out.URL
				u.RawQuery = q.Encode()
				out.URL = &u
				return
			}
			v, scheme := rt.p.Key, rt.p.Scheme
			if scheme == SchemeAsSent {
				scheme = schemeOf(pr.In.Header.Get(rt.p.Header))
			}
			if scheme != "" {
				v = scheme + " " + v
			}
			out.Header.Set(rt.p.Header, v)
		},
		ModifyResponse: func(resp *http.Response) error {
			rt := resp.Request.Context().Value(routeKey{}).(*route)
			redactHeaders(resp.Header, secrets)
			if resp.StatusCode >= 400 {
				if err := redactBody(resp, secrets); err != nil {
					return err
				}
			}
			if rt.p == nil || resp.StatusCode == http.StatusSwitchingProtocols {
				s.log.Debug("gateway: forwarded", "host", rt.target.Host, "method", resp.Request.Method, "status", resp.StatusCode)
				return nil
			}
			name, method, path, status := rt.p.Name, resp.Request.Method, rt.target.Path, resp.StatusCode
			add := func(in, out int64) { s.addUsage(Usage{InputTokens: in, OutputTokens: out}) }
			resp.Body = newMeter(resp.Body, resp.Header.Get("Content-Type"), resp.ContentLength, add, func(in, out int64) {
				s.log.Debug("gateway: model request", "provider", name, "method", method, "path", path,
					"status", status, "input_tokens", in, "output_tokens", out)
			})
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			rt, _ := r.Context().Value(routeKey{}).(*route)
			msg := redact.Secrets(err.Error(), secrets)
			if errors.Is(err, context.Canceled) {
				s.log.Debug("gateway: request canceled", "error", msg)
				return
			}
			who := "upstream"
			if rt != nil && rt.p != nil {
				who = "provider " + rt.p.Name
			}
			s.log.Warn("gateway: forwarding failed", "to", who, "error", msg)
			writeError(w, http.StatusBadGateway, "api_error", "alfred gateway: "+who+" unreachable: "+msg)
		},
	}
}

// schemeOf is the scheme of an Authorization value ("Bearer", "token"),
// Bearer when it has none or one of other characters than letters.
func schemeOf(v string) string {
	scheme, _, ok := strings.Cut(strings.TrimSpace(v), " ")
	if !ok || scheme == "" || strings.ContainsFunc(scheme, func(r rune) bool { return (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') }) {
		return "Bearer"
	}
	return scheme
}

// allSecrets are the provider keys, also as they look in a query string.
func (g *Gateway) allSecrets() []string {
	var out []string
	for _, k := range g.secrets {
		out = append(out, k)
		if e := url.QueryEscape(k); e != k {
			out = append(out, e)
		}
	}
	return out
}

// stripToken removes the run token from the headers of a request to an
// Allow host, leaving the agent's own credentials for that host alone.
func stripToken(h http.Header, token string) {
	for _, name := range credentialHeaders {
		vals := h.Values(name)
		if len(vals) == 0 {
			continue
		}
		probe := &http.Request{Header: http.Header{name: vals}, URL: &url.URL{}}
		for _, c := range candidates(probe) {
			if isToken(c, token) {
				h.Del(name)
				break
			}
		}
	}
}

func redactHeaders(h http.Header, secrets []string) {
	if len(secrets) == 0 {
		return
	}
	for k, vs := range h {
		for i, v := range vs {
			vs[i] = redact.Secrets(v, secrets)
		}
		h[k] = vs
	}
}

// redactBody reads an error answer (at most maxErrorBody) and hides the keys in it.
func redactBody(resp *http.Response, secrets []string) error {
	if len(secrets) == 0 || resp.Body == nil {
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	_ = resp.Body.Close()
	if err != nil {
		return fmt.Errorf("reading the error answer: %w", err)
	}
	b = []byte(redact.Secrets(string(b), secrets))
	resp.Body = io.NopCloser(bytes.NewReader(b))
	resp.ContentLength = int64(len(b))
	resp.Header.Set("Content-Length", strconv.Itoa(len(b)))
	resp.Header.Del("Content-Encoding")
	resp.TransferEncoding = nil
	return nil
}

// connect serves CONNECT: a tunnel to an allowed host, else a refusal.
func (s *Session) connect(w http.ResponseWriter, r *http.Request) {
	hostport := r.Host
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = hostport, "443"
	}
	ok, p := s.allowed(host, port)
	if !ok {
		s.refuse(w, r, hostport)
		return
	}
	if p != nil && p.intercepted {
		s.intercept(w, r, p)
		return
	}
	if p != nil { // a tunnel would pass by its endpoints, unmetered
		s.record(r, hostport, "", "CONNECT to a model provider: it is reached through the gateway's base URL only")
		p.writeAPIError(w, errRefused, fmt.Sprintf("alfred gateway: CONNECT %s refused: a model provider is reached through the gateway's base URL only; the attempt is recorded on the run", hostport))
		return
	}
	if !s.authorized(r) {
		s.unauthorized(w, r, true)
		return
	}
	up, err := s.g.dial("tcp", net.JoinHostPort(host, port))
	if err != nil {
		s.log.Warn("gateway: tunnel failed", "host", hostport, "error", err)
		writeError(w, http.StatusBadGateway, "api_error", "alfred gateway: "+hostport+" unreachable: "+redact.Secrets(err.Error(), s.g.secrets))
		return
	}
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		_ = up.Close()
		writeError(w, http.StatusInternalServerError, "api_error", "alfred gateway: cannot tunnel: "+err.Error())
		return
	}
	if !s.track(conn, true) {
		_ = up.Close()
		_ = conn.Close()
		return
	}
	defer s.track(conn, false)
	if _, err := io.WriteString(conn, "HTTP/1.1 200 Connection Established\r\n\r\n"); err != nil {
		_ = up.Close()
		_ = conn.Close()
		return
	}
	s.log.Debug("gateway: tunnel", "host", hostport)
	var client io.Reader = conn
	if n := brw.Reader.Buffered(); n > 0 {
		pending, _ := brw.Reader.Peek(n)
		client = io.MultiReader(bytes.NewReader(bytes.Clone(pending)), conn)
	}
	pipe(conn, client, up)
}

// track adds (or removes) a hijacked connection Close must cut; it reports
// false when the session is already closed.
func (s *Session) track(c net.Conn, add bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !add {
		delete(s.tunnels, c)
		return true
	}
	if s.closed.Load() {
		return false
	}
	if s.tunnels == nil {
		s.tunnels = map[net.Conn]struct{}{}
	}
	s.tunnels[c] = struct{}{}
	return true
}

// pipe copies both ways, passing each half-close on, and closes both ends
// when both directions are done.
func pipe(client net.Conn, fromClient io.Reader, up net.Conn) {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		_, _ = io.Copy(up, fromClient)
		closeWrite(up)
	}()
	go func() {
		defer wg.Done()
		_, _ = io.Copy(client, up)
		closeWrite(client)
	}()
	wg.Wait()
	_ = client.Close()
	_ = up.Close()
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	} else {
		_ = c.Close()
	}
}

// addFlags joins each flag to h's header of its name, once.
func addFlags(h, flags http.Header) {
	for k, vs := range flags {
		have := strings.Split(strings.Join(h.Values(k), ","), ",")
		for i := range have {
			have[i] = strings.TrimSpace(have[i])
		}
		have = slices.DeleteFunc(have, func(s string) bool { return s == "" })
		for _, v := range vs {
			if !slices.Contains(have, v) {
				have = append(have, v)
			}
		}
		h.Set(k, strings.Join(have, ","))
	}
}
