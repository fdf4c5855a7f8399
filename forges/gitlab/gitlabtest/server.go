// Package gitlabtest is a stateful fake of the part of GitLab's REST API v4
// that forges/gitlab uses, on an httptest server: one project in a nested
// group, its issues, merge requests, notes, labels, branches, pipelines and
// commit statuses, seeded directly and changed through the API. Tests of
// forges/gitlab and of anything driving a GitLab forge (alfred labels sync)
// run against it.
package gitlabtest

import (
	"cmp"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/forges/internal/fakeforge"
)

// Server is a stateful fake of the part of GitLab's REST API v4 the
// Forge uses. It answers with GitLab's status codes, error bodies
// ({"message": ...} for API errors, {"error": ...} for unknown routes), JSON
// shapes (those of GitLab's REST docs and of client-go's recorded testdata)
// and offset pagination headers (X-Page, X-Per-Page, X-Total, X-Total-Pages,
// X-Next-Page, X-Prev-Page and Link). Pages hold at most fakeMaxPerPage
// items, fewer than GitLab's 100, so that pagination is exercised.
type Server struct {
	srv     *httptest.Server
	token   string
	path    string // full path of the one project, "acme/platform/demo"
	project int64  // its numeric id
	bot     string

	mu        sync.Mutex
	nextID    int64
	clock     time.Time
	users     map[string]*fakeUser
	issues    map[int64]*fakeIssue
	mrs       map[int64]*fakeMR
	notes     map[noteKey][]*fakeNote
	labels    []*fakeLabel
	branches  map[string]string
	pipelines []*fakePipeline
	statuses  []*fakeStatus
	failCode  int
	failN     int
	hangN     int
	premium   bool                       // scoped labels: one label per "a::" scope (SetPremium)
	inspected inspectState               // what alfred doctor reads: scopes, hooks
	hook      *hookTarget                // where webhooks go (SetWebhook), nil for none
	hq        fakeforge.Sender[Delivery] // webhooks waiting to be delivered
	git       *fakeforge.GitHost         // the project's repository over HTTP (ServeGit)
}

// DefaultBranch is the project's default branch.
const DefaultBranch = "main"

const (
	fakeMaxPerPage = 50
	accessNone     = 0
)

type fakeUser struct {
	ID       int64
	Username string
	Access   int // project access level, 0 for none
}

type fakeIssue struct {
	ID, IID              int64
	Title, Description   string
	State                string // opened, closed
	Author               string
	Labels, Assignees    []string
	CreatedAt, UpdatedAt time.Time
}

type fakeMR struct {
	ID, IID              int64
	Title, Description   string
	State                string // opened, closed, merged
	Author               string
	Source, Target, SHA  string
	DetailedMergeStatus  string
	HasConflicts         bool
	Labels               []string
	CreatedAt, UpdatedAt time.Time
}

type noteKey struct {
	kind string // "issues" or "merge_requests", as in the route
	iid  int64
}

type fakeNote struct {
	ID                   int64
	Type                 string // "", "DiffNote", "DiscussionNote"
	Body, Author         string
	Discussion           string
	Path                 string
	Line                 int
	CreatedAt, UpdatedAt time.Time
}

type fakeLabel struct {
	ID                       int64
	Name, Color, Description string
}

type fakePipeline struct {
	ID, IID     int64
	SHA, Ref    string
	Status      string
	CreatedAt   time.Time
	UpdatedAt   time.Time
	Description string
}

type fakeStatus struct {
	ID, PipelineID         int64
	SHA, Ref, Status, Name string
	TargetURL, Description string
	CreatedAt              time.Time
}

func NewServer(t interface{ Cleanup(func()) }) *Server {
	f := &Server{
		token:     "glpat-fake-" + strconv.FormatInt(time.Now().UnixNano(), 36),
		path:      "acme/platform/demo",
		project:   4242,
		bot:       "alfred-bot",
		nextID:    1000,
		clock:     time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC),
		users:     map[string]*fakeUser{},
		issues:    map[int64]*fakeIssue{},
		mrs:       map[int64]*fakeMR{},
		notes:     map[noteKey][]*fakeNote{},
		branches:  map[string]string{DefaultBranch: strings.Repeat("0", 39) + "1"},
		inspected: inspectState{scopes: []string{"api"}},
	}
	f.user(f.bot).Access = 40
	f.srv = httptest.NewServer(f)
	t.Cleanup(f.srv.Close)
	t.Cleanup(f.removeGit)
	return f
}

// id hands out the next numeric id; callers hold mu.
func (f *Server) id() int64 { f.nextID++; return f.nextID }

// tick is the next timestamp of the fake's clock; callers hold mu.
func (f *Server) tick() time.Time { f.clock = f.clock.Add(time.Second); return f.clock }

// user returns the user named login, creating it with no access; callers hold mu.
func (f *Server) user(login string) *fakeUser {
	if u, ok := f.users[login]; ok {
		return u
	}
	u := &fakeUser{ID: f.id(), Username: login}
	f.users[login] = u
	return u
}

// seedUser is user for the Seed methods: a user they create has read access.
func (f *Server) seedUser(login string) {
	if _, ok := f.users[login]; !ok {
		f.user(login).Access = 20
	}
}

func (f *Server) label(name string) *fakeLabel {
	for _, l := range f.labels {
		if l.Name == name {
			return l
		}
	}
	return nil
}

// ensureLabels creates the named labels GitLab creates on the fly when an
// issue or merge request is given a label that does not exist; callers hold mu.
func (f *Server) ensureLabels(names []string) {
	for _, n := range names {
		if f.label(n) == nil {
			f.labels = append(f.labels, &fakeLabel{ID: f.id(), Name: n, Color: "#6699cc"})
		}
	}
}

// ServeHTTP routes /api/v4/... requests, and the project's git (ServeGit).
func (f *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if g := f.gitHostFor(r); g != nil {
		g.ServeHTTP(w, r)
		return
	}
	f.mu.Lock()
	hang, fail := f.hangN > 0, 0
	switch {
	case hang:
		f.hangN--
	case f.failN > 0:
		f.failN--
		fail = f.failCode
	}
	f.mu.Unlock()
	if hang {
		<-r.Context().Done()
		return
	}
	if fail != 0 {
		f.failure(w, fail)
		return
	}
	if r.Header.Get("PRIVATE-TOKEN") != f.token {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"message": "401 Unauthorized"})
		return
	}
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), "/api/v4/")
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]any{"error": "404 Not Found"})
		return
	}
	var seg []string
	for _, s := range strings.Split(rest, "/") {
		u, err := url.PathUnescape(s)
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": "bad path"})
			return
		}
		seg = append(seg, u)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	before := f.beforeAPI(r, seg)
	f.route(w, r, seg)
	f.afterAPI(before)
}

// failure answers status the way GitLab (or the proxy in front of it) does.
func (f *Server) failure(w http.ResponseWriter, status int) {
	h := w.Header()
	if status == http.StatusTooManyRequests {
		reset := time.Now().Add(time.Second)
		h.Set("Retry-After", "1")
		h.Set("RateLimit-Name", "throttle_authenticated_api")
		h.Set("RateLimit-Limit", "2000")
		h.Set("RateLimit-Observed", "2001")
		h.Set("RateLimit-Remaining", "0")
		h.Set("RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
		h.Set("RateLimit-ResetTime", reset.UTC().Format(http.TimeFormat))
		h.Set("Content-Type", "text/plain")
		w.WriteHeader(status)
		fmt.Fprint(w, "Retry later\n")
		return
	}
	writeJSON(w, status, map[string]any{"message": fmt.Sprintf("%d %s", status, http.StatusText(status))})
}

// match tells whether seg is want, "*" matching any one segment.
func match(seg []string, want ...string) bool {
	if len(seg) != len(want) {
		return false
	}
	for i, p := range want {
		if p != "*" && p != seg[i] {
			return false
		}
	}
	return true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// page writes one page of items with GitLab's offset pagination headers.
func (f *Server) page(w http.ResponseWriter, r *http.Request, items []any) {
	q := r.URL.Query()
	page, _ := strconv.Atoi(q.Get("page"))
	page = max(page, 1)
	per, _ := strconv.Atoi(q.Get("per_page"))
	if per <= 0 {
		per = 20
	}
	per = min(per, fakeMaxPerPage)
	total := len(items)
	pages := max((total+per-1)/per, 1)
	lo, hi := min((page-1)*per, total), min(page*per, total)
	h := w.Header()
	h.Set("X-Page", strconv.Itoa(page))
	h.Set("X-Per-Page", strconv.Itoa(per))
	h.Set("X-Total", strconv.Itoa(total))
	h.Set("X-Total-Pages", strconv.Itoa(pages))
	h.Set("X-Next-Page", "")
	h.Set("X-Prev-Page", "")
	link := func(n int, rel string) string {
		u := *r.URL
		u.Scheme, u.Host = "http", r.Host
		qq := u.Query()
		qq.Set("page", strconv.Itoa(n))
		qq.Set("per_page", strconv.Itoa(per))
		u.RawQuery = qq.Encode()
		return fmt.Sprintf("<%s>; rel=%q", u.String(), rel)
	}
	var links []string
	if page > 1 {
		h.Set("X-Prev-Page", strconv.Itoa(page-1))
		links = append(links, link(page-1, "prev"))
	}
	if page < pages {
		h.Set("X-Next-Page", strconv.Itoa(page+1))
		links = append(links, link(page+1, "next"))
	}
	links = append(links, link(1, "first"), link(pages, "last"))
	h.Set("Link", strings.Join(links, ", "))
	out := items[lo:hi]
	if out == nil {
		out = []any{}
	}
	writeJSON(w, http.StatusOK, out)
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

func (f *Server) userJSON(u *fakeUser) map[string]any {
	return map[string]any{
		"id": u.ID, "username": u.Username, "name": strings.ToUpper(u.Username[:1]) + u.Username[1:],
		"state": "active", "locked": false, "avatar_url": f.srv.URL + "/uploads/avatar.png", "web_url": f.srv.URL + "/" + u.Username,
	}
}

func (f *Server) projectJSON() map[string]any {
	i := strings.LastIndexByte(f.path, '/')
	return map[string]any{
		"id": f.project, "description": "", "name": f.path[i+1:], "name_with_namespace": strings.ReplaceAll(f.path, "/", " / "),
		"path": f.path[i+1:], "path_with_namespace": f.path, "created_at": stamp(f.clock), "default_branch": DefaultBranch,
		"ssh_url_to_repo": "git@example.com:" + f.path + ".git", "http_url_to_repo": f.srv.URL + "/" + f.path + ".git",
		"web_url": f.srv.URL + "/" + f.path, "visibility": "private",
		"namespace": map[string]any{"id": 7, "name": "platform", "path": "platform", "kind": "group", "full_path": f.path[:i]},
	}
}

func (f *Server) member(w http.ResponseWriter, _ *http.Request, in input) {
	id := in.path["user_id"]
	for _, u := range f.users {
		if strconv.FormatInt(u.ID, 10) == id && u.Access > accessNone {
			m := f.userJSON(u)
			m["access_level"] = u.Access
			m["created_at"] = stamp(f.clock)
			m["expires_at"] = nil
			writeJSON(w, http.StatusOK, m)
			return
		}
	}
	writeJSON(w, http.StatusNotFound, map[string]any{"message": "404 Not found"})
}

func (f *Server) branch(w http.ResponseWriter, _ *http.Request, in input) {
	name := in.path["branch"]
	sha, ok := f.branches[name]
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "404 Branch Not Found"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"name": name, "merged": false, "protected": name == DefaultBranch, "default": name == DefaultBranch,
		"developers_can_push": false, "developers_can_merge": false, "can_push": true,
		"web_url": f.srv.URL + "/" + f.path + "/-/tree/" + name,
		"commit":  map[string]any{"id": sha, "short_id": sha[:8], "title": "commit", "message": "commit", "parent_ids": []string{}},
	})
}

var hexColor = regexp.MustCompile(`^#[0-9A-Fa-f]{6}$`)

func labelJSON(l *fakeLabel) map[string]any {
	return map[string]any{
		"id": l.ID, "name": l.Name, "color": l.Color, "text_color": "#FFFFFF", "description": l.Description,
		"description_html": l.Description, "open_issues_count": 0, "closed_issues_count": 0, "open_merge_requests_count": 0,
		"subscribed": false, "priority": nil, "is_project_label": true,
	}
}

func (f *Server) createLabel(w http.ResponseWriter, _ *http.Request, in input) {
	body := in.body
	name, _ := body["name"].(string)
	color, _ := body["color"].(string)
	desc, _ := body["description"].(string)
	switch {
	case name == "":
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "name is missing"})
	case !hexColor.MatchString(color):
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": map[string]any{"color": []string{"must be a valid color code"}}})
	case f.label(name) != nil:
		writeJSON(w, http.StatusConflict, map[string]any{"message": "Label already exists"})
	default:
		l := &fakeLabel{ID: f.id(), Name: name, Color: color, Description: desc}
		f.labels = append(f.labels, l)
		writeJSON(w, http.StatusCreated, labelJSON(l))
	}
}

func (f *Server) updateLabel(w http.ResponseWriter, _ *http.Request, in input) {
	body := in.body
	l := f.label(in.path["name"])
	if l == nil {
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "404 Label Not Found"})
		return
	}
	if c, ok := body["color"].(string); ok {
		if !hexColor.MatchString(c) {
			writeJSON(w, http.StatusBadRequest, map[string]any{"message": map[string]any{"color": []string{"must be a valid color code"}}})
			return
		}
		l.Color = c
	}
	if d, ok := body["description"].(string); ok {
		l.Description = d
	}
	if n, ok := body["new_name"].(string); ok && n != "" {
		l.Name = n
	}
	writeJSON(w, http.StatusOK, labelJSON(l))
}

func (f *Server) usersJSON(logins []string) []any {
	out := []any{}
	for _, l := range logins {
		out = append(out, f.userJSON(f.user(l)))
	}
	return out
}

func (f *Server) issueByPath(w http.ResponseWriter, s string) *fakeIssue {
	iid, _ := strconv.ParseInt(s, 10, 64)
	if is, ok := f.issues[iid]; ok {
		return is
	}
	writeJSON(w, http.StatusNotFound, map[string]any{"message": "404 Not found"})
	return nil
}

func (f *Server) issueJSON(is *fakeIssue) map[string]any {
	assignees := f.usersJSON(is.Assignees)
	var assignee any
	if len(assignees) > 0 {
		assignee = assignees[0]
	}
	web := fmt.Sprintf("%s/%s/-/issues/%d", f.srv.URL, f.path, is.IID)
	return map[string]any{
		"id": is.ID, "iid": is.IID, "project_id": f.project, "title": is.Title, "description": is.Description,
		"state": is.State, "created_at": stamp(is.CreatedAt), "updated_at": stamp(is.UpdatedAt), "closed_at": nil, "closed_by": nil,
		"labels": nonNil(is.Labels), "milestone": nil, "assignees": assignees, "assignee": assignee, "type": "ISSUE",
		"author": f.userJSON(f.user(is.Author)), "user_notes_count": len(f.notes[noteKey{"issues", is.IID}]),
		"merge_requests_count": 0, "upvotes": 0, "downvotes": 0, "due_date": nil, "confidential": false,
		"discussion_locked": nil, "issue_type": "issue", "web_url": web,
		"time_stats":             map[string]any{"time_estimate": 0, "total_time_spent": 0, "human_time_estimate": nil, "human_total_time_spent": nil},
		"task_completion_status": map[string]any{"count": 0, "completed_count": 0},
		"references":             map[string]any{"short": fmt.Sprintf("#%d", is.IID), "relative": fmt.Sprintf("#%d", is.IID), "full": fmt.Sprintf("%s#%d", f.path, is.IID)},
		"_links": map[string]any{
			"self":    fmt.Sprintf("%s/api/v4/projects/%d/issues/%d", f.srv.URL, f.project, is.IID),
			"notes":   fmt.Sprintf("%s/api/v4/projects/%d/issues/%d/notes", f.srv.URL, f.project, is.IID),
			"project": fmt.Sprintf("%s/api/v4/projects/%d", f.srv.URL, f.project),
		},
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// labelList reads a label list parameter: client-go sends a comma-joined string.
func labelList(v any) ([]string, bool) {
	switch v := v.(type) {
	case string:
		var out []string
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
		return out, true
	case []any:
		var out []string
		for _, s := range v {
			if s, ok := s.(string); ok {
				out = append(out, s)
			}
		}
		return out, true
	}
	return nil, false
}

// SetPremium makes the fake a GitLab edition with scoped labels (Premium
// and up): a label "a::b" takes the other labels of scope "a::" off the
// issue or merge request it is added to. The free edition (the default)
// has ordinary labels only.
func (f *Server) SetPremium(on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.premium = on
}

// labelScope is the scope of a GitLab scoped label: the name up to its last
// "::" ("" for an unscoped name).
func labelScope(name string) string {
	i := strings.LastIndex(name, "::")
	if i <= 0 || i+2 == len(name) {
		return ""
	}
	return name[:i]
}

// applyLabels does labels, add_labels and remove_labels the way GitLab does.
func (f *Server) applyLabels(cur []string, body map[string]any) []string {
	if set, ok := labelList(body["labels"]); ok {
		cur = set
	}
	if add, ok := labelList(body["add_labels"]); ok {
		f.ensureLabels(add)
		for _, a := range add {
			if f.premium {
				if scope := labelScope(a); scope != "" {
					cur = slices.DeleteFunc(cur, func(l string) bool { return l != a && labelScope(l) == scope })
				}
			}
			if !slices.Contains(cur, a) {
				cur = append(cur, a)
			}
		}
	}
	if rm, ok := labelList(body["remove_labels"]); ok {
		cur = slices.DeleteFunc(cur, func(l string) bool { return slices.Contains(rm, l) })
	}
	return cur
}

func (f *Server) updateIssue(is *fakeIssue, body map[string]any) {
	if v, ok := body["title"].(string); ok {
		is.Title = v
	}
	if v, ok := body["description"].(string); ok {
		is.Description = v
	}
	switch body["state_event"] {
	case "close":
		is.State = "closed"
	case "reopen":
		is.State = "opened"
	}
	is.Labels = f.applyLabels(is.Labels, body)
	is.UpdatedAt = f.tick()
}

func (f *Server) mrByPath(w http.ResponseWriter, s string) *fakeMR {
	iid, _ := strconv.ParseInt(s, 10, 64)
	if mr, ok := f.mrs[iid]; ok {
		return mr
	}
	writeJSON(w, http.StatusNotFound, map[string]any{"message": "404 Not found"})
	return nil
}

func (f *Server) mrJSON(mr *fakeMR) map[string]any {
	mergeStatus := map[string]string{"mergeable": "can_be_merged", "conflict": "cannot_be_merged", "checking": "checking", "preparing": "preparing"}[mr.DetailedMergeStatus]
	author := f.userJSON(f.user(mr.Author))
	return map[string]any{
		"id": mr.ID, "iid": mr.IID, "project_id": f.project, "title": mr.Title, "description": mr.Description,
		"state": mr.State, "created_at": stamp(mr.CreatedAt), "updated_at": stamp(mr.UpdatedAt),
		"merged_by": nil, "merged_at": nil, "closed_by": nil, "closed_at": nil,
		"target_branch": mr.Target, "source_branch": mr.Source, "user_notes_count": len(f.notes[noteKey{"merge_requests", mr.IID}]),
		"upvotes": 0, "downvotes": 0, "author": author, "assignee": nil, "assignees": []any{}, "reviewers": []any{},
		"source_project_id": f.project, "target_project_id": f.project, "labels": nonNil(mr.Labels), "draft": false,
		"work_in_progress": false, "milestone": nil, "merge_when_pipeline_succeeds": false,
		"merge_status": mergeStatus, "detailed_merge_status": mr.DetailedMergeStatus, "has_conflicts": mr.HasConflicts,
		"sha": mr.SHA, "merge_commit_sha": nil, "squash_commit_sha": nil, "discussion_locked": nil,
		"should_remove_source_branch": nil, "force_remove_source_branch": true,
		"reference": fmt.Sprintf("!%d", mr.IID), "web_url": fmt.Sprintf("%s/%s/-/merge_requests/%d", f.srv.URL, f.path, mr.IID),
		"references": map[string]any{"short": fmt.Sprintf("!%d", mr.IID), "relative": fmt.Sprintf("!%d", mr.IID), "full": fmt.Sprintf("%s!%d", f.path, mr.IID)},
		"time_stats": map[string]any{"time_estimate": 0, "total_time_spent": 0, "human_time_estimate": nil, "human_total_time_spent": nil},
		"squash":     false, "task_completion_status": map[string]any{"count": 0, "completed_count": 0},
		"diff_refs": map[string]any{"base_sha": f.branches[mr.Target], "head_sha": mr.SHA, "start_sha": f.branches[mr.Target]},
		"user":      map[string]any{"can_merge": true}, "first_contribution": false, "merge_error": nil,
	}
}

func (f *Server) listMRs(w http.ResponseWriter, r *http.Request, _ input) {
	q := r.URL.Query()
	state := cmp.Or(q.Get("state"), "all")
	var mrs []*fakeMR
	for _, mr := range f.mrs {
		if (state != "all" && mr.State != state) ||
			(q.Get("source_branch") != "" && mr.Source != q.Get("source_branch")) ||
			(q.Get("target_branch") != "" && mr.Target != q.Get("target_branch")) {
			continue
		}
		mrs = append(mrs, mr)
	}
	slices.SortFunc(mrs, func(a, b *fakeMR) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(a.IID, b.IID)
	})
	if q.Get("sort") != "asc" {
		slices.Reverse(mrs)
	}
	out := make([]any, 0, len(mrs))
	for _, mr := range mrs {
		out = append(out, f.mrJSON(mr))
	}
	f.page(w, r, out)
}

func (f *Server) createMR(w http.ResponseWriter, _ *http.Request, in input) {
	body := in.body
	title, _ := body["title"].(string)
	src, _ := body["source_branch"].(string)
	dst, _ := body["target_branch"].(string)
	desc, _ := body["description"].(string)
	if title == "" || src == "" || dst == "" {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "title, source_branch, target_branch are missing"})
		return
	}
	sha, ok := f.branches[src]
	if _, okDst := f.branches[dst]; !ok || !okDst {
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": []string{"Source branch does not exist or target branch does not exist"}})
		return
	}
	for _, mr := range f.mrs {
		if mr.State == "opened" && mr.Source == src && mr.Target == dst {
			writeJSON(w, http.StatusConflict, map[string]any{"message": []string{fmt.Sprintf("Another open merge request already exists for this source branch: !%d", mr.IID)}})
			return
		}
	}
	iid := int64(1)
	for n := range f.mrs {
		iid = max(iid, n+1)
	}
	now := f.tick()
	mr := &fakeMR{ID: f.id(), IID: iid, Title: title, Description: desc, State: "opened", Author: f.bot,
		Source: src, Target: dst, SHA: sha, DetailedMergeStatus: "preparing", CreatedAt: now, UpdatedAt: now}
	mr.Labels = f.applyLabels(nil, body)
	f.mrs[iid] = mr
	writeJSON(w, http.StatusCreated, f.mrJSON(mr))
}

func (f *Server) updateMR(mr *fakeMR, body map[string]any) {
	if v, ok := body["title"].(string); ok {
		mr.Title = v
	}
	if v, ok := body["description"].(string); ok {
		mr.Description = v
	}
	mr.Labels = f.applyLabels(mr.Labels, body)
	mr.UpdatedAt = f.tick()
}

func (f *Server) noteTarget(w http.ResponseWriter, kind, iid string) (noteKey, bool) {
	n, _ := strconv.ParseInt(iid, 10, 64)
	key := noteKey{kind, n}
	if kind == "issues" && f.issues[n] == nil || kind == "merge_requests" && f.mrs[n] == nil {
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "404 Not found"})
		return key, false
	}
	return key, true
}

// addNote appends a note; a zero at takes the fake's clock. Callers hold mu.
func (f *Server) addNote(key noteKey, author, body, typ string, at time.Time) *fakeNote {
	if at.IsZero() {
		at = f.tick()
	}
	id := f.id()
	sum := sha1.Sum([]byte(strconv.FormatInt(id, 10)))
	n := &fakeNote{ID: id, Type: typ, Body: body, Author: author, Discussion: hex.EncodeToString(sum[:]), CreatedAt: at, UpdatedAt: at}
	f.notes[key] = append(f.notes[key], n)
	return n
}

func (f *Server) noteJSON(key noteKey, n *fakeNote) map[string]any {
	noteable, typ := "Issue", any(nil)
	var noteableID int64
	if key.kind == "merge_requests" {
		noteable = "MergeRequest"
		if mr := f.mrs[key.iid]; mr != nil {
			noteableID = mr.ID
		}
	} else if is := f.issues[key.iid]; is != nil {
		noteableID = is.ID
	}
	if n.Type != "" {
		typ = n.Type
	}
	m := map[string]any{
		"id": n.ID, "type": typ, "body": n.Body, "attachment": nil, "author": f.userJSON(f.user(n.Author)),
		"created_at": stamp(n.CreatedAt), "updated_at": stamp(n.UpdatedAt), "system": false,
		"noteable_id": noteableID, "noteable_type": noteable, "project_id": f.project, "noteable_iid": key.iid,
		"resolvable": n.Type != "", "confidential": false, "internal": false, "imported": false, "imported_from": "none",
	}
	if n.Type != "" {
		m["resolved"] = false
		m["resolved_by"] = nil
		m["resolved_at"] = nil
	}
	if n.Type == "DiffNote" {
		mr := f.mrs[key.iid]
		m["position"] = map[string]any{
			"base_sha": f.branches[mr.Target], "start_sha": f.branches[mr.Target], "head_sha": mr.SHA,
			"old_path": n.Path, "new_path": n.Path, "position_type": "text", "old_line": nil, "new_line": n.Line,
			"line_range": nil,
		}
	}
	return m
}

// listNotes answers GET .../notes, sorted as asked (created_at desc by default).
func (f *Server) listNotes(w http.ResponseWriter, r *http.Request, key noteKey, _ input) {
	notes := slices.Clone(f.notes[key])
	slices.SortStableFunc(notes, func(a, b *fakeNote) int { return a.CreatedAt.Compare(b.CreatedAt) })
	if r.URL.Query().Get("sort") != "asc" {
		slices.Reverse(notes)
	}
	out := make([]any, 0, len(notes))
	for _, n := range notes {
		out = append(out, f.noteJSON(key, n))
	}
	f.page(w, r, out)
}

// listDiscussions answers GET .../discussions: one discussion per thread,
// oldest first; plain notes are individual discussions.
func (f *Server) listDiscussions(w http.ResponseWriter, r *http.Request, key noteKey) {
	notes := slices.Clone(f.notes[key])
	slices.SortStableFunc(notes, func(a, b *fakeNote) int { return a.CreatedAt.Compare(b.CreatedAt) })
	out := make([]any, 0, len(notes))
	for _, n := range notes {
		out = append(out, map[string]any{"id": n.Discussion, "individual_note": n.Type == "", "notes": []any{f.noteJSON(key, n)}})
	}
	f.page(w, r, out)
}

func (f *Server) listPipelines(w http.ResponseWriter, r *http.Request, _ input) {
	q := r.URL.Query()
	var ps []*fakePipeline
	for _, p := range f.pipelines {
		if (q.Get("sha") == "" || p.SHA == q.Get("sha")) && (q.Get("ref") == "" || p.Ref == q.Get("ref")) {
			ps = append(ps, p)
		}
	}
	slices.SortFunc(ps, func(a, b *fakePipeline) int { return cmp.Compare(b.ID, a.ID) })
	if q.Get("sort") == "asc" {
		slices.Reverse(ps)
	}
	out := make([]any, 0, len(ps))
	for _, p := range ps {
		out = append(out, map[string]any{
			"id": p.ID, "iid": p.IID, "project_id": f.project, "sha": p.SHA, "ref": p.Ref, "status": p.Status,
			"source": "push", "created_at": stamp(p.CreatedAt), "updated_at": stamp(p.UpdatedAt), "name": nil,
			"web_url": fmt.Sprintf("%s/%s/-/pipelines/%d", f.srv.URL, f.path, p.ID),
		})
	}
	f.page(w, r, out)
}

func (f *Server) listStatuses(w http.ResponseWriter, r *http.Request, in input) {
	sha := in.path["sha"]
	out := []any{}
	for _, s := range f.statuses {
		if s.SHA != sha {
			continue
		}
		out = append(out, map[string]any{
			"id": s.ID, "sha": s.SHA, "ref": s.Ref, "status": s.Status, "name": s.Name, "target_url": s.TargetURL,
			"description": s.Description, "created_at": stamp(s.CreatedAt), "started_at": stamp(s.CreatedAt), "finished_at": nil,
			"allow_failure": false, "coverage": nil, "pipeline_id": s.PipelineID,
			"author": f.userJSON(f.users[f.bot]),
		})
	}
	f.page(w, r, out)
}

// jobStatus is the GitLab job status a seeded check state stands for.
func jobStatus(s forges.CIState) string {
	switch s {
	case forges.CISuccess:
		return "success"
	case forges.CIFailure:
		return "failed"
	case forges.CIPending:
		return "running"
	default:
		return "skipped"
	}
}

// pipelineStatus composes job statuses as GitLab does for a pipeline.
func pipelineStatus(jobs []string) string {
	switch {
	case slices.Contains(jobs, "failed"):
		return "failed"
	case slices.Contains(jobs, "running"):
		return "running"
	case slices.Contains(jobs, "success"):
		return "success"
	default:
		return "skipped"
	}
}
