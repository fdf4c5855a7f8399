package forgejotest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/alchemic-studio/alfred/forges/internal/fakeforge"
)

// handler answers one API request, with s.mu held; v holds its path's wildcards.
type handler func(s *Server, w http.ResponseWriter, r *http.Request, v fakeforge.PathValues)

// apiRoute is one entry of a dispatch table.
type apiRoute struct {
	pattern fakeforge.Pattern
	handle  handler
}

func handle(p string, h handler) apiRoute { return apiRoute{fakeforge.ParsePattern(p), h} }

// topRoutes are the routes outside the repository, matched on the path's
// segments as they are, escaped: "/api/v1/versio%6E" is not /version.
var topRoutes = []apiRoute{
	handle("GET /version", (*Server).getVersion),
	handle("GET /user", (*Server).getUser),
}

// repoRoutes are the repository's routes, in the order they are tried;
// {owner} and {repo} are Owner and Repo (route answers 404 for others).
var repoRoutes = []apiRoute{
	handle("GET /repos/{owner}/{repo}", (*Server).getRepo),
	handle("GET /repos/{owner}/{repo}/collaborators/{collaborator}/permission", (*Server).permission),
	handle("GET /repos/{owner}/{repo}/branches/{branch...}", (*Server).getBranch),
	handle("GET /repos/{owner}/{repo}/labels", (*Server).listLabels),
	handle("POST /repos/{owner}/{repo}/labels", (*Server).createLabel),
	handle("PATCH /repos/{owner}/{repo}/labels/{id}", (*Server).label),
	handle("GET /repos/{owner}/{repo}/labels/{id}", (*Server).label),
	handle("PATCH /repos/{owner}/{repo}/issues/comments/{id}", (*Server).editComment),
	handle("GET /repos/{owner}/{repo}/issues/{index}", (*Server).getIssue),
	handle("PATCH /repos/{owner}/{repo}/issues/{index}", (*Server).editIssue),
	handle("/repos/{owner}/{repo}/issues/{index}/comments", (*Server).threadComments),
	handle("/repos/{owner}/{repo}/issues/{index}/labels", (*Server).issueLabels),
	handle("DELETE /repos/{owner}/{repo}/issues/{index}/labels/{id}", (*Server).issueLabels),
	handle("GET /repos/{owner}/{repo}/pulls", (*Server).listPulls),
	handle("POST /repos/{owner}/{repo}/pulls", (*Server).createPull),
	handle("GET /repos/{owner}/{repo}/pulls/{index}", (*Server).getPull),
	handle("GET /repos/{owner}/{repo}/pulls/{index}/reviews", (*Server).listReviews),
	handle("GET /repos/{owner}/{repo}/pulls/{index}/reviews/{id}/comments", (*Server).reviewComments),
	handle("GET /repos/{owner}/{repo}/commits/{ref}/status", (*Server).combinedStatus),
	handle("POST /repos/{owner}/{repo}/statuses/{sha}", (*Server).createStatus),
}

// route dispatches /api/v1 requests. It is called with s.mu held.
func (s *Server) route(w http.ResponseWriter, r *http.Request) {
	raw, found := strings.CutPrefix(r.URL.EscapedPath(), "/api/v1/")
	if !found {
		s.notFound(w, nil)
		return
	}
	segs := unescapeSegments(raw)
	if s.inspect(w, r, segs) || s.dispatch(topRoutes, w, r, strings.Split(raw, "/")) {
		return
	}
	switch {
	case len(segs) < 3 || segs[0] != "repos":
		s.notFound(w, nil)
	case segs[1] != Owner || segs[2] != Repo:
		s.notFound(w, []string{fmt.Sprintf("repository does not exist [id: 0, uid: 0, owner_name: %s, name: %s]", segs[1], segs[2])})
	default:
		if !s.dispatch(repoRoutes, w, r, segs) {
			s.notFound(w, nil)
		}
	}
}

// unescapeSegments splits an escaped path into its segments, each unescaped
// on its own (left as it is when it does not unescape).
func unescapeSegments(raw string) []string {
	segs := strings.Split(raw, "/")
	for i, sg := range segs {
		if u, err := url.PathUnescape(sg); err == nil {
			segs[i] = u
		}
	}
	return segs
}

// dispatch answers with the first of routes that matches segs, and reports
// whether one did.
func (s *Server) dispatch(routes []apiRoute, w http.ResponseWriter, r *http.Request, segs []string) bool {
	for _, rt := range routes {
		if v, found := rt.pattern.Match(r.Method, segs); found {
			rt.handle(s, w, r, v)
			return true
		}
	}
	return false
}

func (s *Server) getVersion(w http.ResponseWriter, _ *http.Request, _ fakeforge.PathValues) {
	writeJSON(w, 200, map[string]any{"version": Version})
}

func (s *Server) getUser(w http.ResponseWriter, _ *http.Request, _ fakeforge.PathValues) {
	o := s.userJSON(Bot)
	o["is_admin"] = true
	writeJSON(w, 200, o)
}

func (s *Server) getRepo(w http.ResponseWriter, _ *http.Request, _ fakeforge.PathValues) {
	writeJSON(w, 200, s.repoJSON())
}

func (s *Server) getBranch(w http.ResponseWriter, _ *http.Request, v fakeforge.PathValues) {
	name := v["branch"]
	if sha, ok := s.branches[name]; ok {
		writeJSON(w, 200, s.branchJSON(name, sha))
	} else {
		s.notFound(w, []string{"branch does not exist [name: " + name + "]"})
	}
}

func (s *Server) listLabels(w http.ResponseWriter, r *http.Request, _ fakeforge.PathValues) {
	all := sortedLabels(s.labels)
	setTotal(w, len(all))
	out := []any{}
	for _, l := range page(s, r, all) {
		out = append(out, s.labelJSON(l))
	}
	writeJSON(w, 200, out)
}

func (s *Server) getIssue(w http.ResponseWriter, _ *http.Request, v fakeforge.PathValues) {
	if is := s.issueAt(v["index"]); is != nil {
		writeJSON(w, 200, s.issueJSON(is))
	} else {
		s.notFound(w, nil)
	}
}

func (s *Server) getPull(w http.ResponseWriter, _ *http.Request, v fakeforge.PathValues) {
	if is := s.issueAt(v["index"]); is != nil && is.pull != nil {
		writeJSON(w, 200, s.pullJSON(is))
	} else {
		s.notFound(w, nil)
	}
}

func decode(w http.ResponseWriter, r *http.Request, s *Server, v any) bool {
	data, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(data, v); err != nil {
		s.errorJSON(w, http.StatusUnprocessableEntity, "[]: "+err.Error())
		return false
	}
	return true
}

func (s *Server) issueAt(num string) *issue {
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		return nil
	}
	return s.issues[n]
}

func (s *Server) permission(w http.ResponseWriter, _ *http.Request, v fakeforge.PathValues) {
	login := v["collaborator"]
	u, ok := s.users[login]
	if !ok {
		s.errorJSON(w, http.StatusNotFound, "user does not exist [uid: 0, name: "+login+"]")
		return
	}
	o := object("api-005-perm-alice-owner.json", 0)
	perm := u.permission
	if u.admin || login == Owner {
		perm = "owner"
	}
	o["permission"], o["role_name"] = perm, perm
	o["user"] = s.userJSON(login)
	writeJSON(w, 200, o)
}

func (s *Server) createLabel(w http.ResponseWriter, r *http.Request, _ fakeforge.PathValues) {
	var in struct {
		Name, Color, Description string
		Exclusive                bool
	}
	if !decode(w, r, s, &in) {
		return
	}
	if in.Name == "" {
		s.errorJSON(w, 422, "[Name]: Required")
		return
	}
	color := strings.TrimPrefix(in.Color, "#")
	if !hex6.MatchString(color) {
		s.errorJSON(w, 422, "bad color code: #"+color)
		return
	}
	l := s.addLabel(in.Name, color, in.Description)
	l.exclusive = in.Exclusive
	writeJSON(w, 201, s.labelJSON(l))
}

func (s *Server) label(w http.ResponseWriter, r *http.Request, v fakeforge.PathValues) {
	id := v["id"]
	var l *label
	for _, x := range s.labels {
		if strconv.FormatInt(x.id, 10) == id {
			l = x
		}
	}
	if l == nil {
		s.notFound(w, []string{"label does not exist [id: " + id + "]"})
		return
	}
	if r.Method == "PATCH" {
		var in struct {
			Name, Color, Description *string
			Exclusive                *bool
		}
		if !decode(w, r, s, &in) {
			return
		}
		if in.Color != nil {
			c := strings.TrimPrefix(*in.Color, "#")
			if !hex6.MatchString(c) {
				s.errorJSON(w, 422, "bad color code: #"+c)
				return
			}
			l.color = strings.ToLower(c)
		}
		if in.Name != nil {
			l.name = *in.Name
		}
		if in.Description != nil {
			l.descr = *in.Description
		}
		if in.Exclusive != nil {
			l.exclusive = *in.Exclusive
		}
	}
	writeJSON(w, 200, s.labelJSON(l))
}

// editIssue edits an issue and sends the webhooks Forgejo sends for what
// changed: issues edited (title, body), closed or reopened, then
// issue_assign assigned or unassigned.
func (s *Server) editIssue(w http.ResponseWriter, r *http.Request, v fakeforge.PathValues) {
	is := s.issueAt(v["index"])
	if is == nil {
		s.notFound(w, nil)
		return
	}
	var in struct { // nil: left as it is
		Title, Body, State *string
		Assignees          *[]string
	}
	if !decode(w, r, s, &in) {
		return
	}
	changes := editText(is, in.Title, in.Body)
	stateChanged := s.editState(is, in.State)
	assign := editAssignees(is, in.Assignees)
	is.upd = s.now()
	if len(changes) > 0 {
		s.hookIssueEvent(is, "issues", "edited", Bot, changes)
	}
	if stateChanged {
		action := "closed"
		if is.state == "open" {
			action = "reopened"
		}
		s.hookIssueEvent(is, "issues", action, Bot, nil)
	}
	if assign != "" {
		s.hookIssueEvent(is, "issue_assign", assign, Bot, nil)
	}
	writeJSON(w, 201, s.issueJSON(is)) // Forgejo 7 answers PATCH with 201
}

// editText sets the issue's title and body, those given, and is the
// webhook's changes: the old value of each that changed.
func editText(is *issue, title, body *string) map[string]any {
	changes := map[string]any{}
	if title != nil && *title != is.title {
		changes["title"] = map[string]any{"from": is.title}
		is.title = *title
	}
	if body != nil && *body != is.body {
		changes["body"] = map[string]any{"from": is.body}
		is.body = *body
	}
	return changes
}

// editState sets the issue's state, if given, and tells whether it changed.
func (s *Server) editState(is *issue, state *string) bool {
	if state == nil || *state == is.state {
		return false
	}
	is.state = *state
	if is.state == "closed" {
		now := s.now()
		is.closed = &now
	} else {
		is.closed = nil
	}
	return true
}

// editAssignees sets the issue's assignees, if given, and is the
// issue_assign action: "assigned" when someone was added, "unassigned"
// when the list changed without, "" when it did not change.
func editAssignees(is *issue, assignees *[]string) string {
	if assignees == nil || slices.Equal(*assignees, is.assignees) {
		return ""
	}
	assign := "unassigned"
	for _, a := range *assignees {
		if !slices.Contains(is.assignees, a) {
			assign = "assigned"
		}
	}
	is.assignees = slices.Clone(*assignees)
	return assign
}

func (s *Server) threadComments(w http.ResponseWriter, r *http.Request, v fakeforge.PathValues) {
	num := v["index"]
	is := s.issueAt(num)
	if is == nil {
		s.errorJSON(w, 500, fmt.Sprintf("issue does not exist [id: 0, repo_id: 1, index: %s]", num))
		return
	}
	switch r.Method {
	case "GET": // page and limit are ignored by Forgejo 7: every comment, every time
		out := []any{}
		for _, c := range s.comments {
			if c.issue == is.number {
				out = append(out, s.commentJSON(c))
			}
		}
		setTotal(w, len(out))
		writeJSON(w, 200, out)
	case "POST":
		var in struct{ Body string }
		if !decode(w, r, s, &in) {
			return
		}
		c := s.addComment(is.number, Bot, in.Body)
		s.hookComment(c, "created", nil)
		writeJSON(w, 201, s.commentJSON(c))
	default:
		s.notFound(w, nil)
	}
}

func (s *Server) addComment(number int64, author, body string) *comment {
	s.ids.comment++
	now := s.now()
	c := &comment{id: s.ids.comment, issue: number, author: author, body: body, created: now, upd: now}
	s.userFor(author)
	s.comments = append(s.comments, c)
	return c
}

func (s *Server) editComment(w http.ResponseWriter, r *http.Request, v fakeforge.PathValues) {
	id := v["id"]
	for _, c := range s.comments {
		if strconv.FormatInt(c.id, 10) == id {
			var in struct{ Body string }
			if !decode(w, r, s, &in) {
				return
			}
			from := c.body
			c.body = in.Body
			c.upd = s.now()
			s.hookComment(c, "edited", map[string]any{"body": map[string]any{"from": from}})
			writeJSON(w, 200, s.commentJSON(c))
			return
		}
	}
	s.notFound(w, []string{"comment does not exist [id: " + id + ", issue_id: 0]"})
}

func (s *Server) issueLabels(w http.ResponseWriter, r *http.Request, v fakeforge.PathValues) {
	is := s.issueAt(v["index"])
	if is == nil {
		s.notFound(w, nil)
		return
	}
	switch r.Method {
	case "GET":
		writeJSON(w, 200, s.labelsJSON(is.labels))
	case "POST", "PUT":
		var in struct{ Labels []int64 }
		if !decode(w, r, s, &in) {
			return
		}
		if r.Method == "PUT" {
			is.labels = nil
		}
		for _, id := range in.Labels { // unknown ids are silently ignored
			if s.labelByID(id) != nil {
				s.putLabel(is, id)
			}
		}
		is.upd = s.now()
		s.hookIssueEvent(is, "issue_label", "label_updated", Bot, nil) // fired even when nothing changed
		writeJSON(w, 200, s.labelsJSON(is.labels))
	case "DELETE":
		id, _ := strconv.ParseInt(v["id"], 10, 64) // "" (no label) for .../labels
		is.labels = slices.DeleteFunc(is.labels, func(x int64) bool { return x == id })
		s.hookIssueEvent(is, "issue_label", "label_updated", Bot, nil) // fired even when nothing changed
		w.WriteHeader(http.StatusNoContent)                            // also for a label that was not there
	default:
		s.notFound(w, nil)
	}
}

// exclusiveScope is Forgejo's (and Gitea's) Label.ExclusiveScope: the name
// up to its last '/' for an exclusive label ("" when the '/' is missing,
// first or last). A "status::x" label has none, exclusive or not.
func (l *label) exclusiveScope() string {
	i := strings.LastIndexByte(l.name, '/')
	if !l.exclusive || i <= 0 || i == len(l.name)-1 {
		return ""
	}
	return l.name[:i]
}

// putLabel puts label id on is unless it is there, first taking off the
// labels of its exclusive scope, as Forgejo does.
func (s *Server) putLabel(is *issue, id int64) {
	if slices.Contains(is.labels, id) {
		return
	}
	if scope := s.labelByID(id).exclusiveScope(); scope != "" {
		is.labels = slices.DeleteFunc(is.labels, func(x int64) bool {
			o := s.labelByID(x)
			return o != nil && o.exclusiveScope() == scope
		})
	}
	is.labels = append(is.labels, id)
}

func (s *Server) labelByID(id int64) *label {
	for _, l := range s.labels {
		if l.id == id {
			return l
		}
	}
	return nil
}

func (s *Server) pullsByState(state string) []*issue {
	var out []*issue
	for _, is := range s.issues {
		if is.pull != nil && (state == "all" || is.state == state) {
			out = append(out, is)
		}
	}
	slices.SortFunc(out, func(a, b *issue) int { return int(b.number - a.number) }) // newest first
	return out
}

func (s *Server) listPulls(w http.ResponseWriter, r *http.Request, _ fakeforge.PathValues) {
	state := r.URL.Query().Get("state")
	if state == "" {
		state = "open"
	}
	all := s.pullsByState(state)
	setTotal(w, len(all))
	s.setLink(w, r, len(all))
	out := []any{}
	for _, is := range page(s, r, all) {
		out = append(out, s.pullJSON(is))
	}
	writeJSON(w, 200, out)
}

func (s *Server) createPull(w http.ResponseWriter, r *http.Request, _ fakeforge.PathValues) {
	var in struct{ Head, Base, Title, Body string }
	if !decode(w, r, s, &in) {
		return
	}
	if in.Title == "" {
		s.errorJSON(w, 422, "[Title]: Required")
		return
	}
	headSHA, ok := s.branches[in.Head]
	if _, baseOK := s.branches[in.Base]; !ok || !baseOK {
		s.notFound(w, nil)
		return
	}
	for _, is := range s.pullsByState("open") {
		if is.pull.head == in.Head && is.pull.base == in.Base {
			s.errorJSON(w, http.StatusConflict, fmt.Sprintf("pull request already exists for these targets [id: %d, issue_id: %d, head_repo_id: 1, base_repo_id: 1, head_branch: %s, base_branch: %s]", is.pull.id, is.id, in.Head, in.Base))
			return
		}
	}
	is := s.addIssue(s.nextNumber(), in.Title, in.Body, "open", Bot)
	s.ids.pull++
	is.pull = &pull{id: s.ids.pull, head: in.Head, base: in.Base, headSHA: headSHA, mergeable: true, checking: s.checkingReads}
	s.enqueue("pull_request", "pull_request", s.pullPayload(is, "opened", Bot, nil))
	writeJSON(w, 201, s.pullJSON(is))
}

func (s *Server) addIssue(number int64, title, body, state, author string) *issue {
	s.ids.issue++
	now := s.now()
	if state == "" {
		state = "open"
	}
	is := &issue{id: s.ids.issue, number: number, title: title, body: body, state: state, author: author, created: now, upd: now}
	if state == "closed" {
		is.closed = &now
	}
	s.userFor(author)
	s.issues[number] = is
	return is
}

func (s *Server) listReviews(w http.ResponseWriter, r *http.Request, v fakeforge.PathValues) {
	is := s.issueAt(v["index"])
	if is == nil || is.pull == nil {
		s.notFound(w, nil)
		return
	}
	all := s.reviews[is.number]
	setTotal(w, len(all)) // X-Total-Count, no Link
	out := []any{}
	for _, rv := range page(s, r, all) {
		out = append(out, s.reviewJSON(is.number, rv))
	}
	writeJSON(w, 200, out)
}

func (s *Server) reviewComments(w http.ResponseWriter, _ *http.Request, v fakeforge.PathValues) {
	is := s.issueAt(v["index"])
	if is == nil || is.pull == nil {
		s.notFound(w, nil)
		return
	}
	for _, rv := range s.reviews[is.number] {
		if strconv.FormatInt(rv.id, 10) == v["id"] {
			out := []any{}
			for _, c := range rv.comments {
				out = append(out, s.reviewCommentJSON(is.number, rv, c))
			}
			writeJSON(w, 200, out)
			return
		}
	}
	s.notFound(w, nil)
}

// latestStatuses is the newest status of each context of sha, in first-seen order.
func (s *Server) latestStatuses(sha string) []*status {
	var order []string
	last := map[string]*status{}
	for _, st := range s.statuses[sha] {
		if _, ok := last[st.context]; !ok {
			order = append(order, st.context)
		}
		last[st.context] = st
	}
	out := make([]*status, 0, len(order))
	for _, c := range order {
		out = append(out, last[c])
	}
	return out
}

func (s *Server) combinedStatus(w http.ResponseWriter, r *http.Request, v fakeforge.PathValues) {
	ref := v["ref"]
	sha := ref
	if b, ok := s.branches[ref]; ok {
		sha = b
	}
	latest := s.latestStatuses(sha)
	if len(latest) == 0 { // Forgejo answers an empty CombinedStatus
		writeJSON(w, 200, map[string]any{"state": "", "sha": "", "total_count": 0, "statuses": nil, "repository": nil, "commit_url": "", "url": ""})
		return
	}
	o := object("api-078-commit-status-combined.json", 0)
	var list []any
	worst := "success"
	rank := map[string]int{"success": 1, "warning": 2, "pending": 3, "failure": 4, "error": 5}
	for _, st := range page(s, r, latest) {
		list = append(list, s.statusJSON(sha, st))
		if rank[st.state] > rank[worst] {
			worst = st.state
		}
	}
	o["state"] = worst
	o["sha"] = sha
	o["total_count"] = len(latest)
	o["statuses"] = list
	o["repository"] = s.repoJSON()
	o["commit_url"] = fmt.Sprintf("%s/api/v1/repos/%s/%s/commits/%s", s.srv.URL, Owner, Repo, sha)
	o["url"] = fmt.Sprintf("%s/api/v1/repos/%s/%s/commits/%s/status", s.srv.URL, Owner, Repo, sha)
	setTotal(w, len(latest))
	writeJSON(w, 200, o)
}

func (s *Server) createStatus(w http.ResponseWriter, r *http.Request, v fakeforge.PathValues) {
	sha := v["sha"]
	var in struct {
		State       string `json:"state"`
		TargetURL   string `json:"target_url"`
		Description string `json:"description"`
		Context     string `json:"context"`
	}
	if !decode(w, r, s, &in) {
		return
	}
	st := s.addStatus(sha, in.Context, in.State, in.Description, in.TargetURL)
	writeJSON(w, 201, s.statusJSON(sha, st))
}

func (s *Server) addStatus(sha, context, state, desc, url string) *status {
	if context == "" {
		context = "default"
	}
	s.ids.status++
	st := &status{id: s.ids.status, state: state, context: context, desc: desc, url: url, created: s.now()}
	s.statuses[sha] = append(s.statuses[sha], st)
	return st
}
