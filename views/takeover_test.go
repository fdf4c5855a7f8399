package views

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/state"
)

// sessionArchive is a Takeover for the pages' tests: the claude-code
// session of every issue, as a fixed archive.
type sessionArchive struct{ written int }

const archiveBytes = "\x1f\x8b archive of the session"

func (s *sessionArchive) Offer(mb state.Mailbox, adapterID string) (TakeoverOffer, bool) {
	if adapterID != "claude-code" {
		return TakeoverOffer{}, false
	}
	return TakeoverOffer{File: "alfred-session-7.tar.gz", Command: "git fetch origin " + mb.BranchName + " && claude --resume 5f2c-native-1"}, true
}

func (s *sessionArchive) Write(_ context.Context, w io.Writer, _ state.Mailbox, _ string) error {
	s.written++
	_, err := io.WriteString(w, archiveBytes)
	return err
}

// TestTakeoverWriteAccessOnly: a person with write access sees the offer
// on the run page and downloads the archive; one who may only read, one
// without access and an anonymous visitor see no offer and get the answer
// of a run that does not exist from the download's URL, and nothing is
// archived for them. A run whose CLI keeps no session offers nothing.
func TestTakeoverWriteAccessOnly(t *testing.T) {
	f := newFixture(t)
	s := agentsSite{provider: newOAuthForge(t)}
	d := f.deps()
	archive := &sessionArchive{}
	d.Takeover = archive
	var h http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	t.Cleanup(srv.Close)
	s.url = srv.URL
	d.Access = s.provider.access(srv.URL, map[string]forges.Permission{"alice": forges.PermissionWrite, "bob": forges.PermissionRead})
	h = serve(t, d).Config.Handler
	for _, c := range []struct {
		who      string
		offered  bool
		download int
	}{
		{"alice", true, http.StatusOK},
		{"bob", false, http.StatusNotFound},
		{"carol", false, http.StatusNotFound},
		{"", false, http.StatusNotFound},
	} {
		t.Run("as "+c.who, func(t *testing.T) {
			client := s.as(t, c.who)
			before := archive.written
			_, page := fetch(t, client, http.MethodGet, srv.URL+"/runs/"+f.fresh, nil)
			if got := strings.Contains(page, `data-test="takeover"`); got != c.offered {
				t.Errorf("offer shown: %v, want %v", got, c.offered)
			}
			if c.offered && (!strings.Contains(page, "/runs/"+f.fresh+"/session.tar.gz") || !strings.Contains(page, "claude --resume 5f2c-native-1")) {
				t.Errorf("the offer lacks the download or the command:\n%s", page)
			}
			code, body := fetch(t, client, http.MethodGet, srv.URL+"/runs/"+f.fresh+"/session.tar.gz", nil)
			if code != c.download {
				t.Fatalf("download: %d, want %d", code, c.download)
			}
			if got := archive.written - before; (c.download == http.StatusOK) != (got == 1) || c.download == http.StatusOK && body != archiveBytes {
				t.Errorf("archived %d times, body %q", got, body)
			}
			if _, js := fetch(t, client, http.MethodGet, srv.URL+"/api/runs/"+f.fresh, nil); strings.Contains(js, "session.tar.gz") {
				t.Errorf("the JSON tells the download: %s", js)
			}
		})
	}
	t.Run("no session", func(t *testing.T) {
		client := s.as(t, "alice")
		if _, page := fetch(t, client, http.MethodGet, srv.URL+"/runs/"+f.apiRun, nil); strings.Contains(page, `data-test="takeover"`) {
			t.Error("a run of the API adapter offers a session")
		}
		if code, _ := fetch(t, client, http.MethodGet, srv.URL+"/runs/"+f.apiRun+"/session.tar.gz", nil); code != http.StatusNotFound {
			t.Errorf("download of a run without a session: %d", code)
		}
	})
}

// TestTakeoverWithoutSignIn: without sign-in the offer is made to requests
// from this host only, never to one a proxy forwarded.
func TestTakeoverWithoutSignIn(t *testing.T) {
	f := newFixture(t)
	d := f.deps()
	d.Takeover = &sessionArchive{}
	srv := serve(t, d)
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	for _, forwarded := range []bool{false, true} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/runs/"+f.fresh+"/session.tar.gz", nil)
		if forwarded {
			req.Header.Set("X-Forwarded-For", "203.0.113.9")
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if want := map[bool]int{false: http.StatusOK, true: http.StatusNotFound}[forwarded]; resp.StatusCode != want {
			t.Errorf("forwarded %v: %d, want %d", forwarded, resp.StatusCode, want)
		}
	}
}
