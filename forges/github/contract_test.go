package github

import (
	"slices"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/forges/forgetest"
)

// TestContract runs the shared forge contract suite against the GitHub
// implementation talking to fakeGitHub.
func TestContract(t *testing.T) {
	forgetest.Run(t, func(t *testing.T) forgetest.Harness {
		srv := newFakeGitHub(t)
		return &harness{srv: srv, forge: newTestForge(t, srv)}
	})
}

func newTestForge(t testing.TB, srv *fakeGitHub) *Forge {
	t.Helper()
	f, err := New(Options{
		BaseURL: srv.baseURL(),
		Token:   srv.token,
		Retry:   forges.RetryPolicy{AttemptTimeout: 10 * time.Second, MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, Budget: 2 * time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// harness adapts fakeGitHub to forgetest.Harness.
type harness struct {
	srv   *fakeGitHub
	forge *Forge
}

func (h *harness) Forge() forges.Forge { return h.forge }

func (h *harness) Project() forges.Project {
	return forges.Project{Forge: "github", Owner: h.srv.owner, Name: h.srv.repo}
}

func (h *harness) Want() forgetest.Want {
	return forgetest.Want{
		BotLogin:      h.srv.bot,
		DefaultBranch: "main",
		CloneURL:      h.srv.cloneURL(),
		GitUsername:   "x-access-token",
		GitPassword:   h.srv.token,
	}
}

func (h *harness) lock() func() {
	h.srv.mu.Lock()
	return h.srv.mu.Unlock
}

// ensureUser creates login with read access unless it exists.
func (h *harness) ensureUser(login string) {
	if _, ok := h.srv.users[login]; !ok {
		h.srv.users[login] = forges.PermissionRead
	}
}

func (h *harness) ensureLabels(names []string) {
	for _, n := range names {
		if h.srv.findLabel(n) == nil {
			h.srv.labels = append(h.srv.labels, &forges.Label{Name: n, Color: "ededed"})
		}
	}
}

func (h *harness) SeedIssue(t testing.TB, is forges.Issue) int64 {
	defer h.lock()()
	if h.srv.issues[is.Number] != nil {
		t.Fatalf("seed issue %d: number taken", is.Number)
	}
	h.ensureUser(is.Author)
	for _, a := range is.Assignees {
		h.ensureUser(a)
	}
	h.ensureLabels(is.Labels)
	h.srv.issues[is.Number] = &fakeIssue{
		number: is.Number, title: is.Title, body: is.Body, state: cmpState(is.State), author: is.Author,
		labels: slices.Clone(is.Labels), assignees: slices.Clone(is.Assignees), updated: h.srv.tick(),
	}
	return is.Number
}

func cmpState(s string) string {
	if s == "" {
		return "open"
	}
	return s
}

func (h *harness) SeedUser(t testing.TB, login string, p forges.Permission) {
	defer h.lock()()
	h.srv.users[login] = p
}

func (h *harness) SeedBranch(t testing.TB, name string) string {
	defer h.lock()()
	sha := forgetest.FakeSHA(name)
	h.srv.branches[name] = sha
	return sha
}

func (h *harness) SeedMergeRequest(t testing.TB, mr forges.MergeRequest) forges.MergeRequest {
	defer h.lock()()
	mr.HeadSHA = forgetest.FakeSHA(mr.SourceBranch)
	if h.srv.issues[mr.Number] != nil {
		t.Fatalf("seed merge request %d: number taken", mr.Number)
	}
	h.ensureUser(mr.Author)
	if _, ok := h.srv.branches[mr.SourceBranch]; !ok {
		h.srv.branches[mr.SourceBranch] = mr.HeadSHA
	}
	if _, ok := h.srv.branches[mr.TargetBranch]; !ok {
		h.srv.branches[mr.TargetBranch] = sha40('0')
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
	h.srv.issues[mr.Number] = &fakeIssue{number: mr.Number, title: mr.Title, body: mr.Body, state: state,
		author: mr.Author, updated: h.srv.tick(), pr: pr}
	if pr.merged {
		delete(h.srv.branches, mr.SourceBranch)
	}
	return mr
}

func sha40(c byte) string {
	b := make([]byte, 40)
	for i := range b {
		b[i] = c
	}
	return string(b)
}

func (h *harness) SeedComment(t testing.TB, tg forges.Target, author, body string) int64 {
	defer h.lock()()
	is := h.srv.issues[tg.Number]
	if is == nil || (tg.Kind == forges.TargetMergeRequest) != (is.pr != nil) {
		t.Fatalf("seed comment: no %s %d", tg.Kind, tg.Number)
	}
	h.ensureUser(author)
	return h.srv.addComment(tg.Number, author, body).id
}

// SeedCI reports even-numbered checks as commit statuses and odd-numbered
// ones as check runs, so that CIStatus is tested on both.
func (h *harness) SeedCI(t testing.TB, sha string, checks []forges.Check) {
	defer h.lock()()
	for i, c := range checks {
		if i%2 == 0 {
			h.srv.statuses[sha] = append(h.srv.statuses[sha], c)
		} else {
			h.srv.runs[sha] = append(h.srv.runs[sha], c)
		}
	}
}

// SeedReviewComment records, as GitHub does, a submitted review for each
// comment: an inline comment belongs to a review with an empty body, a review
// body is the review itself.
func (h *harness) SeedReviewComment(t testing.TB, mr int64, c forges.ReviewComment) time.Time {
	defer h.lock()()
	is := h.srv.issues[mr]
	if is == nil || is.pr == nil {
		t.Fatalf("seed review comment: no merge request %d", mr)
	}
	h.ensureUser(c.Author)
	rv := &fakeReview{id: h.srv.id(), pr: mr, author: c.Author, state: "COMMENTED", submitted: c.CreatedAt}
	h.srv.reviews = append(h.srv.reviews, rv)
	if c.Path == "" {
		rv.body = c.Body
		return c.CreatedAt
	}
	h.srv.rcomments = append(h.srv.rcomments, &fakeReviewComment{
		id: h.srv.id(), review: rv.id, pr: mr, author: c.Author, body: c.Body, path: c.Path, line: c.Line, created: c.CreatedAt,
	})
	return c.CreatedAt
}

func (h *harness) FailNext(t testing.TB, status, n int) {
	defer h.lock()()
	for range n {
		h.srv.failNext = append(h.srv.failNext, status)
	}
}

func (h *harness) Hang(t testing.TB, n int) {
	defer h.lock()()
	h.srv.hang += n
}

func (h *harness) IssueBody(t testing.TB, number int64) string {
	defer h.lock()()
	is := h.srv.issues[number]
	if is == nil {
		t.Fatalf("no issue %d", number)
	}
	return is.body
}

func (h *harness) TargetLabels(t testing.TB, tg forges.Target) []string {
	defer h.lock()()
	is := h.srv.issues[tg.Number]
	if is == nil {
		t.Fatalf("no %s %d", tg.Kind, tg.Number)
	}
	return slices.Clone(is.labels)
}
