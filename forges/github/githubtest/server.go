// Package githubtest is a stateful fake of the part of GitHub's REST API (v3,
// API version 2022-11-28) that forges/github uses, on an httptest server: one
// repository, its issues, pull requests, comments, labels, branches, reviews,
// commit statuses and check runs, seeded directly and changed through the API.
// With EnableApp it is also a GitHub App's side of GitHub (app.go): the App
// endpoints, JWTs checked with the App's public key, installation tokens
// that expire, and an installation that can be revoked. Tests of
// forges/github and of anything driving a GitHub forge run against it.
package githubtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/forges/internal/fakeforge"
)

// Server is a stateful httptest stand-in for GitHub's REST API (v3, API
// version 2022-11-28), for one repository, served Enterprise style under
// /api/v3/. It answers with GitHub's status codes, error bodies ({"message",
// "documentation_url", "status"}), JSON shapes and Link pagination headers,
// as in the REST documentation. Pages are capped at MaxPerPage items (GitHub
// allows 100) so that lists page in tests.
type Server struct {
	srv   *httptest.Server
	owner string
	repo  string
	bot   string
	token string

	mu        sync.Mutex
	now       time.Time // advances one second per write, for ordered timestamps
	nextID    int64
	users     map[string]forges.Permission
	branches  map[string]string // name -> sha
	issues    map[int64]*fakeIssue
	comments  []*fakeComment
	labels    []*forges.Label
	reviews   []*fakeReview
	rcomments []*fakeReviewComment
	statuses  map[string][]forges.Check // sha -> commit statuses
	runs      map[string][]forges.Check // sha -> check runs
	failNext  []int                     // statuses to answer next
	hang      int
	requests  int
	app       *fakeApp // nil until EnableApp
	caller    string   // who the request being answered authenticated as
}

// fakeIssue is an issue or, when pr is set, a pull request (GitHub numbers both alike).
type fakeIssue struct {
	number    int64
	title     string
	body      string
	state     string
	author    string
	labels    []string
	assignees []string
	updated   time.Time
	pr        *fakePull
}

type fakePull struct {
	head, base, sha string
	merged          bool
	mergeable       *bool
}

type fakeComment struct {
	id               int64
	issue            int64
	author, body     string
	created, updated time.Time
}

type fakeReview struct {
	id        int64
	pr        int64
	author    string
	body      string
	state     string
	submitted time.Time
}

type fakeReviewComment struct {
	id, review, pr int64
	author, body   string
	path           string
	line           int
	created        time.Time
}

// MaxPerPage is the most items a page holds, whatever per_page asks.
const MaxPerPage = 25

// NewServer starts a fake GitHub, closed when t's test ends. Its repository
// is acme/demo with the branch main; the bot (alfred-bot, with write access,
// authenticated by Token) and the owner acme (admin) exist.
func NewServer(t interface{ Cleanup(func()) }) *Server {
	f := &Server{
		owner:    "acme",
		repo:     "demo",
		bot:      "alfred-bot",
		token:    "ghp_fake-token-for-tests",
		now:      time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC),
		nextID:   1000,
		users:    map[string]forges.Permission{"acme": forges.PermissionAdmin},
		branches: map[string]string{"main": strings.Repeat("0", 40)},
		issues:   map[int64]*fakeIssue{},
		statuses: map[string][]forges.Check{},
		runs:     map[string][]forges.Check{},
	}
	f.users[f.bot] = forges.PermissionWrite
	f.srv = httptest.NewServer(f)
	t.Cleanup(f.srv.Close)
	return f
}

// baseURL is the API root, Enterprise style.
func (f *Server) baseURL() string { return f.srv.URL + "/api/v3/" }

func (f *Server) cloneURL() string {
	return f.srv.URL + "/" + f.owner + "/" + f.repo + ".git"
}

func (f *Server) id() int64 { f.nextID++; return f.nextID }

func (f *Server) tick() time.Time { f.now = f.now.Add(time.Second); return f.now }

// --- HTTP ---

type reply struct {
	status int
	header http.Header
	body   any
}

// ServeHTTP answers one API request; the fake's own server calls it, and a
// test may put another handler in front of it.
func (f *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.requests++
	if f.hang > 0 {
		f.hang--
		f.mu.Unlock()
		<-r.Context().Done()
		return
	}
	if len(f.failNext) > 0 {
		status := f.failNext[0]
		f.failNext = f.failNext[1:]
		f.mu.Unlock()
		f.fail(w, status)
		return
	}
	rep := f.route(r)
	f.mu.Unlock()

	for k, v := range rep.header {
		w.Header()[k] = v
	}
	w.Header().Set("X-GitHub-Api-Version-Selected", "2022-11-28")
	w.Header().Set("X-RateLimit-Limit", "5000")
	w.Header().Set("X-RateLimit-Remaining", "4999")
	w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10))
	if rep.status == http.StatusNoContent {
		w.WriteHeader(rep.status)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(rep.status)
	_ = json.NewEncoder(w).Encode(rep.body)
}

// fail answers status with the headers GitHub sends with it.
func (f *Server) fail(w http.ResponseWriter, status int) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	msg := http.StatusText(status)
	switch status {
	case http.StatusTooManyRequests: // secondary rate limit
		w.Header().Set("Retry-After", "1")
		msg = "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."
	case http.StatusForbidden: // a permission refusal (rate limits: forges/github TestRateLimitAnswers)
		msg = "Resource not accessible by personal access token"
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"message":           msg,
		"documentation_url": "https://docs.github.com/rest",
		"status":            strconv.Itoa(status),
	})
}

func errReply(status int, msg string) reply {
	return reply{status: status, body: map[string]any{
		"message":           msg,
		"documentation_url": "https://docs.github.com/rest",
		"status":            strconv.Itoa(status),
	}}
}

var notFound = errReply(http.StatusNotFound, "Not Found")

func ok(body any) reply      { return reply{status: http.StatusOK, body: body} }
func created(body any) reply { return reply{status: http.StatusCreated, body: body} }

// admit splits the path under /api/v3/ into unescaped segments, answers the
// App endpoints (done), and otherwise authenticates the caller (f.caller).
func (f *Server) admit(r *http.Request) (seg []string, rep reply, done bool) {
	raw, found := strings.CutPrefix(r.URL.EscapedPath(), "/api/v3/")
	if !found {
		return nil, notFound, true
	}
	for _, s := range strings.Split(strings.TrimSuffix(raw, "/"), "/") {
		u, err := url.PathUnescape(s)
		if err != nil {
			return nil, errReply(http.StatusBadRequest, "bad path"), true
		}
		seg = append(seg, u)
	}
	if rep, isApp := f.appRoute(r, seg); isApp {
		return nil, rep, true
	}
	var blind bool
	if f.caller, blind = f.authenticate(r, seg); blind {
		return nil, notFound, true // as GitHub: a token narrowed to other repositories does not see this one
	}
	if f.caller == "" {
		return nil, errReply(http.StatusUnauthorized, "Bad credentials"), true
	}
	return seg, reply{}, false
}

// authenticate is the login the request's token belongs to: the bot for
// the personal token, the App's bot user for a live installation token
// ("Bearer" or "token" scheme alike), "" for anything else; blind when the
// installation token was narrowed to repositories other than the request's
// (seg). mu held.
func (f *Server) authenticate(r *http.Request, seg []string) (login string, blind bool) {
	h := r.Header.Get("Authorization")
	token, found := strings.CutPrefix(h, "Bearer ")
	if !found {
		token, _ = strings.CutPrefix(h, "token ")
	}
	if token == "" {
		return "", false
	}
	if token == f.token {
		return f.bot, false
	}
	if live, sees := f.appToken(token, seg); live {
		return f.appBot(), !sees
	}
	return "", false
}

// page slices items by ?page and ?per_page (default 30, capped at MaxPerPage)
// and sets GitHub's Link header.
func (f *Server) page(r *http.Request, items []any) reply {
	body, hdr := f.paginate(r, items)
	if body == nil {
		body = []any{}
	}
	return reply{status: http.StatusOK, header: hdr, body: body}
}

func (f *Server) paginate(r *http.Request, items []any) ([]any, http.Header) {
	q := r.URL.Query()
	per, _ := strconv.Atoi(q.Get("per_page"))
	if per <= 0 {
		per = 30
	}
	per = min(per, MaxPerPage)
	pg, _ := strconv.Atoi(q.Get("page"))
	pg = max(pg, 1)
	last := max((len(items)+per-1)/per, 1)
	lo, hi := min((pg-1)*per, len(items)), min(pg*per, len(items))
	hdr := http.Header{}
	link := func(n int, rel string) string {
		u := *r.URL
		v := u.Query()
		v.Set("page", strconv.Itoa(n))
		v.Set("per_page", strconv.Itoa(per))
		u.RawQuery = v.Encode()
		return fmt.Sprintf("<%s%s>; rel=%q", f.srv.URL, u.RequestURI(), rel)
	}
	var links []string
	if pg > 1 {
		links = append(links, link(pg-1, "prev"), link(1, "first"))
	}
	if pg < last {
		links = append(links, link(pg+1, "next"), link(last, "last"))
	}
	if len(links) > 0 {
		hdr.Set("Link", strings.Join(links, ", "))
	}
	return items[lo:hi], hdr
}

func decodeBody(r *http.Request, v any) error {
	return json.NewDecoder(r.Body).Decode(v)
}

func invalid(msg string) reply {
	return errReply(http.StatusUnprocessableEntity, msg)
}

func (f *Server) num(s string) (int64, bool) {
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil && n > 0
}

func (f *Server) withIssue(s string, fn func(*fakeIssue) reply) reply {
	n, good := f.num(s)
	if !good || f.issues[n] == nil {
		return notFound
	}
	return fn(f.issues[n])
}

func (f *Server) withPull(s string, fn func(*fakeIssue) reply) reply {
	return f.withIssue(s, func(is *fakeIssue) reply {
		if is.pr == nil {
			return notFound
		}
		return fn(is)
	})
}

// --- handlers ---

func (f *Server) permission(_ *http.Request, v fakeforge.PathValues) reply {
	login := v["username"]
	p, known := f.users[login]
	if !known {
		return notFound
	}
	perm, role := "none", ""
	switch p {
	case forges.PermissionAdmin:
		perm, role = "admin", "admin"
	case forges.PermissionWrite:
		perm, role = "write", "write"
	case forges.PermissionRead:
		perm, role = "read", "read"
	}
	return ok(map[string]any{"permission": perm, "role_name": role, "user": f.userJSON(login)})
}

func (f *Server) branch(_ *http.Request, v fakeforge.PathValues) reply {
	name := v["branch"]
	sha, found := f.branches[name]
	if !found {
		return errReply(http.StatusNotFound, "Branch not found")
	}
	return ok(map[string]any{
		"name":      name,
		"commit":    map[string]any{"sha": sha, "url": f.srv.URL + "/api/v3/repos/" + f.owner + "/" + f.repo + "/commits/" + sha},
		"protected": name == "main",
		"_links":    map[string]any{"html": f.srv.URL + "/" + f.owner + "/" + f.repo + "/tree/" + name},
	})
}

func (f *Server) findLabel(name string) *forges.Label {
	for _, l := range f.labels {
		if strings.EqualFold(l.Name, name) {
			return l
		}
	}
	return nil
}

func (f *Server) createLabel(r *http.Request, _ fakeforge.PathValues) reply {
	var in struct{ Name, Color, Description string }
	if err := decodeBody(r, &in); err != nil || in.Name == "" {
		return invalid("Validation Failed")
	}
	if f.findLabel(in.Name) != nil {
		return reply{status: http.StatusUnprocessableEntity, body: map[string]any{
			"message":           "Validation Failed",
			"errors":            []any{map[string]any{"resource": "Label", "code": "already_exists", "field": "name"}},
			"documentation_url": "https://docs.github.com/rest/issues/labels#create-a-label",
			"status":            "422",
		}}
	}
	if in.Color == "" {
		in.Color = "ededed"
	}
	l := &forges.Label{Name: in.Name, Color: strings.ToLower(in.Color), Description: in.Description}
	f.labels = append(f.labels, l)
	return created(f.labelJSON(l))
}

func (f *Server) updateLabel(r *http.Request, v fakeforge.PathValues) reply {
	l := f.findLabel(v["name"])
	if l == nil {
		return notFound
	}
	var in struct {
		NewName     *string `json:"new_name"`
		Color       *string `json:"color"`
		Description *string `json:"description"`
	}
	if err := decodeBody(r, &in); err != nil {
		return invalid("Problems parsing JSON")
	}
	if in.NewName != nil {
		l.Name = *in.NewName
	}
	if in.Color != nil {
		l.Color = strings.ToLower(*in.Color)
	}
	if in.Description != nil {
		l.Description = *in.Description
	}
	return ok(f.labelJSON(l))
}

func (f *Server) editIssue(r *http.Request, is *fakeIssue) reply {
	var in struct {
		Title *string `json:"title"`
		Body  *string `json:"body"`
		State *string `json:"state"`
	}
	if err := decodeBody(r, &in); err != nil {
		return invalid("Problems parsing JSON")
	}
	if in.Title != nil {
		is.title = *in.Title
	}
	if in.Body != nil {
		is.body = *in.Body
	}
	if in.State != nil {
		is.state = *in.State
	}
	is.updated = f.tick()
	return ok(f.issueJSON(is))
}

func (f *Server) listComments(r *http.Request, is *fakeIssue) reply {
	var items []any
	for _, c := range f.comments {
		if c.issue == is.number {
			items = append(items, f.commentJSON(c))
		}
	}
	return f.page(r, items)
}

func (f *Server) addComment(issue int64, author, body string) *fakeComment {
	now := f.tick()
	c := &fakeComment{id: f.id(), issue: issue, author: author, body: body, created: now, updated: now}
	f.comments = append(f.comments, c)
	return c
}

func (f *Server) createComment(r *http.Request, is *fakeIssue) reply {
	var in struct {
		Body *string `json:"body"`
	}
	if err := decodeBody(r, &in); err != nil || in.Body == nil {
		return invalid("Invalid request.\n\n\"body\" wasn't supplied.")
	}
	return created(f.commentJSON(f.addComment(is.number, f.caller, *in.Body)))
}

func (f *Server) editComment(r *http.Request, v fakeforge.PathValues) reply {
	id, _ := f.num(v["comment_id"])
	for _, c := range f.comments {
		if c.id != id {
			continue
		}
		var in struct {
			Body *string `json:"body"`
		}
		if err := decodeBody(r, &in); err != nil || in.Body == nil {
			return invalid("Invalid request.\n\n\"body\" wasn't supplied.")
		}
		c.body, c.updated = *in.Body, f.tick()
		return ok(f.commentJSON(c))
	}
	return notFound
}

// addLabels takes a JSON array of names or {"labels": [...]}, as GitHub does,
// and creates labels that do not exist yet.
func (f *Server) addLabels(r *http.Request, is *fakeIssue) reply {
	var raw json.RawMessage
	if err := decodeBody(r, &raw); err != nil {
		return invalid("Problems parsing JSON")
	}
	var names []string
	if err := json.Unmarshal(raw, &names); err != nil {
		var obj struct{ Labels []string }
		if err := json.Unmarshal(raw, &obj); err != nil {
			return invalid("Invalid request.")
		}
		names = obj.Labels
	}
	for _, n := range names {
		if f.findLabel(n) == nil {
			f.labels = append(f.labels, &forges.Label{Name: n, Color: "ededed"})
		}
		if !slices.Contains(is.labels, n) {
			is.labels = append(is.labels, n)
		}
	}
	is.updated = f.tick()
	return ok(f.issueLabelsJSON(is))
}

func (f *Server) removeLabel(is *fakeIssue, name string) reply {
	i := slices.Index(is.labels, name)
	if i < 0 {
		return reply{status: http.StatusNotFound, body: map[string]any{
			"message":           "Label does not exist",
			"documentation_url": "https://docs.github.com/rest/issues/labels#remove-a-label-from-an-issue",
			"status":            "404",
		}}
	}
	is.labels = slices.Delete(is.labels, i, i+1)
	is.updated = f.tick()
	return ok(f.issueLabelsJSON(is))
}

func (f *Server) sortedIssues() []*fakeIssue {
	var out []*fakeIssue
	for _, is := range f.issues {
		out = append(out, is)
	}
	slices.SortFunc(out, func(a, b *fakeIssue) int { return int(a.number - b.number) })
	return out
}

// listPulls filters on state (default open), head ("owner:branch") and base.
func (f *Server) listPulls(r *http.Request, _ fakeforge.PathValues) reply {
	q := r.URL.Query()
	state := q.Get("state")
	if state == "" {
		state = "open"
	}
	var items []any
	for _, is := range f.sortedIssues() {
		if is.pr == nil || (state != "all" && is.state != state) {
			continue
		}
		if h := q.Get("head"); h != "" && h != f.owner+":"+is.pr.head {
			continue
		}
		if b := q.Get("base"); b != "" && b != is.pr.base {
			continue
		}
		items = append(items, f.pullJSON(is))
	}
	return f.page(r, items)
}

func (f *Server) nextNumber() int64 {
	var n int64
	for k := range f.issues {
		n = max(n, k)
	}
	return n + 1
}

func (f *Server) createPull(r *http.Request, _ fakeforge.PathValues) reply {
	var in struct{ Title, Body, Head, Base string }
	if err := decodeBody(r, &in); err != nil {
		return invalid("Problems parsing JSON")
	}
	sha, found := f.branches[in.Head]
	if !found || f.branches[in.Base] == "" {
		return reply{status: http.StatusUnprocessableEntity, body: map[string]any{
			"message":           "Validation Failed",
			"errors":            []any{map[string]any{"resource": "PullRequest", "field": "head", "code": "invalid"}},
			"documentation_url": "https://docs.github.com/rest/pulls/pulls#create-a-pull-request",
			"status":            "422",
		}}
	}
	for _, is := range f.issues {
		if is.pr != nil && is.state == "open" && is.pr.head == in.Head && is.pr.base == in.Base {
			return invalid(fmt.Sprintf("Validation Failed: A pull request already exists for %s:%s.", f.owner, in.Head))
		}
	}
	is := &fakeIssue{number: f.nextNumber(), title: in.Title, body: in.Body, state: "open", author: f.caller,
		updated: f.tick(), pr: &fakePull{head: in.Head, base: in.Base, sha: sha}}
	f.issues[is.number] = is
	return created(f.pullJSON(is))
}

func (f *Server) listReviewComments(r *http.Request, is *fakeIssue) reply {
	since, _ := time.Parse(time.RFC3339, r.URL.Query().Get("since"))
	var items []any
	for _, c := range f.rcomments {
		if c.pr == is.number && !c.created.Before(since) { // never edited: updated_at is created_at
			items = append(items, f.reviewCommentJSON(c))
		}
	}
	return f.page(r, items)
}

func (f *Server) listReviews(r *http.Request, is *fakeIssue) reply {
	var items []any
	for _, rv := range f.reviews {
		if rv.pr == is.number {
			items = append(items, f.reviewJSON(rv))
		}
	}
	return f.page(r, items)
}

func (f *Server) combinedStatus(r *http.Request, v fakeforge.PathValues) reply {
	sha := v["ref"]
	var items []any
	for i, c := range f.statuses[sha] {
		items = append(items, f.statusJSON(int64(i+1), c))
	}
	statuses, hdr := f.paginate(r, items)
	state := "pending" // GitHub says pending when there is no status at all
	if n := len(f.statuses[sha]); n > 0 {
		switch forges.Combine(f.statuses[sha]) {
		case forges.CIFailure:
			state = "failure"
		case forges.CISuccess:
			state = "success"
		}
	}
	if statuses == nil {
		statuses = []any{}
	}
	return reply{status: http.StatusOK, header: hdr, body: map[string]any{
		"state":       state,
		"statuses":    statuses,
		"sha":         sha,
		"total_count": len(items),
		"repository":  map[string]any{"id": 1296269, "name": f.repo, "full_name": f.owner + "/" + f.repo},
		"commit_url":  f.baseURL() + "repos/" + f.owner + "/" + f.repo + "/commits/" + sha,
		"url":         f.baseURL() + "repos/" + f.owner + "/" + f.repo + "/commits/" + sha + "/status",
	}}
}

func (f *Server) checkRuns(r *http.Request, v fakeforge.PathValues) reply {
	sha := v["ref"]
	var items []any
	for i, c := range f.runs[sha] {
		items = append(items, f.checkRunJSON(int64(i+1), sha, c))
	}
	runs, hdr := f.paginate(r, items)
	if runs == nil {
		runs = []any{}
	}
	return reply{status: http.StatusOK, header: hdr, body: map[string]any{"total_count": len(items), "check_runs": runs}}
}

// --- JSON shapes (docs.github.com/rest, 2022-11-28) ---

func (f *Server) userJSON(login string) map[string]any {
	var id int64
	for _, c := range login {
		id = id*31 + int64(c)
	}
	return map[string]any{
		"login": login, "id": id%1_000_000 + 1, "node_id": "MDQ6VXNlcjE=", "type": userType(login), "site_admin": false,
		"html_url": f.srv.URL + "/" + login, "url": f.baseURL() + "users/" + login,
		"avatar_url": "https://avatars.githubusercontent.com/u/1?v=4",
	}
}

// userType is "Bot" for an App's bot user, as GitHub says.
func userType(login string) string {
	if strings.HasSuffix(login, "[bot]") {
		return "Bot"
	}
	return "User"
}

func (f *Server) repoJSON() map[string]any {
	return map[string]any{
		"id": 1296269, "node_id": "MDEwOlJlcG9zaXRvcnkxMjk2MjY5", "name": f.repo, "full_name": f.owner + "/" + f.repo,
		"owner": f.userJSON(f.owner), "private": true, "html_url": f.srv.URL + "/" + f.owner + "/" + f.repo,
		"clone_url": f.cloneURL(), "git_url": "git:" + strings.TrimPrefix(f.cloneURL(), "http:"),
		"ssh_url": "git@127.0.0.1:" + f.owner + "/" + f.repo + ".git", "default_branch": "main",
		"url": f.baseURL() + "repos/" + f.owner + "/" + f.repo, "visibility": "private",
		"permissions": map[string]any{"admin": false, "maintain": false, "push": true, "triage": true, "pull": true},
	}
}

func (f *Server) labelJSON(l *forges.Label) map[string]any {
	return map[string]any{
		"id": 208045946, "node_id": "MDU6TGFiZWwyMDgwNDU5NDY=", "name": l.Name, "color": l.Color,
		"description": l.Description, "default": false,
		"url": f.baseURL() + "repos/" + f.owner + "/" + f.repo + "/labels/" + url.PathEscape(l.Name),
	}
}

func (f *Server) labelsJSON() []any {
	var out []any
	for _, l := range f.labels {
		out = append(out, f.labelJSON(l))
	}
	return out
}

func (f *Server) issueLabelsJSON(is *fakeIssue) []any {
	out := []any{}
	for _, n := range is.labels {
		l := f.findLabel(n)
		if l == nil {
			l = &forges.Label{Name: n, Color: "ededed"}
		}
		out = append(out, f.labelJSON(l))
	}
	return out
}

func (f *Server) issueJSON(is *fakeIssue) map[string]any {
	assignees := []any{}
	for _, a := range is.assignees {
		assignees = append(assignees, f.userJSON(a))
	}
	var assignee any
	if len(is.assignees) > 0 {
		assignee = f.userJSON(is.assignees[0])
	}
	kind := "issues"
	if is.pr != nil {
		kind = "pull"
	}
	out := map[string]any{
		"id": 1000000 + is.number, "node_id": "MDU6SXNzdWUx", "number": is.number, "title": is.title,
		"body": nullable(is.body), "state": is.state, "user": f.userJSON(is.author), "labels": f.issueLabelsJSON(is),
		"assignee": assignee, "assignees": assignees, "locked": false, "comments": 0,
		"html_url":   fmt.Sprintf("%s/%s/%s/%s/%d", f.srv.URL, f.owner, f.repo, kind, is.number),
		"url":        fmt.Sprintf("%srepos/%s/%s/issues/%d", f.baseURL(), f.owner, f.repo, is.number),
		"created_at": is.updated.Format(time.RFC3339), "updated_at": is.updated.Format(time.RFC3339),
		"closed_at": nil, "author_association": "MEMBER",
	}
	if is.pr != nil {
		out["pull_request"] = map[string]any{
			"url":      fmt.Sprintf("%srepos/%s/%s/pulls/%d", f.baseURL(), f.owner, f.repo, is.number),
			"html_url": fmt.Sprintf("%s/%s/%s/pull/%d", f.srv.URL, f.owner, f.repo, is.number), "merged_at": nil,
		}
	}
	return out
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func (f *Server) pullJSON(is *fakeIssue) map[string]any {
	ref := func(branch, sha string) map[string]any {
		return map[string]any{"label": f.owner + ":" + branch, "ref": branch, "sha": sha,
			"user": f.userJSON(f.owner), "repo": f.repoJSON()}
	}
	var mergedAt any
	mergeableState := "unknown"
	if is.pr.merged {
		mergedAt = is.updated.Format(time.RFC3339)
	}
	var mergeable any
	if is.pr.mergeable != nil {
		mergeable = *is.pr.mergeable
		mergeableState = "clean"
		if !*is.pr.mergeable {
			mergeableState = "dirty"
		}
	}
	return map[string]any{
		"id": 2000000 + is.number, "node_id": "MDExOlB1bGxSZXF1ZXN0MQ==", "number": is.number,
		"state": is.state, "locked": false, "title": is.title, "body": nullable(is.body), "user": f.userJSON(is.author),
		"labels": f.issueLabelsJSON(is), "head": ref(is.pr.head, is.pr.sha), "base": ref(is.pr.base, f.branches[is.pr.base]),
		"draft": false, "merged": is.pr.merged, "merged_at": mergedAt, "mergeable": mergeable, "mergeable_state": mergeableState,
		"html_url":   fmt.Sprintf("%s/%s/%s/pull/%d", f.srv.URL, f.owner, f.repo, is.number),
		"url":        fmt.Sprintf("%srepos/%s/%s/pulls/%d", f.baseURL(), f.owner, f.repo, is.number),
		"created_at": is.updated.Format(time.RFC3339), "updated_at": is.updated.Format(time.RFC3339),
	}
}

func (f *Server) commentJSON(c *fakeComment) map[string]any {
	return map[string]any{
		"id": c.id, "node_id": "MDEyOklzc3VlQ29tbWVudDE=", "body": c.body, "user": f.userJSON(c.author),
		"html_url":   fmt.Sprintf("%s/%s/%s/issues/%d#issuecomment-%d", f.srv.URL, f.owner, f.repo, c.issue, c.id),
		"url":        fmt.Sprintf("%srepos/%s/%s/issues/comments/%d", f.baseURL(), f.owner, f.repo, c.id),
		"issue_url":  fmt.Sprintf("%srepos/%s/%s/issues/%d", f.baseURL(), f.owner, f.repo, c.issue),
		"created_at": c.created.Format(time.RFC3339), "updated_at": c.updated.Format(time.RFC3339),
		"author_association": "MEMBER",
	}
}

func (f *Server) reviewJSON(rv *fakeReview) map[string]any {
	return map[string]any{
		"id": rv.id, "node_id": "MDE3OlB1bGxSZXF1ZXN0UmV2aWV3ODA=", "user": f.userJSON(rv.author), "body": rv.body,
		"state": rv.state, "commit_id": f.issues[rv.pr].pr.sha, "submitted_at": rv.submitted.Format(time.RFC3339),
		"html_url":           fmt.Sprintf("%s/%s/%s/pull/%d#pullrequestreview-%d", f.srv.URL, f.owner, f.repo, rv.pr, rv.id),
		"pull_request_url":   fmt.Sprintf("%srepos/%s/%s/pulls/%d", f.baseURL(), f.owner, f.repo, rv.pr),
		"author_association": "COLLABORATOR",
	}
}

func (f *Server) reviewCommentJSON(c *fakeReviewComment) map[string]any {
	return map[string]any{
		"id": c.id, "node_id": "MDI0OlB1bGxSZXF1ZXN0UmV2aWV3Q29tbWVudDEw", "pull_request_review_id": c.review,
		"diff_hunk": "@@ -1,3 +1,4 @@", "path": c.path, "commit_id": f.issues[c.pr].pr.sha,
		"original_commit_id": f.issues[c.pr].pr.sha, "user": f.userJSON(c.author), "body": c.body,
		"line": c.line, "original_line": c.line, "side": "RIGHT", "subject_type": "line",
		"created_at": c.created.Format(time.RFC3339), "updated_at": c.created.Format(time.RFC3339),
		"html_url":           fmt.Sprintf("%s/%s/%s/pull/%d#discussion_r%d", f.srv.URL, f.owner, f.repo, c.pr, c.id),
		"url":                fmt.Sprintf("%srepos/%s/%s/pulls/comments/%d", f.baseURL(), f.owner, f.repo, c.id),
		"pull_request_url":   fmt.Sprintf("%srepos/%s/%s/pulls/%d", f.baseURL(), f.owner, f.repo, c.pr),
		"author_association": "COLLABORATOR",
	}
}

func (f *Server) statusJSON(id int64, c forges.Check) map[string]any {
	state := map[forges.CIState]string{forges.CISuccess: "success", forges.CIFailure: "failure", forges.CIPending: "pending"}[c.State]
	return map[string]any{
		"id": id, "node_id": "MDY6U3RhdHVzMQ==", "state": state, "description": c.Description, "target_url": nullable(c.URL),
		"context": c.Name, "created_at": f.now.Format(time.RFC3339), "updated_at": f.now.Format(time.RFC3339),
		"avatar_url": "https://github.com/images/error/hubot_happy.gif",
		"url":        f.baseURL() + "repos/" + f.owner + "/" + f.repo + "/statuses/" + strconv.FormatInt(id, 10),
	}
}

func (f *Server) checkRunJSON(id int64, sha string, c forges.Check) map[string]any {
	status, conclusion := "completed", any(nil)
	switch c.State {
	case forges.CISuccess:
		conclusion = "success"
	case forges.CIFailure:
		conclusion = "failure"
	default:
		status = "in_progress"
	}
	return map[string]any{
		"id": id, "node_id": "MDg6Q2hlY2tSdW40", "head_sha": sha, "external_id": "", "name": c.Name,
		"status": status, "conclusion": conclusion, "started_at": f.now.Format(time.RFC3339),
		"html_url":    fmt.Sprintf("%s/%s/%s/runs/%d", f.srv.URL, f.owner, f.repo, id),
		"details_url": nullable(c.URL),
		"url":         fmt.Sprintf("%srepos/%s/%s/check-runs/%d", f.baseURL(), f.owner, f.repo, id),
		"output":      map[string]any{"title": nullable(c.Description), "summary": nil, "text": nil, "annotations_count": 0},
		"check_suite": map[string]any{"id": 5}, "app": map[string]any{"id": 1, "slug": "github-actions", "name": "GitHub Actions"},
		"pull_requests": []any{},
	}
}
