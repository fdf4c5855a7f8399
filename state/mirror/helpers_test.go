package mirror

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/state"
)

const (
	testUser  = "alfred"
	testToken = "tok-0123456789-s3cret"
)

// gitServer serves bare repositories over smart HTTP with the real git
// http-backend, behind basic auth, as a forge does.
type gitServer struct {
	root string
	srv  *httptest.Server
}

func newGitServer(t *testing.T) *gitServer {
	t.Helper()
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatalf("the git CLI is required (apt-get install git): %v", err)
	}
	backend := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	if _, err := os.Stat(backend); err != nil {
		t.Fatalf("git http-backend is missing (apt-get install git): %v", err)
	}
	g := &gitServer{root: t.TempDir()}
	h := &cgi.Handler{Path: backend, Env: []string{"GIT_PROJECT_ROOT=" + g.root, "GIT_HTTP_EXPORT_ALL=1", "REMOTE_USER=" + testUser}}
	g.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != testUser || p != testToken {
			w.Header().Set("WWW-Authenticate", `Basic realm="forge"`)
			http.Error(w, "auth", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(g.srv.Close)
	return g
}

// repo creates an empty bare repository and returns its path and its Remote.
func (g *gitServer) repo(t *testing.T, name string) (string, Remote) {
	t.Helper()
	bare := filepath.Join(g.root, name+".git")
	gitT(t, "", "init", "--quiet", "--bare", bare)
	return bare, Remote{URL: g.srv.URL + "/" + name + ".git", Username: testUser, Password: testToken}
}

// gitT runs git and fails the test on an error.
func gitT(t testing.TB, dir string, args ...string) string {
	t.Helper()
	if dir != "" {
		args = append([]string{"--git-dir", dir}, args...)
	}
	cmd := exec.Command("git", args...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// tipOf is the state branch of a bare repository ("" when it has none).
func tipOf(dir string) string {
	out, _ := exec.Command("git", "--git-dir", dir, "for-each-ref", "--format=%(objectname)", branch).Output()
	return strings.TrimSpace(string(out))
}

// store opens a writable state store at dir; each durable commit calls
// notify (when set), as serve wires the mirror.
func store(t *testing.T, dir string, notify func()) *state.Store {
	t.Helper()
	st, err := state.Open(context.Background(), dir, state.Options{Logger: quiet(), Committed: func(string) {
		if notify != nil {
			notify()
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// put commits one generic record per call.
func put(t *testing.T, st *state.Store, n int) {
	t.Helper()
	err := st.Update(context.Background(), func(tx *state.Tx) error {
		return tx.Put(fmt.Sprintf("notes/%04d.json", n), map[string]any{"format_version": 1, "n": n})
	})
	if err != nil {
		t.Fatal(err)
	}
}

// cutProxy forwards HTTP/1.1 connections to a server and, while armed,
// cuts the next push (a POST to git-receive-pack) in one of two places:
// while its pack is uploading (the server never gets the request), or
// while its answer comes back (the server has updated the branch, the
// client never learns it). After a cut the link stays down a moment, so
// that no client retry gets through.
type cutProxy struct {
	ln        net.Listener
	target    string
	answer    bool // cut the answer, not the upload
	armed     atomic.Bool
	cuts      atomic.Int32
	downUntil atomic.Int64 // unix nanoseconds
}

func newCutProxy(t *testing.T, target string, answer bool) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target, answer: answer}
	t.Cleanup(func() { ln.Close() })
	go p.serve()
	return p
}

func (p *cutProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.forward(c)
	}
}

func (p *cutProxy) forward(c net.Conn) {
	defer c.Close()
	if time.Now().UnixNano() < p.downUntil.Load() {
		return
	}
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer s.Close()
	var cutAnswer atomic.Bool
	go func() {
		buf := make([]byte, 32<<10)
		for {
			n, err := s.Read(buf)
			if n > 0 && cutAnswer.Load() {
				p.cut(c, s) // the server answered: the client gets nothing of it
				return
			}
			if n > 0 {
				c.Write(buf[:n])
			}
			if err != nil {
				c.Close()
				return
			}
		}
	}()
	br := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		push := req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/git-receive-pack")
		if push && p.armed.Load() && !p.answer {
			io.CopyN(io.Discard, req.Body, 200) // part of the pack, then the cut
			p.cut(c, s)
			return
		}
		if push && p.armed.Load() {
			cutAnswer.Store(true)
		}
		if err := req.Write(s); err != nil {
			return
		}
	}
}

func (p *cutProxy) cut(c, s net.Conn) {
	if p.armed.CompareAndSwap(true, false) {
		p.downUntil.Store(time.Now().Add(300 * time.Millisecond).UnixNano())
		p.cuts.Add(1)
	}
	c.Close()
	s.Close()
}

// url is the proxied address of a repository URL of the server.
func (p *cutProxy) url(u string) string {
	return strings.Replace(u, p.target, p.ln.Addr().String(), 1)
}
