package views

import (
	"context"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/alchemic-studio/alfred/config"
	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/forges/setup"
	"github.com/alchemic-studio/alfred/state"
)

// spyRecords is the state store, noting the records each request reads.
type spyRecords struct {
	Records
	mu   sync.Mutex
	read []string
}

func (s *spyRecords) note(what string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.read = append(s.read, what)
}

// reads returns what was read since the last call, and forgets it.
func (s *spyRecords) reads() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.read
	s.read = nil
	return r
}

func (s *spyRecords) Mailbox(k state.MailboxKey) (state.Mailbox, error) {
	s.note("mailbox " + k.ID())
	return s.Records.Mailbox(k)
}

func (s *spyRecords) Runs(id string) ([]state.Run, error) {
	s.note("runs " + id)
	return s.Records.Runs(id)
}

func (s *spyRecords) RunWithSessions(id string) (state.Run, []state.LLMSession, error) {
	s.note("run " + id)
	return s.Records.RunWithSessions(id)
}

// answer is what a visitor can tell of a response: its status, its headers
// but the date, and its body.
type answer struct {
	code   int
	header http.Header
	body   string
}

func (a answer) same(b answer) bool {
	return a.code == b.code && a.body == b.body && maps.EqualFunc(a.header, b.header, slices.Equal[[]string])
}

func fetchAnswer(t *testing.T, u string, cookie *http.Cookie, header ...string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cookie != nil {
		req.AddCookie(cookie)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	h := resp.Header.Clone()
	h.Del("Date")
	return answer{code: resp.StatusCode, header: h, body: string(b)}
}

func emptyStore(t *testing.T) *state.Store {
	t.Helper()
	st, err := state.Open(context.Background(), filepath.Join(t.TempDir(), "state.git"), state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// TestPrivateAnswersAsMissing: the pages, live stream and JSON of a private
// project's run, mailbox and project answer an anonymous visitor and a
// signed-in person without read access exactly as they answer everyone for
// a record that does not exist (the same request to a server without it):
// 404, the same headers, the same bytes. The access check comes first: a
// refused mailbox or project is never read, a refused run only as far as
// its mailbox id (its project).
func TestPrivateAnswersAsMissing(t *testing.T) {
	f := newFixture(t)
	a := newOAuthForge(t).access("http://unused", map[string]forges.Permission{"alice": forges.PermissionRead, "bob": forges.PermissionNone})
	there, gone := &spyRecords{Records: f.store}, &spyRecords{Records: emptyStore(t)}
	server := func(rs Records) string {
		d := f.deps()
		d.Records, d.Access, d.Live = rs, a, liveMap{}
		return serve(t, d).URL
	}
	withRecord, without := server(there), server(gone)
	visitors := []struct {
		name   string
		cookie *http.Cookie
		reads  bool
	}{
		{"anonymous", nil, false},
		{"signed in without access", signedCookie(t, a, "bob"), false},
		{"with read access", signedCookie(t, a, "alice"), true},
	}
	run, mb := f.fresh, f.mb.ID
	targets := []struct {
		name, path string
		refused    []string // what a refused request may read
	}{
		{"run page", "/runs/" + run, []string{"run " + run}},
		{"run JSON", "/api/runs/" + run, []string{"run " + run}},
		{"live stream", "/runs/" + run + "/live", []string{"run " + run}},
		{"mailbox page", "/mailboxes/" + mb, nil},
		{"mailbox JSON", "/api/mailboxes/" + mb, nil},
		{"project page", "/projects/forgejo/alice/demo", nil},
		{"project JSON", "/api/projects/forgejo/alice/demo", nil},
		{"malformed mailbox id", "/mailboxes/not-an-id", nil},
		{"malformed mailbox id, JSON", "/api/mailboxes/not-an-id", nil},
	}
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			missing := fetchAnswer(t, without+tg.path, nil) // the answer for what does not exist
			if missing.code != http.StatusNotFound {
				t.Fatalf("missing: %d", missing.code)
			}
			for _, v := range visitors {
				if got := fetchAnswer(t, without+tg.path, v.cookie); !got.same(missing) {
					t.Errorf("%s, missing: %d %v\n%s\nwant the anonymous answer %d %v\n%s", v.name, got.code, got.header, got.body, missing.code, missing.header, missing.body)
				}
				there.reads()
				got := fetchAnswer(t, withRecord+tg.path, v.cookie)
				read := there.reads()
				switch {
				case v.reads && strings.Contains(tg.name, "malformed"):
					if !got.same(missing) {
						t.Errorf("%s: %d, want the missing answer", v.name, got.code)
					}
				case v.reads:
					if got.code != http.StatusOK {
						t.Errorf("%s: %d, want 200", v.name, got.code)
					}
				case !got.same(missing):
					t.Errorf("%s, private: %d %v\n%s\nwant the missing answer %d %v\n%s", v.name, got.code, got.header, got.body, missing.code, missing.header, missing.body)
				case !slices.Equal(read, tg.refused):
					t.Errorf("%s, refused, read %q; want only %q", v.name, read, tg.refused)
				}
			}
		})
	}
}

// The missing answer offers the sign-in when it is configured, and is a
// plain "not found" page or JSON without it; JSON for the API.
func TestMissingAnswerOffersSignIn(t *testing.T) {
	f := newFixture(t)
	open := serve(t, f.deps()).URL
	d := f.deps()
	d.Access = newOAuthForge(t).access("http://unused", nil)
	guarded := serve(t, d).URL
	for _, tc := range []struct {
		base, path, contentType string
		has, lacks              string
	}{
		{open, "/runs/nope", "text/html; charset=utf-8", `data-test="not-found"`, "signin-link"},
		{guarded, "/runs/nope", "text/html; charset=utf-8", `data-test="signin-link" href="/login?next=%2fruns%2fnope"`, ""},
		{open, "/api/runs/nope", "application/json", `{"error":"not found"}`, "sign_in"},
		{guarded, "/api/runs/nope", "application/json", `"sign_in":"/login?next=%2Fapi%2Fruns%2Fnope"`, ""},
	} {
		got := fetchAnswer(t, tc.base+tc.path, nil)
		if got.code != 404 || got.header.Get("Content-Type") != tc.contentType || !strings.Contains(got.body, tc.has) ||
			tc.lacks != "" && strings.Contains(got.body, tc.lacks) {
			t.Errorf("%s: %d %s, want 404 %s with %q without %q:\n%s", tc.path, got.code, got.header.Get("Content-Type"), tc.contentType, tc.has, tc.lacks, got.body)
		}
	}
}

// /config is for the admins (ALFRED_ADMINS) signed in; anyone else, signed
// in or not, gets the missing answer. Without sign-in it answers requests
// from this host only, made to the listener (no proxy's forwarding header).
func TestConfigOnlyForAdmins(t *testing.T) {
	c, err := config.Load("serve", nil, func(k string) (string, bool) {
		v, ok := map[string]string{"ALFRED_FORGE": "forgejo", "ALFRED_FORGE_URL": "http://127.0.0.1:3000", "ALFRED_FORGE_TOKEN": "tok-secret-1"}[k]
		return v, ok
	}, io.Discard, setup.ConfigKinds())
	if err != nil {
		t.Fatal(err)
	}
	signIn := newOAuthForge(t).access("http://unused", nil)
	signIn.Admins = []string{"alice", "forgejo:carol"}
	noSignIn := &Access{Key: []byte("0123456789abcdef0123456789abcdef")} // a forge, no OAuth2 application
	served := map[string]string{}
	for name, a := range map[string]*Access{"sign-in": signIn, "no sign-in": noSignIn, "no access control": nil} {
		served[name] = serve(t, Deps{Version: "test", Config: c, Access: a}).URL
	}
	refusedSignIn := fetchAnswer(t, served["sign-in"]+"/config", nil)
	for _, tc := range []struct {
		name, server string
		cookie       *http.Cookie
		header       []string
		ok           bool
	}{
		{"anonymous", "sign-in", nil, nil, false},
		{"signed in, not an admin", "sign-in", signedCookie(t, signIn, "bob"), nil, false},
		{"an admin", "sign-in", signedCookie(t, signIn, "alice"), nil, true},
		{"an admin named with the forge", "sign-in", signedCookie(t, signIn, "carol"), nil, true},
		{"no sign-in, from this host", "no sign-in", nil, nil, true},
		{"no sign-in, through a proxy on this host", "no sign-in", nil, []string{"X-Forwarded-For", "203.0.113.9"}, false},
		{"no sign-in, through a proxy (Forwarded)", "no sign-in", nil, []string{"Forwarded", "for=203.0.113.9"}, false},
		{"no access control, from this host", "no access control", nil, nil, true},
		{"no access control, through a proxy", "no access control", nil, []string{"X-Real-Ip", "203.0.113.9"}, false},
	} {
		got := fetchAnswer(t, served[tc.server]+"/config", tc.cookie, tc.header...)
		switch {
		case tc.ok && (got.code != 200 || !strings.Contains(got.body, `data-test="settings"`) || strings.Contains(got.body, "tok-secret-1")):
			t.Errorf("%s: %d, want the configuration, its secrets hidden", tc.name, got.code)
		case !tc.ok && (got.code != 404 || strings.Contains(got.body, `data-test="settings"`)):
			t.Errorf("%s: %d, want 404", tc.name, got.code)
		case !tc.ok && tc.server == "sign-in" && !got.same(refusedSignIn):
			t.Errorf("%s: not the anonymous answer:\n%s", tc.name, got.body)
		}
	}
	// From another host, without sign-in: refused.
	for _, a := range []*Access{noSignIn, nil} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/config", nil) // from 192.0.2.1
		(Deps{Config: c, Access: a, Logger: slog.New(slog.DiscardHandler)}).home(rec, req)
		if rec.Code != 404 {
			t.Errorf("from 192.0.2.1, access %v: %d, want 404", a != nil, rec.Code)
		}
	}
}
