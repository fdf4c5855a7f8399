package tunnel

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// pair is a tunnel over two pipes: the listening end at sock (as in a Pod),
// the dialling end connecting each stream with dial (as in the bot).
type pair struct {
	sock     string
	toListen *io.PipeWriter // the dialling end's writer: closing it ends the byte stream
	served   chan error
	dialed   chan error
}

func newPair(t *testing.T, dial func() (net.Conn, error)) *pair {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "gateway.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	aR, aW := io.Pipe() // dialling end -> listening end
	bR, bW := io.Pipe() // listening end -> dialling end
	p := &pair{sock: sock, toListen: aW, served: make(chan error, 1), dialed: make(chan error, 1)}
	go func() { p.served <- Serve(ln, aR, bW); bW.Close() }()
	go func() { p.dialed <- Dial(bR, aW, dial) }()
	t.Cleanup(func() { aW.Close(); bW.Close() })
	return p
}

// httpOnUnix serves h on a unix socket of its own and returns its dialer.
func httpOnUnix(t *testing.T, h http.Handler) func() (net.Conn, error) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "upstream.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return func() (net.Conn, error) { return net.Dial("unix", sock) }
}

func clientTo(sock string) *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		}}}
}

// TestRequestsThroughTheTunnel: HTTP requests, many at once and with bodies
// larger than a frame, reach the server behind the dialling end and their
// answers come back whole.
func TestRequestsThroughTheTunnel(t *testing.T) {
	dial := httpOnUnix(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %d %s", r.URL.Path, len(body), bytes.ToUpper(body[:min(len(body), 8)]))
	}))
	p := newPair(t, dial)
	c := clientTo(p.sock)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := strings.Repeat(fmt.Sprintf("req%05d", i), 10000) // 80 KB: several frames
			res, err := c.Post("http://gateway/anthropic/v1/messages", "text/plain", strings.NewReader(body))
			if err != nil {
				t.Errorf("request %d: %v", i, err)
				return
			}
			defer res.Body.Close()
			got, _ := io.ReadAll(res.Body)
			if want := fmt.Sprintf("/anthropic/v1/messages %d REQ%05d", len(body), i); string(got) != want {
				t.Errorf("request %d: %q, want %q", i, got, want)
			}
		}()
	}
	wg.Wait()
}

// TestHalfClose: a client that closes its writing half still reads the
// whole answer, which the server writes only after reading to the end.
func TestHalfClose(t *testing.T) {
	up := filepath.Join(t.TempDir(), "echo.sock")
	ln, err := net.Listen("unix", up)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				all, _ := io.ReadAll(c) // until the client's half-close
				c.Write([]byte("got " + fmt.Sprint(len(all))))
			}()
		}
	}()
	p := newPair(t, func() (net.Conn, error) { return net.Dial("unix", up) })
	c, err := net.Dial("unix", p.sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write(bytes.Repeat([]byte("x"), 100000))
	c.(*net.UnixConn).CloseWrite()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	answer, err := io.ReadAll(c)
	if err != nil || string(answer) != "got 100000" {
		t.Fatalf("answer %q, %v", answer, err)
	}
}

// TestDialFails: a stream the dialling end cannot connect is closed at
// once; the tunnel goes on carrying the next one.
func TestDialFails(t *testing.T) {
	var mu sync.Mutex
	fail := true
	ok := httpOnUnix(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "fine") }))
	p := newPair(t, func() (net.Conn, error) {
		mu.Lock()
		defer mu.Unlock()
		if fail {
			fail = false
			return nil, fmt.Errorf("gateway down")
		}
		return ok()
	})
	c, err := net.Dial("unix", p.sock)
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := c.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Fatalf("a stream whose dial failed read %d, %v", n, err)
	}
	c.Close()
	res, err := clientTo(p.sock).Get("http://gateway/")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if b, _ := io.ReadAll(res.Body); string(b) != "fine" {
		t.Fatalf("next stream: %q", b)
	}
}

// TestEndOfTheByteStream: when the byte stream ends, Serve and Dial return,
// the listening socket is closed and open connections end.
func TestEndOfTheByteStream(t *testing.T) {
	hold := make(chan struct{})
	defer close(hold)
	dial := httpOnUnix(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-hold }))
	p := newPair(t, dial)
	c, err := net.Dial("unix", p.sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: g\r\n\r\n")
	time.Sleep(50 * time.Millisecond)
	p.toListen.Close()
	for _, ch := range []chan error{p.served, p.dialed} {
		select {
		case err := <-ch:
			if err != nil {
				t.Errorf("end: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the tunnel did not end with its byte stream")
		}
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadAll(c); err != nil {
		t.Errorf("open connection: %v, want its end", err)
	}
	if _, err := net.Dial("unix", p.sock); err == nil {
		t.Error("the socket still accepts")
	}
}

// TestBadFrames: garbage on the byte stream is an error, never a panic.
func TestBadFrames(t *testing.T) {
	for name, raw := range map[string][]byte{
		"unknown type":   {9, 0, 0, 0, 1, 0, 0, 0, 0},
		"huge payload":   {2, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff},
		"torn payload":   {2, 0, 0, 0, 1, 0, 0, 0, 9, 'a'},
		"open to server": {1, 0, 0, 0, 7, 0, 0, 0, 0},
	} {
		ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "s.sock"))
		if err != nil {
			t.Fatal(err)
		}
		if err := Serve(ln, bytes.NewReader(raw), io.Discard); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func FuzzFrames(f *testing.F) {
	f.Add([]byte{1, 0, 0, 0, 1, 0, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 2, 'h', 'i', 3, 0, 0, 0, 1, 0, 0, 0, 0})
	f.Add([]byte{4, 0, 0, 0, 9, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, raw []byte) {
		_ = Dial(bytes.NewReader(raw), io.Discard, func() (net.Conn, error) {
			a, b := net.Pipe()
			go io.Copy(io.Discard, b)
			return a, nil
		})
	})
}
