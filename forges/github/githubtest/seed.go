package githubtest

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/alchemic-studio/alfred/forges"
)

// DefaultBranch is the repository's default branch.
const DefaultBranch = "main"

// URL is the API root to give forges/github as BaseURL (Enterprise style,
// ending in /api/v3/).
func (f *Server) URL() string { return f.baseURL() }

// Token is the bot's token; the fake answers 401 Bad credentials to any other.
func (f *Server) Token() string { return f.token }

// BotLogin is the user the token belongs to (write access).
func (f *Server) BotLogin() string { return f.bot }

// Project is the fake's one repository.
func (f *Server) Project() forges.Project { return forges.Project{Owner: f.owner, Name: f.repo} }

// CloneURL is the repository's clone_url.
func (f *Server) CloneURL() string { return f.cloneURL() }

// SetUser makes login a user with permission p on the repository
// (PermissionNone: a user without access).
func (f *Server) SetUser(login string, p forges.Permission) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.users[login] = p
}

// ensureUser creates login with read access unless it exists; mu held.
func (f *Server) ensureUser(login string) {
	if _, ok := f.users[login]; !ok {
		f.users[login] = forges.PermissionRead
	}
}

// ensureLabels defines the labels named that do not exist yet; mu held.
func (f *Server) ensureLabels(names []string) {
	for _, n := range names {
		if f.findLabel(n) == nil {
			f.labels = append(f.labels, &forges.Label{Name: n, Color: "ededed"})
		}
	}
}

// AddIssue creates issue is.Number ("" state is open) with its author,
// assignees (created with read access when new) and labels (defined with
// the colour ededed when new). The number must be free.
func (f *Server) AddIssue(is forges.Issue) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.issues[is.Number] != nil {
		return fmt.Errorf("issue %d: number taken", is.Number)
	}
	f.ensureUser(is.Author)
	for _, a := range is.Assignees {
		f.ensureUser(a)
	}
	f.ensureLabels(is.Labels)
	state := is.State
	if state == "" {
		state = "open"
	}
	f.issues[is.Number] = &fakeIssue{
		number: is.Number, title: is.Title, body: is.Body, state: state, author: is.Author,
		labels: slices.Clone(is.Labels), assignees: slices.Clone(is.Assignees), updated: f.tick(),
	}
	return nil
}

// AddBranch points branch name at sha.
func (f *Server) AddBranch(name, sha string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.branches[name] = sha
}

// DeleteBranch removes branch name, as a merge that deletes its branch does.
func (f *Server) DeleteBranch(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.branches, name)
}

// AddMergeRequest creates pull request mr.Number (the number must be free),
// with its source branch at mr.HeadSHA and its target branch (at a zero SHA)
// when missing. Mergeable clean is "mergeable": true, conflict false, anything
// else null; a state other than open ("" is open) is closed, and merged sets
// merged.
func (f *Server) AddMergeRequest(mr forges.MergeRequest) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.issues[mr.Number] != nil {
		return fmt.Errorf("merge request %d: number taken", mr.Number)
	}
	f.ensureUser(mr.Author)
	if _, ok := f.branches[mr.SourceBranch]; !ok {
		f.branches[mr.SourceBranch] = mr.HeadSHA
	}
	if _, ok := f.branches[mr.TargetBranch]; !ok {
		f.branches[mr.TargetBranch] = strings.Repeat("0", 40)
	}
	pr := &fakePull{head: mr.SourceBranch, base: mr.TargetBranch, sha: mr.HeadSHA, merged: mr.State == forges.MergeRequestMerged}
	switch mr.Mergeable {
	case forges.MergeableClean:
		pr.mergeable = new(true)
	case forges.MergeableConflict:
		pr.mergeable = new(false)
	}
	state := "open"
	if mr.State != forges.MergeRequestOpen && mr.State != "" {
		state = "closed"
	}
	f.issues[mr.Number] = &fakeIssue{number: mr.Number, title: mr.Title, body: mr.Body, state: state,
		author: mr.Author, updated: f.tick(), pr: pr}
	return nil
}

// AddComment posts a comment by author (created with read access when new)
// on the issue or pull request tg and returns its id.
func (f *Server) AddComment(tg forges.Target, author, body string) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	is := f.issues[tg.Number]
	if is == nil || (tg.Kind == forges.TargetMergeRequest) != (is.pr != nil) {
		return 0, fmt.Errorf("no %s %d", tg.Kind, tg.Number)
	}
	f.ensureUser(author)
	return f.addComment(tg.Number, author, body).id, nil
}

// AddCI reports checks for commit sha: even-numbered ones as commit
// statuses, odd-numbered ones as check runs, so that both are read.
func (f *Server) AddCI(sha string, checks []forges.Check) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, c := range checks {
		if i%2 == 0 {
			f.statuses[sha] = append(f.statuses[sha], c)
		} else {
			f.runs[sha] = append(f.runs[sha], c)
		}
	}
}

// AddStatus reports c as a commit status of sha.
func (f *Server) AddStatus(sha string, c forges.Check) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.statuses[sha] = append(f.statuses[sha], c)
}

// AddCheckRun reports c as a check run of sha.
func (f *Server) AddCheckRun(sha string, c forges.Check) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.runs[sha] = append(f.runs[sha], c)
}

// AddReview records a review of pull request mr by author in state
// (COMMENTED, APPROVED, CHANGES_REQUESTED, PENDING, ...) with body, submitted
// at submitted, and returns its id.
func (f *Server) AddReview(mr int64, author, state, body string, submitted time.Time) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	is := f.issues[mr]
	if is == nil || is.pr == nil {
		return 0, fmt.Errorf("no merge request %d", mr)
	}
	f.ensureUser(author)
	rv := &fakeReview{id: f.id(), pr: mr, author: author, body: body, state: state, submitted: submitted}
	f.reviews = append(f.reviews, rv)
	return rv.id, nil
}

// AddReviewComment records, as GitHub does, a submitted review (COMMENTED)
// for the comment: an inline comment (c.Path set) belongs to a review with an
// empty body; without a path the comment is the review's body.
func (f *Server) AddReviewComment(mr int64, c forges.ReviewComment) error {
	review, err := f.AddReview(mr, c.Author, "COMMENTED", "", c.CreatedAt)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if c.Path == "" {
		for _, rv := range f.reviews {
			if rv.id == review {
				rv.body = c.Body
			}
		}
		return nil
	}
	f.rcomments = append(f.rcomments, &fakeReviewComment{
		id: f.id(), review: review, pr: mr, author: c.Author, body: c.Body, path: c.Path, line: c.Line, created: c.CreatedAt,
	})
	return nil
}

// FailNext makes the next n requests answer status without touching state,
// with the headers and body GitHub sends with it: 429 is a secondary rate
// limit with Retry-After: 1, 403 a plain permission refusal (no rate-limit
// headers).
func (f *Server) FailNext(status, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for range n {
		f.failNext = append(f.failNext, status)
	}
}

// Hang makes the next n requests wait until the client gives up.
func (f *Server) Hang(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hang += n
}
