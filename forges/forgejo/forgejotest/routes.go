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
)

// route dispatches /api/v1 requests. It is called with s.mu held.
func (s *Server) route(w http.ResponseWriter, r *http.Request) {
	raw := strings.TrimPrefix(r.URL.EscapedPath(), "/api/v1/")
	if raw == r.URL.EscapedPath() {
		s.notFound(w, nil)
		return
	}
	segs := strings.Split(raw, "/")
	for i, sg := range segs {
		if u, err := url.PathUnescape(sg); err == nil {
			segs[i] = u
		}
	}
	m := r.Method
	if s.inspect(w, r, segs) {
		return
	}
	switch {
	case m == "GET" && raw == "version":
		writeJSON(w, 200, map[string]any{"version": Version})
		return
	case m == "GET" && raw == "user":
		o := s.userJSON(Bot)
		o["is_admin"] = true
		writeJSON(w, 200, o)
		return
	case len(segs) < 3 || segs[0] != "repos":
		s.notFound(w, nil)
		return
	case segs[1] != Owner || segs[2] != Repo:
		s.notFound(w, []string{fmt.Sprintf("repository does not exist [id: 0, uid: 0, owner_name: %s, name: %s]", segs[1], segs[2])})
		return
	}
	rest := segs[3:]
	at := func(i int) string {
		if i < len(rest) {
			return rest[i]
		}
		return ""
	}
	n := len(rest)
	switch {
	case n == 0 && m == "GET":
		writeJSON(w, 200, s.repoJSON())
	case n == 3 && at(0) == "collaborators" && at(2) == "permission" && m == "GET":
		s.permission(w, at(1))
	case at(0) == "branches" && n >= 2 && m == "GET":
		name := strings.Join(rest[1:], "/")
		if sha, ok := s.branches[name]; ok {
			writeJSON(w, 200, s.branchJSON(name, sha))
		} else {
			s.notFound(w, []string{"branch does not exist [name: " + name + "]"})
		}
	case n == 1 && at(0) == "labels" && m == "GET":
		all := sortedLabels(s.labels)
		setTotal(w, len(all))
		out := []any{}
		for _, l := range page(s, r, all) {
			out = append(out, s.labelJSON(l))
		}
		writeJSON(w, 200, out)
	case n == 1 && at(0) == "labels" && m == "POST":
		s.createLabel(w, r)
	case n == 2 && at(0) == "labels" && (m == "PATCH" || m == "GET"):
		s.label(w, r, at(1))
	case n == 3 && at(0) == "issues" && at(1) == "comments" && m == "PATCH":
		s.editComment(w, r, at(2))
	case n == 2 && at(0) == "issues" && m == "GET":
		if is := s.issueAt(at(1)); is != nil {
			writeJSON(w, 200, s.issueJSON(is))
		} else {
			s.notFound(w, nil)
		}
	case n == 2 && at(0) == "issues" && m == "PATCH":
		s.editIssue(w, r, at(1))
	case n == 3 && at(0) == "issues" && at(2) == "comments":
		s.threadComments(w, r, at(1))
	case n == 3 && at(0) == "issues" && at(2) == "labels":
		s.issueLabels(w, r, at(1), "")
	case n == 4 && at(0) == "issues" && at(2) == "labels" && m == "DELETE":
		s.issueLabels(w, r, at(1), at(3))
	case n == 1 && at(0) == "pulls" && m == "GET":
		s.listPulls(w, r)
	case n == 1 && at(0) == "pulls" && m == "POST":
		s.createPull(w, r)
	case n == 2 && at(0) == "pulls" && m == "GET":
		if is := s.issueAt(at(1)); is != nil && is.pull != nil {
			writeJSON(w, 200, s.pullJSON(is))
		} else {
			s.notFound(w, nil)
		}
	case n == 3 && at(0) == "pulls" && at(2) == "reviews" && m == "GET":
		s.listReviews(w, r, at(1))
	case n == 5 && at(0) == "pulls" && at(2) == "reviews" && at(4) == "comments" && m == "GET":
		s.reviewComments(w, at(1), at(3))
	case n == 3 && at(0) == "commits" && at(2) == "status" && m == "GET":
		s.combinedStatus(w, r, at(1))
	case n == 2 && at(0) == "statuses" && m == "POST":
		s.createStatus(w, r, at(1))
	default:
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

func (s *Server) permission(w http.ResponseWriter, login string) {
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

func (s *Server) createLabel(w http.ResponseWriter, r *http.Request) {
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

func (s *Server) label(w http.ResponseWriter, r *http.Request, id string) {
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

func (s *Server) editIssue(w http.ResponseWriter, r *http.Request, num string) {
	is := s.issueAt(num)
	if is == nil {
		s.notFound(w, nil)
		return
	}
	var in struct {
		Title, Body, State *string
		Assignees          *[]string
	}
	if !decode(w, r, s, &in) {
		return
	}
	changes := map[string]any{}
	if in.Title != nil && *in.Title != is.title {
		changes["title"] = map[string]any{"from": is.title}
		is.title = *in.Title
	}
	if in.Body != nil && *in.Body != is.body {
		changes["body"] = map[string]any{"from": is.body}
		is.body = *in.Body
	}
	stateChanged := in.State != nil && *in.State != is.state
	if stateChanged {
		is.state = *in.State
		if is.state == "closed" {
			now := s.now()
			is.closed = &now
		} else {
			is.closed = nil
		}
	}
	assign := ""
	if in.Assignees != nil && !slices.Equal(*in.Assignees, is.assignees) {
		assign = "unassigned"
		for _, a := range *in.Assignees {
			if !slices.Contains(is.assignees, a) {
				assign = "assigned"
			}
		}
		is.assignees = slices.Clone(*in.Assignees)
	}
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

func (s *Server) threadComments(w http.ResponseWriter, r *http.Request, num string) {
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

func (s *Server) editComment(w http.ResponseWriter, r *http.Request, id string) {
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

func (s *Server) issueLabels(w http.ResponseWriter, r *http.Request, num, labelID string) {
	is := s.issueAt(num)
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
		id, _ := strconv.ParseInt(labelID, 10, 64)
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

func (s *Server) listPulls(w http.ResponseWriter, r *http.Request) {
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

func (s *Server) createPull(w http.ResponseWriter, r *http.Request) {
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

func (s *Server) listReviews(w http.ResponseWriter, r *http.Request, num string) {
	is := s.issueAt(num)
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

func (s *Server) reviewComments(w http.ResponseWriter, num, id string) {
	is := s.issueAt(num)
	if is == nil || is.pull == nil {
		s.notFound(w, nil)
		return
	}
	for _, rv := range s.reviews[is.number] {
		if strconv.FormatInt(rv.id, 10) == id {
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

func (s *Server) combinedStatus(w http.ResponseWriter, r *http.Request, ref string) {
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

func (s *Server) createStatus(w http.ResponseWriter, r *http.Request, sha string) {
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
