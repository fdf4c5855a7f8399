package giteatest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
	"time"
)

// Faults is a reverse proxy in front of a server that can make the next
// requests fail or hang, for the client under test to talk to. It is test
// tooling, not a fake: what it does not fail it passes to the real server.
type Faults struct {
	srv  *httptest.Server
	stop chan struct{}

	mu   sync.Mutex
	fail []int
	hang int
}

// hangLimit bounds a hanging request when its client never gives up.
const hangLimit = time.Minute

// NewFaults starts a Faults proxy in front of the instance; it is closed when
// the test ends.
func (in *Instance) NewFaults(t testing.TB) *Faults {
	t.Helper()
	return newFaults(t, in.URL)
}

func newFaults(t testing.TB, target string) *Faults {
	t.Helper()
	u, err := url.Parse(target)
	check(t, err, "parse %s", target)
	f := &Faults{stop: make(chan struct{})}
	proxy := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(u) }}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f.intercept(w, r) {
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		close(f.stop)
		f.srv.Close()
	})
	return f
}

// URL is the proxy's base URL, to give the client under test.
func (f *Faults) URL() string { return f.srv.URL }

// FailNext makes the next n requests answer status without reaching the
// server, as Gitea answers errors: a JSON message (and Retry-After: 1 with 429).
func (f *Faults) FailNext(status, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for range n {
		f.fail = append(f.fail, status)
	}
}

// Hang makes the next n requests wait, without reaching the server, until
// their client gives up (or a minute passes, or the test ends).
func (f *Faults) Hang(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hang += n
}

// intercept answers r itself when a fault is due and tells whether it did.
func (f *Faults) intercept(w http.ResponseWriter, r *http.Request) bool {
	f.mu.Lock()
	hang := f.hang > 0
	status := 0
	switch {
	case hang:
		f.hang--
	case len(f.fail) > 0:
		status, f.fail = f.fail[0], f.fail[1:]
	}
	f.mu.Unlock()
	switch {
	case hang:
		select {
		case <-r.Context().Done():
		case <-f.stop:
		case <-time.After(hangLimit):
		}
		return true
	case status != 0:
		if status == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "1")
		}
		w.Header().Set("Content-Type", "application/json;charset=utf-8")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(map[string]string{"message": http.StatusText(status), "url": f.srv.URL + "/api/swagger"})
		return true
	}
	return false
}
