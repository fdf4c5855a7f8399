package main

import (
	"bufio"
	"bytes"
	"debug/elf"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/agents/mockllm"
	"github.com/alchemic-studio/alfred/gateway"
	"github.com/alchemic-studio/alfred/internal/tunnel"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// binary builds the forwarder as the agent image gets it: static, no cgo.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		goBin, err := exec.LookPath("go")
		if err != nil {
			buildErr = err
			return
		}
		dir, err := os.MkdirTemp("", "alfred-forward-test")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "alfred-forward")
		cmd := exec.Command(goBin, "build", "-trimpath", "-ldflags", "-s -w", "-o", binPath, ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = errors.New(string(out))
		}
	})
	if buildErr != nil {
		t.Fatalf("go build: %v", buildErr)
	}
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		_ = os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// start runs the forwarder on a free port and returns its address.
func start(t *testing.T, socket string) string {
	t.Helper()
	cmd := exec.Command(binary(t), "-port", "0", "-socket", socket)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stderr).ReadString('\n')
	if err != nil {
		t.Fatalf("forwarder: %v %q", err, line)
	}
	m := regexp.MustCompile(`listening on (127\.0\.0\.1:\d+)`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("forwarder said %q", line)
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	return m[1]
}

func TestStatic(t *testing.T) {
	f, err := elf.Open(binary(t))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("the forwarder is dynamically linked (%v)", p.Type)
		}
	}
}

// unixServer serves each connection to a unix socket with serve, then
// closes it; it returns the socket's path.
func unixServer(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "fwd") // short: a socket path has 107 bytes at most
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				serve(c)
			}()
		}
	}()
	return sock
}

// TestHalfClose: bytes go both ways, and the client's half-close reaches the
// socket's server, whose answer still comes back.
func TestHalfClose(t *testing.T) {
	sock := unixServer(t, func(c net.Conn) {
		b, _ := io.ReadAll(c) // until the client's half-close
		_, _ = c.Write(append([]byte("got:"), b...))
	})
	addr := start(t, sock)
	for _, size := range []int{4, 1 << 20} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		msg := bytes.Repeat([]byte("p"), size)
		go func() {
			_, _ = c.Write(msg)
			_ = c.(*net.TCPConn).CloseWrite()
		}()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		b, err := io.ReadAll(c)
		c.Close()
		if err != nil || !bytes.Equal(b, append([]byte("got:"), msg...)) {
			t.Errorf("size %d: got %d bytes, %v", size, len(b), err)
		}
	}
}

// TestAnswerBeforeTheEnd: a server that answers and closes while the client
// still sends (a refusal of a request whose body it does not read): the
// client gets the whole answer, however much it was still sending.
func TestAnswerBeforeTheEnd(t *testing.T) {
	answer := []byte("HTTP/1.0 403 Forbidden\r\n\r\nexfil.example is not an allowed destination\n")
	sock := unixServer(t, func(c net.Conn) {
		_, _ = c.Read(make([]byte, 64)) // the request line, no more
		_, _ = c.Write(answer)
	})
	addr := start(t, sock)
	for _, size := range []int{64 << 10, 4 << 20} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		go func() { _, _ = c.Write(bytes.Repeat([]byte("e"), size)) }() // fails once the forwarder gives up: fine
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		b, err := io.ReadAll(c)
		c.Close()
		if !bytes.Equal(b, answer) {
			t.Errorf("sending %d bytes: got %q, %v; want the whole answer", size, b, err)
		}
	}
}

// TestThroughGateway: real HTTP from a TCP client, through the forwarder,
// to a gateway session, to the mock model: the key is added, the answer
// streams chunk by chunk, usage is counted; after the session closes the
// client gets a 502 that says why.
func TestThroughGateway(t *testing.T) {
	mock := mockllm.Start(mockllm.Options{Reply: "through the forwarder"})
	defer mock.Close()
	release := make(chan struct{})
	slow := httptestServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: {\"usage\":null}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-time.After(10 * time.Second):
			t.Error("the first chunk did not come through before the last was sent")
		}
		_, _ = io.WriteString(w, "data: {\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":6}}\n\n")
	})
	dir, _ := os.MkdirTemp("", "fwd")
	defer os.RemoveAll(dir)
	g, err := gateway.New(gateway.Options{
		Providers: []gateway.Provider{gateway.Anthropic(mock.URL, "sk-real-key-for-the-test"), gateway.OpenAI(slow, "sk-real-key-for-the-test")},
		Dir:       dir,
		Logger:    slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	s, err := g.Open("run-1")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + start(t, s.SocketPath())
	c := &http.Client{Timeout: 20 * time.Second}

	for _, stream := range []string{"false", "true"} {
		req, _ := http.NewRequest(http.MethodPost, base+"/anthropic/v1/messages",
			strings.NewReader(`{"model":"m","stream":`+stream+`,"messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("x-api-key", s.Token())
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), "through the forwarder") || strings.Contains(string(b), "sk-real") {
			t.Errorf("stream=%s: %d %s", stream, resp.StatusCode, b)
		}
	}
	if got := mock.Requests(); len(got) != 2 || got[0].Header.Get("X-Api-Key") == "" {
		t.Errorf("the mock got %+v", got)
	}

	req, _ := http.NewRequest(http.MethodPost, base+"/openai/v1/chat/completions", strings.NewReader(`{"stream":true}`))
	req.Header.Set("Authorization", "Bearer "+s.Token())
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	if line, err := br.ReadString('\n'); err != nil || !strings.HasPrefix(line, "data:") {
		t.Fatalf("first chunk %q %v", line, err)
	}
	close(release)
	_, _ = io.ReadAll(br)
	resp.Body.Close()
	if u := s.Usage(); u != (gateway.Usage{Requests: 3, InputTokens: 25, OutputTokens: 8}) {
		t.Errorf("usage %+v", u)
	}

	_ = s.Close()
	c.CloseIdleConnections()
	req, _ = http.NewRequest(http.MethodPost, base+"/anthropic/v1/messages", strings.NewReader(`{}`))
	req.Header.Set("x-api-key", s.Token())
	resp, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(b), "gateway is unreachable") {
		t.Errorf("after Close: %d %s", resp.StatusCode, b)
	}
}

func httptestServer(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}

// TestWrap: with a command, the forwarder runs it and exits as it did.
func TestWrap(t *testing.T) {
	sock := unixServer(t, func(net.Conn) {})
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(free.Addr().String())
	_ = free.Close()
	tests := []struct {
		name string
		args []string
		code int
		out  string
	}{
		{"exit status", []string{"--", "sh", "-c", "echo hi; exit 3"}, 3, "hi\n"},
		{"killed by a signal", []string{"--", "sh", "-c", "kill -TERM $$"}, 143, ""},
		{"the port is up before the command", []string{"-port", port, "--", "bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/" + port}, 0, ""},
		{"no such command", []string{"-port", "0", "--", "/nonexistent"}, 125, ""},
		{"no socket", []string{"-socket", filepath.Join(filepath.Dir(sock), "missing.sock"), "--", "true"}, 125, ""},
		{"a file that is not a socket", []string{"-socket", "/etc/hostname", "--", "true"}, 125, ""},
		{"bad port", []string{"-port", "70000", "--", "true"}, 2, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"-socket", sock, "-port", "0"}, tc.args...)
			cmd := exec.Command(binary(t), args...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			code := 0
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				code = exit.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.code || stdout.String() != tc.out {
				t.Errorf("exit %d stdout %q stderr %q, want %d %q", code, stdout.String(), stderr.String(), tc.code, tc.out)
			}
			if tc.code == 0 && stderr.Len() > 0 {
				t.Errorf("the forwarder spoke on a clean run: %q", stderr.String())
			}
		})
	}
	t.Run("env", func(t *testing.T) {
		cmd := exec.Command(binary(t), "--", "true")
		cmd.Env = append(os.Environ(), "ALFRED_FORWARD_SOCKET="+sock, "ALFRED_FORWARD_PORT=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%v %s", err, out)
		}
	})
}

// TestRelay: the relay mode, as the kubernetes runner starts it in a Pod:
// the forwarder's socket is a relay whose connections travel over its stdin
// and stdout to a tunnel.Dial on the other side, here to an HTTP server;
// the end of stdin ends the relay with status 0.
func TestRelay(t *testing.T) {
	upstream := unixServer(t, func(c net.Conn) {
		req, err := http.ReadRequest(bufio.NewReader(c))
		if err != nil {
			return
		}
		body := "relayed " + req.URL.Path
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\nConnection: close\r\n\r\n"+body)
	})
	dir, err := os.MkdirTemp("", "relay")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "gateway.sock")
	cmd := exec.Command(binary(t), "-relay", sock)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = tunnel.Dial(stdout, stdin, func() (net.Conn, error) { return net.Dial("unix", upstream) }) }()
	addr := start(t, waitSocket(t, sock)) // the forwarder in front, as in the agent container
	res, err := http.Get("http://" + addr + "/anthropic/v1/messages")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if string(got) != "relayed /anthropic/v1/messages" {
		t.Fatalf("through the relay: %q", got)
	}
	_ = stdin.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("relay exit: %v (%s)", err, stderr.String())
		}
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("the relay did not end with its stdin")
	}
}

// waitSocket waits until path is a socket, and returns it.
func waitSocket(t *testing.T, path string) string {
	t.Helper()
	for range 200 {
		if fi, err := os.Stat(path); err == nil && fi.Mode()&os.ModeSocket != 0 {
			return path
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s never became a socket", path)
	return ""
}
