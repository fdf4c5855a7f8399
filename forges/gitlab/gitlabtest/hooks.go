package gitlabtest

import (
	"embed"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/alchemic-studio/alfred/forges/internal/fakeforge"
)

// Webhooks. After SetWebhook, the server delivers what GitLab does to a
// project webhook with every trigger on: Issue Hook, Note Hook, Merge
// Request Hook and Push Hook, for the people's actions of the Act* methods,
// for the changes made through the API (by the bot: its notes, labels,
// descriptions, merge requests) and for pushes to the repository served by
// ServeGit. Deliveries go out one at a time, in order, from a goroutine, as
// GitLab's: a compact JSON body; X-Gitlab-Event, X-Gitlab-Token (the secret
// itself, not a signature), X-Gitlab-Event-UUID, X-Gitlab-Webhook-UUID,
// X-Gitlab-Instance and Idempotency-Key headers; User-Agent GitLab/<version>.
// The bodies start from GitLab's documented examples (recordings/, copies of
// testdata/gitlab/webhooks of the repository's top level) with the fake's
// objects put in. No hook is sent for seeding (Add*), labels defined through
// the API, commit statuses or pipelines.

//go:embed recordings/*.json
var recordings embed.FS

// Version is the GitLab version the fake's webhooks claim (User-Agent).
const Version = "17.5.0"

type hookTarget struct {
	url, secret string
	uuid        string // X-Gitlab-Webhook-UUID: the hook's own id
	instance    string // X-Gitlab-Instance
	client      *http.Client
}

// Delivery is one webhook the server sent.
type Delivery struct {
	// Event is X-Gitlab-Event: "Issue Hook", "Note Hook", "Merge Request
	// Hook" or "Push Hook".
	Event string
	// Action is object_attributes.action ("open", "update", "create"...),
	// empty for a push.
	Action string
	// UUID is X-Gitlab-Event-UUID and Key the Idempotency-Key.
	UUID, Key string
	Status    int // HTTP status answered, 0 on a transport error
	Err       error
}

type outgoing = fakeforge.Pending[Delivery]

// SetWebhook makes the server deliver the project's webhooks to url with
// secret as X-Gitlab-Token (none when secret is empty).
func (f *Server) SetWebhook(url, secret string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hook = &hookTarget{url: url, secret: secret, uuid: fakeforge.NewUUID(), instance: f.srv.URL, client: &http.Client{Timeout: 10 * time.Second}}
}

// Deliveries lists the webhooks sent so far, in order.
func (f *Server) Deliveries() []Delivery { return f.hq.Deliveries() }

// Flush waits until every queued webhook has been delivered.
func (f *Server) Flush() { f.hq.Flush() }

// enqueue queues a delivery of payload as event; callers hold f.mu. It
// returns nil when no webhook is set.
func (f *Server) enqueue(event string, payload map[string]any) *outgoing {
	if f.hook == nil {
		return nil
	}
	body, err := json.Marshal(payload)
	if err != nil {
		panic(err)
	}
	var action string
	if a, ok := payload["object_attributes"].(map[string]any); ok {
		action, _ = a["action"].(string)
	}
	target := *f.hook
	return f.hq.Queue(Delivery{Event: event, Action: action, UUID: fakeforge.NewUUID(), Key: fakeforge.NewUUID()}, func(d Delivery) Delivery {
		d.Status, d.Err = send(target, d, body)
		return d
	})
}

func send(target hookTarget, d Delivery, body []byte) (int, error) {
	h := http.Header{}
	h.Set("User-Agent", "GitLab/"+Version)
	h.Set("X-Gitlab-Event", d.Event)
	h.Set("X-Gitlab-Event-UUID", d.UUID)
	h.Set("X-Gitlab-Webhook-UUID", target.uuid)
	h.Set("X-Gitlab-Instance", target.instance)
	h.Set("Idempotency-Key", d.Key)
	if target.secret != "" {
		h.Set("X-Gitlab-Token", target.secret)
	}
	return fakeforge.Post(target.client, target.url, h, body)
}

// hookObject is a fresh copy of a recorded webhook body.
func hookObject(file string) map[string]any {
	return fakeforge.Recorded(recordings, "gitlabtest", file)
}

// attrs is the object_attributes of a recorded body.
func attrs(o map[string]any) map[string]any {
	a, _ := o["object_attributes"].(map[string]any)
	if a == nil {
		a = map[string]any{}
		o["object_attributes"] = a
	}
	return a
}

// Time as webhook bodies write it: ISO 8601 in issue and merge request
// attributes, "2006-01-02 15:04:05 UTC" in notes and in changes.
func isoTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05Z") }
func utcTime(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") }

// The builders below are called with f.mu held.

// hookUser is a user as webhook bodies show one (the email redacted, as
// GitLab does since 16.0).
func (f *Server) hookUser(login string) map[string]any {
	u := f.user(login)
	return map[string]any{
		"id": u.ID, "name": displayName(login), "username": login,
		"avatar_url": f.srv.URL + "/uploads/avatar.png", "email": "[REDACTED]",
	}
}

// displayName is a user's name: the login, capitalized.
func displayName(login string) string {
	if login == "" {
		return ""
	}
	return strings.ToUpper(login[:1]) + login[1:]
}

func (f *Server) hookUsers(logins []string) []any {
	out := []any{}
	for _, l := range logins {
		out = append(out, f.hookUser(l))
	}
	return out
}

func (f *Server) userIDs(logins []string) []any {
	out := []any{}
	for _, l := range logins {
		out = append(out, f.user(l).ID)
	}
	return out
}

// hookProject is the project as webhook bodies show it (also a merge
// request's source and target).
func (f *Server) hookProject() map[string]any {
	i := strings.LastIndexByte(f.path, '/')
	web, clone := f.srv.URL+"/"+f.path, f.srv.URL+"/"+f.path+".git"
	ssh := "git@" + strings.TrimPrefix(f.srv.URL, "http://") + ":" + f.path + ".git"
	return map[string]any{
		"id": f.project, "name": f.path[i+1:], "description": "", "web_url": web, "avatar_url": nil,
		"git_ssh_url": ssh, "git_http_url": clone, "namespace": "platform", "visibility_level": 0,
		"path_with_namespace": f.path, "default_branch": DefaultBranch, "ci_config_path": nil,
		"homepage": web, "url": ssh, "ssh_url": ssh, "http_url": clone,
	}
}

func (f *Server) hookRepository() map[string]any {
	i := strings.LastIndexByte(f.path, '/')
	web := f.srv.URL + "/" + f.path
	return map[string]any{"name": f.path[i+1:], "url": "git@" + strings.TrimPrefix(f.srv.URL, "http://") + ":" + f.path + ".git",
		"description": "", "homepage": web}
}

// hookLabels are the named labels as webhook bodies show them.
func (f *Server) hookLabels(names []string) []any {
	out := []any{}
	for _, n := range names {
		l := f.label(n)
		if l == nil {
			continue
		}
		out = append(out, map[string]any{
			"id": l.ID, "title": l.Name, "color": l.Color, "project_id": f.project,
			"created_at": isoTime(f.clock), "updated_at": isoTime(f.clock), "template": false,
			"description": l.Description, "type": "ProjectLabel", "group_id": nil,
		})
	}
	return out
}

// stateID is GitLab's state_id of an issue or merge request state.
func stateID(state string) int {
	return map[string]int{"opened": 1, "closed": 2, "merged": 3, "locked": 4}[state]
}

// issueAttrs is object_attributes of an Issue Hook (and, without action,
// the issue of a Note Hook).
func (f *Server) issueAttrs(base map[string]any, is *fakeIssue, actor string) map[string]any {
	a := base
	for _, k := range []string{"escalation_status", "escalation_policy"} { // incidents only
		delete(a, k)
	}
	var assignee any
	if len(is.Assignees) > 0 {
		assignee = f.user(is.Assignees[0]).ID
	}
	var closed any
	if is.State == "closed" {
		closed = isoTime(is.UpdatedAt)
	}
	a["id"], a["iid"], a["title"], a["description"] = is.ID, is.IID, is.Title, is.Description
	a["author_id"], a["project_id"] = f.user(is.Author).ID, f.project
	a["assignee_ids"], a["assignee_id"] = f.userIDs(is.Assignees), assignee
	a["created_at"], a["updated_at"], a["closed_at"] = isoTime(is.CreatedAt), isoTime(is.UpdatedAt), closed
	a["updated_by_id"] = nil
	if actor != "" {
		a["updated_by_id"] = f.user(actor).ID
	}
	a["state"], a["state_id"] = is.State, stateID(is.State)
	a["url"] = fmt.Sprintf("%s/%s/-/issues/%d", f.srv.URL, f.path, is.IID)
	a["labels"] = f.hookLabels(is.Labels)
	a["discussion_locked"], a["confidential"], a["weight"], a["severity"] = nil, false, nil, "unknown"
	a["start_date"], a["due_date"], a["milestone_id"] = nil, nil, nil
	a["time_estimate"], a["total_time_spent"], a["time_change"] = 0, 0, 0
	a["type"] = "Issue"
	return a
}

// issueHook builds the Issue Hook of action on is, by actor, with changes
// (GitLab adds updated_at and updated_by_id to every update's).
func (f *Server) issueHook(is *fakeIssue, action, actor string, changes map[string]any, prevUpdated time.Time) *outgoing {
	o := hookObject("issue.json")
	o["user"], o["project"], o["repository"] = f.hookUser(actor), f.hookProject(), f.hookRepository()
	a := f.issueAttrs(attrs(o), is, actor)
	a["action"] = action
	o["labels"] = f.hookLabels(is.Labels)
	o["assignees"] = f.hookUsers(is.Assignees)
	if len(is.Assignees) > 0 {
		o["assignee"] = f.hookUser(is.Assignees[0])
	} else {
		delete(o, "assignee")
	}
	if changes == nil {
		changes = map[string]any{}
	}
	if action != "open" {
		changes["updated_at"] = map[string]any{"previous": utcTime(prevUpdated), "current": utcTime(is.UpdatedAt)}
		changes["updated_by_id"] = map[string]any{"previous": nil, "current": f.user(actor).ID}
	}
	o["changes"] = changes
	return f.enqueue("Issue Hook", o)
}

// openChanges are the changes of an opened issue: every field set.
func (f *Server) openChanges(is *fakeIssue) map[string]any {
	set := func(v any) map[string]any { return map[string]any{"previous": nil, "current": v} }
	c := map[string]any{
		"author_id": set(f.user(is.Author).ID), "created_at": set(utcTime(is.CreatedAt)), "description": set(is.Description),
		"id": set(is.ID), "iid": set(is.IID), "project_id": set(f.project), "title": set(is.Title),
		"updated_at": set(utcTime(is.UpdatedAt)),
	}
	if len(is.Labels) > 0 {
		c["labels"] = map[string]any{"previous": []any{}, "current": f.hookLabels(is.Labels)}
	}
	if len(is.Assignees) > 0 {
		c["assignees"] = map[string]any{"previous": []any{}, "current": f.hookUsers(is.Assignees)}
	}
	return c
}

// issueChanges are the changes between two states of an issue, as an
// update's Issue Hook lists them.
func (f *Server) issueChanges(prev, cur *fakeIssue) map[string]any {
	c := map[string]any{}
	if prev.Title != cur.Title {
		c["title"] = map[string]any{"previous": prev.Title, "current": cur.Title}
	}
	if prev.Description != cur.Description {
		c["description"] = map[string]any{"previous": prev.Description, "current": cur.Description}
		c["last_edited_at"] = map[string]any{"previous": nil, "current": utcTime(cur.UpdatedAt)}
	}
	if !sameSet(prev.Labels, cur.Labels) {
		c["labels"] = map[string]any{"previous": f.hookLabels(prev.Labels), "current": f.hookLabels(cur.Labels)}
	}
	if !sameSet(prev.Assignees, cur.Assignees) {
		c["assignees"] = map[string]any{"previous": f.hookUsers(prev.Assignees), "current": f.hookUsers(cur.Assignees)}
	}
	if prev.State != cur.State {
		c["state_id"] = map[string]any{"previous": stateID(prev.State), "current": stateID(cur.State)}
		var was, now any
		if prev.State == "closed" {
			was = utcTime(prev.UpdatedAt)
		}
		if cur.State == "closed" {
			now = utcTime(cur.UpdatedAt)
		}
		c["closed_at"] = map[string]any{"previous": was, "current": now}
	}
	return c
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	in := map[string]bool{}
	for _, x := range a {
		in[x] = true
	}
	for _, x := range b {
		if !in[x] {
			return false
		}
	}
	return true
}

// mrAttrs is object_attributes of a Merge Request Hook (and, without
// action, the merge_request of a Note Hook).
func (f *Server) mrAttrs(base map[string]any, mr *fakeMR) map[string]any {
	a := base
	delete(a, "system_action")
	mergeStatus := map[string]string{"mergeable": "can_be_merged", "conflict": "cannot_be_merged", "checking": "checking", "preparing": "preparing"}[mr.DetailedMergeStatus]
	a["id"], a["iid"], a["title"], a["description"] = mr.ID, mr.IID, mr.Title, mr.Description
	a["target_branch"], a["source_branch"] = mr.Target, mr.Source
	a["source_project_id"], a["target_project_id"] = f.project, f.project
	a["author_id"], a["assignee_ids"], a["assignee_id"], a["reviewer_ids"] = f.user(mr.Author).ID, []any{}, nil, []any{}
	a["created_at"], a["updated_at"], a["milestone_id"] = isoTime(mr.CreatedAt), isoTime(mr.UpdatedAt), nil
	a["state"], a["state_id"] = mr.State, stateID(mr.State)
	a["merge_status"], a["detailed_merge_status"] = mergeStatus, mr.DetailedMergeStatus
	a["work_in_progress"], a["draft"], a["first_contribution"] = false, false, false
	a["blocking_discussions_resolved"], a["merge_when_pipeline_succeeds"] = true, false
	a["url"] = fmt.Sprintf("%s/%s/-/merge_requests/%d", f.srv.URL, f.path, mr.IID)
	a["source"], a["target"] = f.hookProject(), f.hookProject()
	a["last_edited_at"], a["last_edited_by_id"] = nil, nil
	a["labels"] = f.hookLabels(mr.Labels)
	a["last_commit"] = map[string]any{
		"id": mr.SHA, "message": mr.Title + "\n", "title": mr.Title, "timestamp": isoTime(mr.UpdatedAt),
		"url":    fmt.Sprintf("%s/%s/-/commit/%s", f.srv.URL, f.path, mr.SHA),
		"author": map[string]any{"name": mr.Author, "email": "[REDACTED]"},
	}
	a["system"] = false
	return a
}

// mrHook builds the Merge Request Hook of action on mr, by actor; oldrev is
// the previous head for an update with new commits.
func (f *Server) mrHook(mr *fakeMR, action, actor, oldrev string, changes map[string]any, prevUpdated time.Time) *outgoing {
	o := hookObject("merge_request.json")
	o["user"], o["project"], o["repository"] = f.hookUser(actor), f.hookProject(), f.hookRepository()
	a := f.mrAttrs(attrs(o), mr)
	a["action"] = action
	if oldrev != "" {
		a["oldrev"] = oldrev
	}
	o["labels"] = f.hookLabels(mr.Labels)
	o["assignees"], o["reviewers"] = []any{}, []any{}
	if changes == nil {
		changes = map[string]any{}
	}
	if action != "open" {
		changes["updated_at"] = map[string]any{"previous": utcTime(prevUpdated), "current": utcTime(mr.UpdatedAt)}
		changes["updated_by_id"] = map[string]any{"previous": nil, "current": f.user(actor).ID}
	}
	o["changes"] = changes
	return f.enqueue("Merge Request Hook", o)
}

// mrChanges are the changes between two states of a merge request.
func (f *Server) mrChanges(prev, cur *fakeMR) map[string]any {
	c := map[string]any{}
	if prev.Title != cur.Title {
		c["title"] = map[string]any{"previous": prev.Title, "current": cur.Title}
	}
	if prev.Description != cur.Description {
		c["description"] = map[string]any{"previous": prev.Description, "current": cur.Description}
	}
	if !sameSet(prev.Labels, cur.Labels) {
		c["labels"] = map[string]any{"previous": f.hookLabels(prev.Labels), "current": f.hookLabels(cur.Labels)}
	}
	return c
}

// noteHook builds the Note Hook of note n on key, action "create" or
// "update".
func (f *Server) noteHook(key noteKey, n *fakeNote, action string) *outgoing {
	file := "note_issue.json"
	if key.kind == "merge_requests" {
		file = "note_merge_request.json"
	}
	o := hookObject(file)
	o["user"], o["project"], o["repository"], o["project_id"] = f.hookUser(n.Author), f.hookProject(), f.hookRepository(), f.project
	a := attrs(o)
	var typ any
	if n.Type != "" {
		typ = n.Type
	}
	noteable, web := "Issue", fmt.Sprintf("%s/%s/-/issues/%d#note_%d", f.srv.URL, f.path, key.iid, n.ID)
	if key.kind == "merge_requests" {
		noteable, web = "MergeRequest", fmt.Sprintf("%s/%s/-/merge_requests/%d#note_%d", f.srv.URL, f.path, key.iid, n.ID)
	}
	a["id"], a["note"], a["description"], a["type"], a["noteable_type"] = n.ID, n.Body, n.Body, typ, noteable
	a["author_id"], a["project_id"], a["discussion_id"] = f.user(n.Author).ID, f.project, n.Discussion
	a["created_at"], a["updated_at"] = utcTime(n.CreatedAt), utcTime(n.UpdatedAt)
	a["system"], a["internal"], a["action"], a["url"] = false, false, action, web
	a["position"], a["original_position"], a["change_position"], a["line_code"] = nil, nil, nil, nil
	if n.Type == "DiffNote" {
		mr := f.mrs[key.iid]
		pos := map[string]any{
			"base_sha": f.branches[mr.Target], "start_sha": f.branches[mr.Target], "head_sha": mr.SHA,
			"old_path": n.Path, "new_path": n.Path, "position_type": "text", "old_line": nil, "new_line": n.Line,
		}
		a["position"], a["original_position"] = pos, pos
	}
	if key.kind == "merge_requests" {
		mr := f.mrs[key.iid]
		base, _ := o["merge_request"].(map[string]any)
		if base == nil {
			base = map[string]any{}
		}
		a["noteable_id"] = mr.ID
		m := f.mrAttrs(base, mr)
		delete(m, "action")
		delete(m, "oldrev")
		o["merge_request"] = m
	} else {
		is := f.issues[key.iid]
		base, _ := o["issue"].(map[string]any)
		if base == nil {
			base = map[string]any{}
		}
		a["noteable_id"] = is.ID
		i := f.issueAttrs(base, is, "")
		delete(i, "action")
		o["issue"] = i
	}
	return f.enqueue("Note Hook", o)
}

// pushHook builds the Push Hook of branch moving from before to after (40
// zeros for a branch created or deleted) by actor, with its commits.
func (f *Server) pushHook(branch, before, after, actor string, commits []any) *outgoing {
	o := hookObject("push.json")
	u := f.user(actor)
	checkout := any(after)
	if after == fakeforge.ZeroSHA {
		checkout = nil
	}
	if commits == nil {
		commits = []any{}
	}
	o["before"], o["after"], o["ref"], o["ref_protected"], o["checkout_sha"] = before, after, "refs/heads/"+branch, branch == DefaultBranch, checkout
	o["user_id"], o["user_name"], o["user_username"], o["user_email"] = u.ID, displayName(actor), actor, "[REDACTED]"
	o["user_avatar"] = f.srv.URL + "/uploads/avatar.png"
	o["project_id"], o["project"] = f.project, f.hookProject()
	repo := f.hookRepository()
	p := f.hookProject()
	repo["git_http_url"], repo["git_ssh_url"], repo["visibility_level"] = p["git_http_url"], p["git_ssh_url"], 0
	o["repository"] = repo
	o["commits"], o["total_commits_count"] = commits, len(commits)
	return f.enqueue("Push Hook", o)
}
