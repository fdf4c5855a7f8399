package gitlabtest

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/alchemic-studio/alfred/forges"
)

// URL is the instance root to give forges/gitlab as BaseURL.
func (f *Server) URL() string { return f.srv.URL }

// Token is the bot's access token; the fake answers 401 to any other.
func (f *Server) Token() string { return f.token }

// BotLogin is the user the token belongs to (a maintainer of the project).
func (f *Server) BotLogin() string { return f.bot }

// Project is the fake's one project, in a nested group.
func (f *Server) Project() forges.Project {
	i := strings.LastIndexByte(f.path, '/')
	return forges.Project{Owner: f.path[:i], Name: f.path[i+1:]}
}

// CloneURL is the project's http_url_to_repo.
func (f *Server) CloneURL() string { return f.srv.URL + "/" + f.path + ".git" }

// SetUser makes login a user with permission p on the project: maintainer
// for admin, developer for write, reporter for read, no membership for none.
func (f *Server) SetUser(login string, p forges.Permission) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.user(login).Access = map[forges.Permission]int{
		forges.PermissionAdmin: 40, forges.PermissionWrite: 30, forges.PermissionRead: 20, forges.PermissionNone: accessNone,
	}[p]
}

// AddIssue creates issue is.Number ("" state is open), with its author,
// assignees and labels (created with read access and a default colour when
// new).
func (f *Server) AddIssue(is forges.Issue) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seedUser(is.Author)
	for _, a := range is.Assignees {
		f.seedUser(a)
	}
	f.ensureLabels(is.Labels)
	state := "opened"
	if is.State == "closed" {
		state = "closed"
	}
	now := f.tick()
	f.issues[is.Number] = &fakeIssue{ID: f.id(), IID: is.Number, Title: is.Title, Description: is.Body, State: state,
		Author: is.Author, Labels: slices.Clone(is.Labels), Assignees: slices.Clone(is.Assignees), CreatedAt: now, UpdatedAt: now}
}

// AddBranch points branch name at sha.
func (f *Server) AddBranch(name, sha string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.branches[name] = sha
}

// AddMergeRequest creates merge request mr.Number, and its source branch at
// HeadSHA if missing. Mergeable clean is detailed_merge_status "mergeable",
// conflict is "conflict" with has_conflicts, anything else "checking".
func (f *Server) AddMergeRequest(mr forges.MergeRequest) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seedUser(mr.Author)
	if _, ok := f.branches[mr.SourceBranch]; !ok {
		f.branches[mr.SourceBranch] = mr.HeadSHA
	}
	state := map[string]string{forges.MergeRequestOpen: "opened", forges.MergeRequestClosed: "closed", forges.MergeRequestMerged: "merged", "": "opened"}[mr.State]
	status, conflicts := "checking", false
	switch mr.Mergeable {
	case forges.MergeableClean:
		status = "mergeable"
	case forges.MergeableConflict:
		status, conflicts = "conflict", true
	}
	now := f.tick()
	f.mrs[mr.Number] = &fakeMR{ID: f.id(), IID: mr.Number, Title: mr.Title, Description: mr.Body, State: state, Author: mr.Author,
		Source: mr.SourceBranch, Target: mr.TargetBranch, SHA: mr.HeadSHA, DetailedMergeStatus: status, HasConflicts: conflicts,
		CreatedAt: now, UpdatedAt: now}
}

// AddComment posts a plain note by author on the issue or merge request tg
// and returns its id.
func (f *Server) AddComment(tg forges.Target, author, body string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seedUser(author)
	return f.addNote(noteKeyOf(tg), author, body, "", time.Time{}).ID
}

func noteKeyOf(tg forges.Target) noteKey {
	if tg.Kind == forges.TargetMergeRequest {
		return noteKey{"merge_requests", tg.Number}
	}
	return noteKey{"issues", tg.Number}
}

// AddCI runs one pipeline on the default branch for sha whose jobs are the
// checks, and returns its id.
func (f *Server) AddCI(sha string, checks []forges.Check) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.tick()
	p := &fakePipeline{ID: f.id(), IID: int64(len(f.pipelines) + 1), SHA: sha, Ref: DefaultBranch, CreatedAt: now, UpdatedAt: now}
	var jobs []string
	for _, c := range checks {
		st := jobStatus(c.State)
		jobs = append(jobs, st)
		f.statuses = append(f.statuses, &fakeStatus{ID: f.id(), PipelineID: p.ID, SHA: sha, Ref: p.Ref, Status: st, Name: c.Name,
			TargetURL: c.URL, Description: c.Description, CreatedAt: now})
	}
	p.Status = pipelineStatus(jobs)
	f.pipelines = append(f.pipelines, p)
	return p.ID
}

// AddPipeline records a pipeline without jobs, with id and any GitLab
// pipeline status (success, failed, canceled, skipped, manual, running, ...).
func (f *Server) AddPipeline(id int64, sha, ref, status string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.tick()
	f.pipelines = append(f.pipelines, &fakePipeline{ID: id, IID: id, SHA: sha, Ref: ref, Status: status, CreatedAt: now, UpdatedAt: now})
}

// AddReviewComment adds a review thread on merge request mr: a DiffNote when
// c.Path is set, else a DiscussionNote (what a review's overview comment
// becomes), created at c.CreatedAt.
func (f *Server) AddReviewComment(mr int64, c forges.ReviewComment) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.mrs[mr] == nil {
		return fmt.Errorf("no merge request %d", mr)
	}
	f.seedUser(c.Author)
	typ := "DiscussionNote"
	if c.Path != "" {
		typ = "DiffNote"
	}
	n := f.addNote(noteKey{"merge_requests", mr}, c.Author, c.Body, typ, c.CreatedAt)
	n.Path, n.Line = c.Path, c.Line
	return nil
}

// FailNext makes the next n requests answer status without touching state;
// 429 comes with Retry-After: 1 and GitLab's RateLimit-* headers.
func (f *Server) FailNext(status, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failCode, f.failN = status, n
}

// Hang makes the next n requests wait until the client gives up.
func (f *Server) Hang(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hangN = n
}

// IssueBody is the stored description of issue number.
func (f *Server) IssueBody(number int64) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	is, ok := f.issues[number]
	if !ok {
		return "", false
	}
	return is.Description, true
}

// TargetLabels are the label names on an issue or merge request.
func (f *Server) TargetLabels(tg forges.Target) ([]string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if tg.Kind == forges.TargetMergeRequest {
		if mr, ok := f.mrs[tg.Number]; ok {
			return slices.Clone(mr.Labels), true
		}
		return nil, false
	}
	if is, ok := f.issues[tg.Number]; ok {
		return slices.Clone(is.Labels), true
	}
	return nil, false
}

// Labels are the project's label definitions, colours as GitLab stores them
// ("#" and six hex digits).
func (f *Server) Labels() []forges.Label {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]forges.Label, 0, len(f.labels))
	for _, l := range f.labels {
		out = append(out, forges.Label{Name: l.Name, Color: l.Color, Description: l.Description})
	}
	return out
}
