package forgejotest

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/alchemic-studio/alfred/forges"
)

// These methods change the fake's state directly, as people acting on the
// forge would; none of them sends a webhook.

// SetUser makes login a user with a repository permission: "owner", "admin",
// "write", "read" or "none" (the real server says "read" for any signed-in user
// on a public repository; the fake reports what it is told).
func (s *Server) SetUser(login, permission string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addUser(login, permission, false).permission = permission
}

// AddIssue creates issue is.Number (defining any label it names). Author and
// assignees become users if unknown.
func (s *Server) AddIssue(is forges.Issue) {
	s.mu.Lock()
	defer s.mu.Unlock()
	x := s.addIssue(is.Number, is.Title, is.Body, is.State, is.Author)
	x.labels = s.ensureLabels(is.Labels)
	x.assignees = slices.Clone(is.Assignees)
	for _, a := range is.Assignees {
		s.userFor(a)
	}
}

func (s *Server) ensureLabels(names []string) []int64 {
	var ids []int64
	for _, n := range names {
		l := s.labelByName(n)
		if l == nil {
			l = s.addLabel(n, "ededed", "")
		}
		ids = append(ids, l.id)
	}
	return ids
}

// AddBranch creates or moves branch name to sha.
func (s *Server) AddBranch(name, sha string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.branches[name] = sha
}

// DeleteBranch removes a branch.
func (s *Server) DeleteBranch(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.branches, name)
}

// AddPull creates pull request mr.Number: State open, closed or merged;
// Mergeable conflict makes the API say mergeable false. The source branch is
// created at HeadSHA when missing.
func (s *Server) AddPull(mr forges.MergeRequest) {
	s.mu.Lock()
	defer s.mu.Unlock()
	state := "open"
	if mr.State != forges.MergeRequestOpen && mr.State != "" {
		state = "closed"
	}
	is := s.addIssue(mr.Number, mr.Title, mr.Body, state, mr.Author)
	s.ids.pull++
	base := mr.TargetBranch
	if base == "" {
		base = DefaultBranch
	}
	is.pull = &pull{id: s.ids.pull, head: mr.SourceBranch, base: base, headSHA: mr.HeadSHA, mergeable: mr.Mergeable != forges.MergeableConflict}
	if mr.State == forges.MergeRequestMerged {
		is.pull.merged = true
		is.pull.mergedAt = is.closed
	}
	if _, ok := s.branches[mr.SourceBranch]; !ok {
		s.branches[mr.SourceBranch] = mr.HeadSHA
	}
}

// SetMergeable changes what the API says about pull request number's mergeability.
func (s *Server) SetMergeable(number int64, mergeable bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if is := s.issues[number]; is != nil && is.pull != nil {
		is.pull.mergeable = mergeable
	}
}

// AddComment posts a comment by author on issue or pull request number and returns its id.
func (s *Server) AddComment(number int64, author, body string) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.issues[number] == nil {
		return 0, fmt.Errorf("no issue or pull request %d", number)
	}
	return s.addComment(number, author, body).id, nil
}

// AddStatus records a commit status (state: pending, success, error, failure, warning).
func (s *Server) AddStatus(sha, context, state, description, targetURL string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addStatus(sha, context, state, description, targetURL)
}

// AddReview adds a submitted review by author on pull request number with
// state APPROVED, REQUEST_CHANGES, COMMENT (or REQUEST_REVIEW, PENDING), a
// body and inline comments (all created at submitted).
func (s *Server) AddReview(number int64, author, state, body string, submitted time.Time, inline ...forges.ReviewComment) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if is := s.issues[number]; is == nil || is.pull == nil {
		return fmt.Errorf("no pull request %d", number)
	}
	s.userFor(author)
	s.ids.review++
	rv := &review{id: s.ids.review, author: author, state: strings.ToUpper(state), body: body, submitted: submitted}
	for _, c := range inline {
		s.ids.comment++
		rv.comments = append(rv.comments, &reviewComment{id: s.ids.comment, body: c.Body, path: c.Path, line: c.Line, created: submitted})
	}
	s.reviews[number] = append(s.reviews[number], rv)
	return nil
}

// FailNext makes the next n requests answer status with a JSON message and
// no state change (429 comes with Retry-After: 1).
func (s *Server) FailNext(status, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.fail = append(s.fail, status)
	}
}

// Hang makes the next n requests wait until the client goes away.
func (s *Server) Hang(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hang += n
}

// ClearFaults forgets the failures and hangs FailNext and Hang set that no
// request has taken yet.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail, s.hang = nil, 0
}

// IssueState is a snapshot of an issue or pull request as stored.
type IssueState struct {
	Title, Body, State string
	Labels, Assignees  []string
	Comments           []forges.Comment
}

// Issue returns a snapshot of issue or pull request number.
func (s *Server) Issue(number int64) (IssueState, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	is := s.issues[number]
	if is == nil {
		return IssueState{}, false
	}
	out := IssueState{Title: is.title, Body: is.body, State: is.state, Assignees: slices.Clone(is.assignees)}
	for _, id := range is.labels {
		if l := s.labelByID(id); l != nil {
			out.Labels = append(out.Labels, l.name)
		}
	}
	for _, c := range s.comments {
		if c.issue == number {
			out.Comments = append(out.Comments, forges.Comment{ID: c.id, Author: c.author, Body: c.body, CreatedAt: c.created, UpdatedAt: c.upd})
		}
	}
	return out, true
}

// Labels returns the label definitions.
func (s *Server) Labels() []forges.Label {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []forges.Label
	for _, l := range s.labels {
		out = append(out, forges.Label{Name: l.name, Color: l.color, Description: l.descr, Exclusive: l.exclusive})
	}
	return out
}
