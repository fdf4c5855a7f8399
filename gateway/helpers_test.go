package gateway

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// newGateway makes a gateway whose sessions live in a test folder and whose
// logs (Debug and up) go to the returned buffer.
func newGateway(t testing.TB, opts Options) (*Gateway, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	if opts.Dir == "" {
		// Not t.TempDir(): its path holds the test's name, and a socket
		// path is at most 107 bytes.
		dir, err := os.MkdirTemp("", "gwt")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.RemoveAll(dir) })
		opts.Dir = dir
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	g, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	return g, logs
}

func open(t testing.TB, g *Gateway, runID string) *Session {
	t.Helper()
	s, err := g.Open(runID)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// socketClient is an HTTP client whose every connection goes to the socket.
func socketClient(path string) *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "unix", path)
			},
			DisableCompression: true,
		},
		Timeout: 20 * time.Second,
	}
}

// do sends one request to the session's socket and returns the status, the
// headers and the body.
func do(t testing.TB, c *http.Client, method, url, body string, hdr map[string]string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading: %v", method, url, err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

// headerDump is every header name and value, to look for a secret.
func headerDump(h http.Header) string {
	var sb strings.Builder
	for k, vs := range h {
		sb.WriteString(k + ": " + strings.Join(vs, ", ") + "\n")
	}
	return sb.String()
}

func mustURL(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}

// rawRequest writes req, byte for byte, on a fresh connection to the
// session's socket and reads the answer (its body whole).
func rawRequest(t testing.TB, s *Session, req string) (*http.Response, string) {
	t.Helper()
	c, err := net.Dial("unix", s.SocketPath())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	method, _, _ := strings.Cut(req, " ")
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: method})
	if err != nil {
		t.Fatalf("%q: %v", req, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%q: reading: %v", req, err)
	}
	return resp, string(b)
}

// heldStream starts an Anthropic request that the test upstream holds open
// (?hold=1) and returns its body after the first line, and that line; the
// body is closed with the test.
func heldStream(t *testing.T, c *http.Client, token string) (*bufio.Reader, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://gateway/anthropic/v1/messages?hold=1", strings.NewReader("{}"))
	req.Header.Set("x-api-key", token)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	br := bufio.NewReader(resp.Body)
	line, err := br.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	return br, line
}
