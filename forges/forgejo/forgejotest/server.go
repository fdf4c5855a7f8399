// Package forgejotest is a stateful fake of the Forgejo 7 REST API over HTTP
// (httptest), for the contract suite of forges/forgejo and for end-to-end tests
// that need "a forge that speaks the Forgejo API and sends signed webhooks".
//
// It answers like the real Forgejo 7.0.16 it was recorded from (see
// recordings/README.md and the surprises in the fixtures' README): JSON built
// from recorded objects, PATCH issue answering 201, labels added by id only
// (names get 422), X-Total-Count without Link on labels and reviews, Link and
// X-Total-Count on pull requests, /issues/{n}/comments ignoring paging, 500 for
// comments of a missing issue, the combined status of a commit. It serves one
// repository, Owner/Repo, and accepts only the bot's token.
package forgejotest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/alchemic-studio/alfred/forges/internal/fakeforge"
)

// Defaults of a new Server.
const (
	Owner         = "alice"
	Repo          = "demo"
	Bot           = "bot"
	BotToken      = "0123456789abcdef0123456789abcdef01234567"
	DefaultBranch = "main"
	Version       = "7.0.16+gitea-1.21.11"
	mainSHA       = "fb735326b946bdab821a8ac18279abf8bd2ffe7f"
	maxLimit      = 50 // MAX_RESPONSE_ITEMS
	defaultLimit  = 30 // DEFAULT_PAGING_NUM
)

// Server is the fake. Its exported methods change or read its state directly.
type Server struct {
	srv *httptest.Server

	mu       sync.Mutex
	users    map[string]*user
	labels   []*label
	issues   map[int64]*issue
	comments []*comment
	branches map[string]string
	statuses map[string][]*status
	reviews  map[int64][]*review
	ids      struct{ user, label, issue, pull, comment, status, review int64 }
	clock    time.Time
	fail     []int
	hang     int
	hook     *hookTarget
	hq       fakeforge.Sender[Delivery]
	git      *fakeforge.GitHost
	maxItems int
	requests int
	// checkingReads is how many reads of a pull request answer mergeable
	// false after its head moved, as Forgejo does while it re-checks the
	// pull request in the background.
	checkingReads int
	inspected     inspectState // what alfred doctor reads: the token's scopes
}

type user struct {
	id         int64
	login      string
	permission string // owner, admin, write, read or none
	admin      bool
}

type label struct {
	id                 int64
	name, color, descr string
	exclusive          bool
}

type issue struct {
	id, number   int64
	title, body  string
	state        string
	author       string
	labels       []int64
	assignees    []string
	created, upd time.Time
	closed       *time.Time
	pull         *pull
}

type pull struct {
	id                  int64
	head, base, headSHA string
	mergeable, merged   bool
	mergedAt            *time.Time
	checking            int // reads left that answer mergeable false
}

type comment struct {
	id, issue    int64
	author, body string
	created, upd time.Time
}

type status struct {
	id                        int64
	state, context, desc, url string
	created                   time.Time
}

type review struct {
	id                  int64
	author, state, body string
	submitted           time.Time
	comments            []*reviewComment
}

type reviewComment struct {
	id         int64
	body, path string
	line       int
	created    time.Time
}

// NewServer starts a fake Forgejo with the repository Owner/Repo, its default
// branch, the owner and the bot (a site admin, as on the recorded server). It
// is closed when t ends.
func NewServer(t interface{ Cleanup(func()) }) *Server {
	s := &Server{
		users:    map[string]*user{},
		issues:   map[int64]*issue{},
		branches: map[string]string{DefaultBranch: mainSHA},
		statuses: map[string][]*status{},
		reviews:  map[int64][]*review{},
		clock:    time.Date(2026, 11, 30, 4, 54, 0, 0, time.UTC),
		maxItems: maxLimit,
		// Forgejo 7.0.16 and Gitea 1.26 answer false after a push or a
		// new pull request until their background check has run.
		checkingReads: 3,
	}
	s.addUser(Bot, "owner", true)
	s.addUser(Owner, "owner", false)
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// moved records that an open pull request's head moved to sha: Forgejo
// checks it again, and says mergeable false until it is done.
func (s *Server) moved(is *issue, sha string) {
	is.pull.headSHA = sha
	is.pull.checking = s.checkingReads
	is.upd = s.now()
}

// URL is the server's base URL (the API is under /api/v1).
func (s *Server) URL() string { return s.srv.URL }

// CloneURL is the repository's HTTPS clone URL as the API reports it.
func (s *Server) CloneURL() string { return s.srv.URL + "/" + Owner + "/" + Repo + ".git" }

// Close waits for queued webhooks and stops the server.
func (s *Server) Close() {
	s.Flush()
	s.srv.Close()
	if s.git != nil {
		s.git.Remove()
	}
}

// Requests counts the API requests served so far.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

func (s *Server) now() time.Time {
	s.clock = s.clock.Add(time.Second)
	return s.clock
}

func (s *Server) addUser(login, permission string, admin bool) *user {
	if u, ok := s.users[login]; ok {
		return u
	}
	s.ids.user++
	u := &user{id: s.ids.user, login: login, permission: permission, admin: admin}
	s.users[login] = u
	return u
}

func (s *Server) userFor(login string) *user { return s.addUser(login, "read", false) }

func (s *Server) labelByName(name string) *label {
	for _, l := range s.labels {
		if l.name == name {
			return l
		}
	}
	return nil
}

func (s *Server) addLabel(name, color, descr string) *label {
	s.ids.label++
	l := &label{id: s.ids.label, name: name, color: strings.ToLower(strings.TrimPrefix(color, "#")), descr: descr}
	s.labels = append(s.labels, l)
	return l
}

func (s *Server) nextNumber() int64 {
	var n int64
	for k := range s.issues {
		n = max(n, k)
	}
	return n + 1
}

// --- transport-level behaviour ---

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if g := s.git; g != nil && g.Serves(r) {
		s.mu.Unlock()
		g.ServeHTTP(w, r)
		return
	}
	s.requests++
	if s.hang > 0 {
		s.hang--
		s.mu.Unlock()
		select {
		case <-r.Context().Done():
		case <-time.After(30 * time.Second):
		}
		return
	}
	if len(s.fail) > 0 {
		code := s.fail[0]
		s.fail = s.fail[1:]
		s.mu.Unlock()
		if code == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "1")
		}
		writeJSON(w, code, map[string]any{"message": http.StatusText(code), "url": s.srv.URL + "/api/swagger"})
		return
	}
	defer s.mu.Unlock()
	auth := r.Header.Get("Authorization")
	switch {
	case auth == "":
		s.errorJSON(w, http.StatusUnauthorized, "token is required")
		return
	case auth != "token "+BotToken && auth != "Bearer "+BotToken:
		s.errorJSON(w, http.StatusUnauthorized, "user does not exist [uid: 0, name: ]")
		return
	}
	s.route(w, r)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json;charset=utf-8")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

func (s *Server) errorJSON(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]any{"message": msg, "url": s.srv.URL + "/api/swagger"})
}

func (s *Server) notFound(w http.ResponseWriter, errs []string) {
	var e any
	if errs != nil {
		e = errs
	}
	writeJSON(w, http.StatusNotFound, map[string]any{"errors": e, "message": "The target couldn't be found.", "url": s.srv.URL + "/api/swagger"})
}

// SetMaxResponseItems sets the server's MAX_RESPONSE_ITEMS (default 50), the
// most items one page holds whatever the client asks.
func (s *Server) SetMaxResponseItems(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.maxItems = n
}

// pageParams reads ?page=&limit= as Forgejo does.
func (s *Server) pageParams(r *http.Request) (p, l int) {
	p, _ = strconv.Atoi(r.URL.Query().Get("page"))
	l, _ = strconv.Atoi(r.URL.Query().Get("limit"))
	if p < 1 {
		p = 1
	}
	if l <= 0 {
		l = defaultLimit
	}
	return p, min(l, s.maxItems)
}

// page slices items for ?page=&limit= the way Forgejo does.
func page[T any](s *Server, r *http.Request, items []T) []T {
	p, l := s.pageParams(r)
	lo := (p - 1) * l
	if lo >= len(items) {
		return []T{}
	}
	return items[lo:min(lo+l, len(items))]
}

// setLink sets a Link header with next and last, as Forgejo does for pull
// requests, branches and commit statuses.
func (s *Server) setLink(w http.ResponseWriter, r *http.Request, total int) {
	p, l := s.pageParams(r)
	last := (total + l - 1) / l
	link := func(n int, rel string) string {
		q := r.URL.Query()
		q.Set("page", strconv.Itoa(n))
		q.Set("limit", strconv.Itoa(l))
		return fmt.Sprintf("<%s%s?%s>; rel=%q", s.srv.URL, r.URL.EscapedPath(), q.Encode(), rel)
	}
	var parts []string
	if p < last {
		parts = append(parts, link(p+1, "next"), link(last, "last"))
	}
	if p > 1 {
		parts = append(parts, link(1, "first"), link(p-1, "prev"))
	}
	if len(parts) > 0 {
		w.Header().Set("Link", strings.Join(parts, ","))
	}
}

func setTotal(w http.ResponseWriter, n int) { w.Header().Set("X-Total-Count", strconv.Itoa(n)) }

var hex6 = regexp.MustCompile(`^[0-9a-fA-F]{6}$`)

func sortedLabels(ls []*label) []*label {
	out := slices.Clone(ls)
	sort.SliceStable(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}
