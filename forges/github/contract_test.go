package github

import (
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/forges/forgetest"
	"github.com/alchemic-studio/alfred/forges/github/githubtest"
)

// TestContract runs the shared forge contract suite against the GitHub
// implementation talking to the githubtest fake.
func TestContract(t *testing.T) {
	forgetest.Run(t, func(t *testing.T) forgetest.Harness {
		srv := githubtest.NewServer(t)
		return &harness{srv: srv, forge: newTestForge(t, srv)}
	})
}

func newTestForge(t testing.TB, srv *githubtest.Server) *Forge {
	t.Helper()
	f, err := New(Options{
		BaseURL: srv.URL(),
		Token:   srv.Token(),
		Retry:   forges.RetryPolicy{AttemptTimeout: 10 * time.Second, MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, Budget: 2 * time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// harness adapts githubtest.Server to forgetest.Harness.
type harness struct {
	srv   *githubtest.Server
	forge *Forge
}

func (h *harness) Forge() forges.Forge { return h.forge }

func (h *harness) Project() forges.Project {
	p := h.srv.Project()
	p.Forge = "github"
	return p
}

func (h *harness) Want() forgetest.Want {
	return forgetest.Want{
		BotLogin:      h.srv.BotLogin(),
		DefaultBranch: githubtest.DefaultBranch,
		CloneURL:      h.srv.CloneURL(),
		GitUsername:   "x-access-token",
		GitPassword:   h.srv.Token(),
	}
}

func (h *harness) SeedIssue(t testing.TB, is forges.Issue) int64 {
	if err := h.srv.AddIssue(is); err != nil {
		t.Fatalf("seed issue: %v", err)
	}
	return is.Number
}

func (h *harness) SeedUser(t testing.TB, login string, p forges.Permission) { h.srv.SetUser(login, p) }

func (h *harness) SeedBranch(t testing.TB, name string) string {
	sha := forgetest.FakeSHA(name)
	h.srv.AddBranch(name, sha)
	return sha
}

func (h *harness) SeedMergeRequest(t testing.TB, mr forges.MergeRequest) forges.MergeRequest {
	mr.HeadSHA = forgetest.FakeSHA(mr.SourceBranch)
	if err := h.srv.AddMergeRequest(mr); err != nil {
		t.Fatalf("seed merge request: %v", err)
	}
	if mr.State == forges.MergeRequestMerged {
		h.srv.DeleteBranch(mr.SourceBranch)
	}
	return mr
}

func (h *harness) SeedComment(t testing.TB, tg forges.Target, author, body string) int64 {
	id, err := h.srv.AddComment(tg, author, body)
	if err != nil {
		t.Fatalf("seed comment: %v", err)
	}
	return id
}

// SeedCI reports even-numbered checks as commit statuses and odd-numbered
// ones as check runs, so that CIStatus is tested on both.
func (h *harness) SeedCI(t testing.TB, sha string, checks []forges.Check) { h.srv.AddCI(sha, checks) }

func (h *harness) SeedReviewComment(t testing.TB, mr int64, c forges.ReviewComment) time.Time {
	if err := h.srv.AddReviewComment(mr, c); err != nil {
		t.Fatalf("seed review comment: %v", err)
	}
	return c.CreatedAt
}

func (h *harness) FailNext(t testing.TB, status, n int) { h.srv.FailNext(status, n) }

func (h *harness) Hang(t testing.TB, n int) { h.srv.Hang(n) }

func (h *harness) IssueBody(t testing.TB, number int64) string {
	body, ok := h.srv.IssueBody(number)
	if !ok {
		t.Fatalf("no issue %d", number)
	}
	return body
}

func (h *harness) TargetLabels(t testing.TB, tg forges.Target) []string {
	labels, ok := h.srv.TargetLabels(tg)
	if !ok {
		t.Fatalf("no %s %d", tg.Kind, tg.Number)
	}
	return labels
}
