package gateway

// The gateway's added latency, side by side with a direct connection to the
// same upstream in the same run:
//
//	go test -run '^$' -bench . -count 6 ./gateway | tee /tmp/gw.txt && benchstat /tmp/gw.txt
//
// direct:    client -> upstream (TCP, keep-alive)
// gateway:   client -> session socket -> gateway -> upstream
// forwarder: client -> cmd/alfred-forward (127.0.0.1) -> session socket -> gateway -> upstream,
//            the whole path of an agent's request (skipped when go cannot build it)

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/alchemic-studio/alfred/agents/mockllm"
)

// benchPaths returns, for one session, a client and base URL per path.
func benchPaths(b *testing.B, upstream string, s *Session, provider string) []struct {
	name   string
	client *http.Client
	base   string
} {
	tcp := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4, DisableCompression: true}}
	paths := []struct {
		name   string
		client *http.Client
		base   string
	}{
		{"direct", tcp, upstream},
		{"gateway", socketClient(s.SocketPath()), "http://gateway/" + provider},
	}
	if addr := benchForwarder(b, s.SocketPath()); addr != "" {
		paths = append(paths, struct {
			name   string
			client *http.Client
			base   string
		}{"forwarder", tcp, "http://" + addr + "/" + provider})
	}
	return paths
}

// BenchmarkRequest: one small non-streamed chat completion from the mock
// model per op (its JSON answer is metered by the gateway).
func BenchmarkRequest(b *testing.B) {
	mock := mockllm.Start(mockllm.Options{})
	defer mock.Close()
	g, _ := newGateway(b, Options{Providers: []Provider{OpenAI(mock.URL, realKey)}, Logger: discardLogger()})
	s := open(b, g, "bench")
	body := `{"model":"gpt-x","messages":[{"role":"user","content":"hi"}]}`
	for _, p := range benchPaths(b, mock.URL, s, "openai") {
		b.Run(p.name, func(b *testing.B) {
			url := p.base + "/v1/chat/completions"
			for b.Loop() {
				req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+s.Token())
				req.Header.Set("Content-Type", "application/json")
				resp, err := p.client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Fatalf("status %d", resp.StatusCode)
				}
			}
		})
	}
}

// BenchmarkStreamChunk: one SSE chunk per op, ping-pong: the upstream sends
// the next chunk only when the client has read the previous one, so ns/op is
// the latency of one chunk from the upstream's write to the client's read.
func BenchmarkStreamChunk(b *testing.B) {
	next := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		chunk := []byte("data: {\"choices\":[{\"delta\":{\"content\":\"token\"}}],\"usage\":null}\n\n")
		for {
			select {
			case _, ok := <-next:
				if !ok {
					return
				}
				_, _ = w.Write(chunk)
				w.(http.Flusher).Flush()
			case <-r.Context().Done():
				return
			}
		}
	}))
	defer up.Close()
	g, _ := newGateway(b, Options{Providers: []Provider{OpenAI(up.URL, realKey)}, Logger: discardLogger()})
	s := open(b, g, "bench")
	for _, p := range benchPaths(b, up.URL, s, "openai") {
		b.Run(p.name, func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.base+"/v1/chat/completions", strings.NewReader(`{"stream":true}`))
			req.Header.Set("Authorization", "Bearer "+s.Token())
			resp, err := p.client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			defer resp.Body.Close()
			br := bufio.NewReader(resp.Body)
			for b.Loop() {
				next <- struct{}{}
				for {
					line, err := br.ReadSlice('\n')
					if err != nil {
						b.Fatal(err)
					}
					if len(line) == 1 {
						break
					}
				}
			}
			cancel()
		})
	}
}

var (
	fwdOnce sync.Once
	fwdBin  string
)

// benchForwarder builds and starts cmd/alfred-forward on the socket and
// returns its address, or "" when it cannot be built here.
func benchForwarder(b *testing.B, socket string) string {
	fwdOnce.Do(func() {
		goBin, err := exec.LookPath("go")
		if err != nil {
			return
		}
		dir, err := os.MkdirTemp("", "gwbench")
		if err != nil {
			return
		}
		bin := filepath.Join(dir, "alfred-forward")
		cmd := exec.Command(goBin, "build", "-o", bin, "../cmd/alfred-forward")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if cmd.Run() == nil {
			fwdBin = bin
		}
	})
	if fwdBin == "" {
		return ""
	}
	cmd := exec.Command(fwdBin, "-port", "0", "-socket", socket)
	stderr, _ := cmd.StderrPipe()
	if cmd.Start() != nil {
		return ""
	}
	b.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, _ := bufio.NewReader(stderr).ReadString('\n')
	m := regexp.MustCompile(`listening on (127\.0\.0\.1:\d+)`).FindStringSubmatch(line)
	if m == nil {
		return ""
	}
	return m[1]
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func TestMain(m *testing.M) {
	code := m.Run()
	if fwdBin != "" {
		_ = os.RemoveAll(filepath.Dir(fwdBin))
	}
	os.Exit(code)
}

// BenchmarkIntercepted: the same small chat completion per op, from the
// mock behind a TLS server playing the Copilot API: direct (TLS,
// keep-alive) against through the gateway's interception (CONNECT once,
// TLS to the gateway's certificate, then TLS again to the upstream).
func BenchmarkIntercepted(b *testing.B) {
	mock := mockllm.Start(mockllm.Options{})
	defer mock.Close()
	gh := mockllm.StartGitHub(mock)
	defer gh.Close()
	g, _ := newGateway(b, Options{Providers: []Provider{Copilot(gh.URL, realKey)}, Logger: discardLogger(),
		Transport: gh.Client().Transport.(*http.Transport).Clone()})
	s := open(b, g, "bench")
	body := `{"model":"gpt-x","messages":[{"role":"user","content":"hi"}]}`
	for _, p := range []struct {
		name   string
		client *http.Client
		url    string
	}{
		{"direct", gh.Client(), gh.URL + "/chat/completions"},
		{"intercepted", proxyClient(b, s, s.Token()), "https://" + CopilotAPIHost + "/chat/completions"},
	} {
		b.Run(p.name, func(b *testing.B) {
			for b.Loop() {
				req, _ := http.NewRequest(http.MethodPost, p.url, strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+GitHubTokenPrefix+s.Token())
				req.Header.Set("Content-Type", "application/json")
				resp, err := p.client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Fatalf("status %d", resp.StatusCode)
				}
			}
		})
	}
}
