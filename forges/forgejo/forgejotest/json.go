package forgejotest

import (
	"fmt"
	"strings"
	"time"
)

func ts(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func (s *Server) userJSON(login string) map[string]any {
	u := s.userFor(login)
	o := object("api-002-user-bot.json", 0)
	o["id"] = u.id
	o["login"] = u.login
	o["username"] = u.login
	o["email"] = u.login + "@noreply.127.0.0.1"
	o["is_admin"] = false
	o["avatar_url"] = s.srv.URL + "/avatars/" + u.login
	return o
}

func (s *Server) repoJSON() map[string]any {
	o := object("api-003-repo.json", 0)
	base := s.srv.URL + "/" + Owner + "/" + Repo
	o["owner"] = s.userJSON(Owner)
	o["name"] = Repo
	o["full_name"] = Owner + "/" + Repo
	o["html_url"] = base
	o["url"] = s.srv.URL + "/api/v1/repos/" + Owner + "/" + Repo
	o["languages_url"] = s.srv.URL + "/api/v1/repos/" + Owner + "/" + Repo + "/languages"
	o["clone_url"] = base + ".git"
	o["ssh_url"] = "git@127.0.0.1:" + Owner + "/" + Repo + ".git"
	o["default_branch"] = DefaultBranch
	return o
}

func (s *Server) labelJSON(l *label) map[string]any {
	o := object("api-013-label-create.json", 0)
	o["id"] = l.id
	o["name"] = l.name
	o["color"] = l.color
	o["description"] = l.descr
	o["exclusive"] = l.exclusive
	o["url"] = fmt.Sprintf("%s/api/v1/repos/%s/%s/labels/%d", s.srv.URL, Owner, Repo, l.id)
	return o
}

func (s *Server) labelsJSON(ids []int64) []any {
	out := []any{}
	for _, id := range ids {
		for _, l := range s.labels {
			if l.id == id {
				out = append(out, s.labelJSON(l))
			}
		}
	}
	return out
}

func (s *Server) assigneesJSON(is *issue) (any, any) {
	if len(is.assignees) == 0 {
		return nil, nil
	}
	var list []any
	for _, a := range is.assignees {
		list = append(list, s.userJSON(a))
	}
	return list[0], list
}

func (s *Server) kindPath(is *issue) string {
	if is.pull != nil {
		return "pulls"
	}
	return "issues"
}

func (s *Server) issueJSON(is *issue) map[string]any {
	o := object("api-026-issue-get.json", 0)
	o["id"] = is.id
	o["url"] = fmt.Sprintf("%s/api/v1/repos/%s/%s/issues/%d", s.srv.URL, Owner, Repo, is.number)
	o["html_url"] = fmt.Sprintf("%s/%s/%s/%s/%d", s.srv.URL, Owner, Repo, s.kindPath(is), is.number)
	o["number"] = is.number
	o["user"] = s.userJSON(is.author)
	o["title"] = is.title
	o["body"] = is.body
	o["labels"] = s.labelsJSON(is.labels)
	o["assignee"], o["assignees"] = s.assigneesJSON(is)
	o["state"] = is.state
	o["comments"] = s.countComments(is.number)
	o["created_at"] = ts(is.created)
	o["updated_at"] = ts(is.upd)
	o["closed_at"] = nil
	if is.closed != nil {
		o["closed_at"] = ts(*is.closed)
	}
	o["pull_request"] = nil
	if is.pull != nil {
		var mergedAt any
		if is.pull.mergedAt != nil {
			mergedAt = ts(*is.pull.mergedAt)
		}
		o["pull_request"] = map[string]any{"merged": is.pull.merged, "merged_at": mergedAt, "draft": false, "html_url": o["html_url"]}
	}
	o["repository"] = map[string]any{"id": 1, "name": Repo, "owner": Owner, "full_name": Owner + "/" + Repo}
	return o
}

func (s *Server) branchInfo(ref, sha string) map[string]any {
	return map[string]any{"label": ref, "ref": ref, "sha": sha, "repo_id": 1, "repo": s.repoJSON()}
}

// headInfo is a pull request's head: like Forgejo and Gitea, its ref is the
// branch while it exists and the pull request's own refs/pull/N/head once the
// branch is deleted; the label keeps the branch name.
func (s *Server) headInfo(is *issue) map[string]any {
	o := s.branchInfo(is.pull.head, is.pull.headSHA)
	if _, ok := s.branches[is.pull.head]; !ok {
		o["ref"] = fmt.Sprintf("refs/pull/%d/head", is.number)
	}
	return o
}

func (s *Server) pullJSON(is *issue) map[string]any {
	o := object("api-066-pull-get.json", 0)
	pr := is.pull
	html := fmt.Sprintf("%s/%s/%s/pulls/%d", s.srv.URL, Owner, Repo, is.number)
	o["id"] = pr.id
	o["url"] = html
	o["number"] = is.number
	o["user"] = s.userJSON(is.author)
	o["title"] = is.title
	o["body"] = is.body
	o["labels"] = s.labelsJSON(is.labels)
	o["assignee"], o["assignees"] = s.assigneesJSON(is)
	o["state"] = is.state
	o["comments"] = s.countComments(is.number)
	o["html_url"] = html
	o["diff_url"] = html + ".diff"
	o["patch_url"] = html + ".patch"
	o["mergeable"] = pr.mergeable && pr.checking == 0
	if pr.checking > 0 {
		pr.checking--
	}
	o["merged"] = pr.merged
	o["merged_at"], o["merge_commit_sha"], o["merged_by"] = nil, nil, nil
	if pr.merged && pr.mergedAt != nil {
		o["merged_at"] = ts(*pr.mergedAt)
		o["merge_commit_sha"] = strings.Repeat("e", 40)
		o["merged_by"] = s.userJSON(Owner)
	}
	o["base"] = s.branchInfo(pr.base, s.branches[pr.base])
	o["head"] = s.headInfo(is)
	o["merge_base"] = s.branches[pr.base]
	o["created_at"] = ts(is.created)
	o["updated_at"] = ts(is.upd)
	o["closed_at"] = nil
	if is.closed != nil {
		o["closed_at"] = ts(*is.closed)
	}
	return o
}

func (s *Server) commentJSON(c *comment) map[string]any {
	o := object("api-047-comment-create.json", 0)
	is := s.issues[c.issue]
	thread := fmt.Sprintf("%s/%s/%s/%s/%d", s.srv.URL, Owner, Repo, s.kindPath(is), is.number)
	o["id"] = c.id
	o["html_url"] = fmt.Sprintf("%s#issuecomment-%d", thread, c.id)
	o["issue_url"], o["pull_request_url"] = thread, ""
	if is.pull != nil {
		o["issue_url"], o["pull_request_url"] = "", thread
	}
	o["user"] = s.userJSON(c.author)
	o["body"] = c.body
	o["created_at"] = ts(c.created)
	o["updated_at"] = ts(c.upd)
	return o
}

func (s *Server) branchJSON(name, sha string) map[string]any {
	o := object("api-059-branch-get-encoded.json", 0)
	o["name"] = name
	commit := o["commit"].(map[string]any)
	commit["id"] = sha
	commit["url"] = fmt.Sprintf("%s/%s/%s/commit/%s", s.srv.URL, Owner, Repo, sha)
	return o
}

func (s *Server) statusJSON(sha string, st *status) map[string]any {
	o := object("api-078-commit-status-combined.json", 0)["statuses"].([]any)[0].(map[string]any)
	o["id"] = st.id
	o["status"] = st.state
	o["target_url"] = st.url
	o["description"] = st.desc
	o["url"] = fmt.Sprintf("%s/api/v1/repos/%s/%s/statuses/%s", s.srv.URL, Owner, Repo, sha)
	o["context"] = st.context
	o["creator"] = s.userJSON(Bot)
	o["created_at"] = ts(st.created)
	o["updated_at"] = ts(st.created)
	return o
}

func (s *Server) reviewJSON(number int64, rv *review) map[string]any {
	o := object("api-086-reviews-list.json", 1)
	pr := fmt.Sprintf("%s/%s/%s/pulls/%d", s.srv.URL, Owner, Repo, number)
	o["id"] = rv.id
	o["user"] = s.userJSON(rv.author)
	o["state"] = rv.state
	o["body"] = rv.body
	o["commit_id"] = s.issues[number].pull.headSHA
	o["comments_count"] = len(rv.comments)
	o["submitted_at"] = ts(rv.submitted)
	o["updated_at"] = ts(rv.submitted)
	o["html_url"] = fmt.Sprintf("%s#issuecomment-%d", pr, rv.id)
	o["pull_request_url"] = pr
	return o
}

func (s *Server) reviewCommentJSON(number int64, rv *review, c *reviewComment) map[string]any {
	o := object("api-088-review-comments.json", 0)
	pr := fmt.Sprintf("%s/%s/%s/pulls/%d", s.srv.URL, Owner, Repo, number)
	o["id"] = c.id
	o["body"] = c.body
	o["user"] = s.userJSON(rv.author)
	o["pull_request_review_id"] = rv.id
	o["created_at"] = ts(c.created)
	o["updated_at"] = ts(c.created)
	o["path"] = c.path
	o["commit_id"] = s.issues[number].pull.headSHA
	o["position"] = c.line
	o["html_url"] = fmt.Sprintf("%s#issuecomment-%d", pr, c.id)
	o["pull_request_url"] = pr
	return o
}

func (s *Server) countComments(number int64) int {
	n := 0
	for _, c := range s.comments {
		if c.issue == number {
			n++
		}
	}
	return n
}
