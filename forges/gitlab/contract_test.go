package gitlab

import (
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/forges/forgetest"
	"github.com/alchemic-studio/alfred/forges/gitlab/gitlabtest"
)

// TestContract runs the shared forges contract suite against the Forge
// talking to the stateful fake GitLab API.
func TestContract(t *testing.T) {
	forgetest.Run(t, func(t *testing.T) forgetest.Harness { return newHarness(t) })
}

// harness adapts gitlabtest.Server to forgetest.Harness.
type harness struct {
	srv   *gitlabtest.Server
	forge *Forge
}

func newHarness(t testing.TB) *harness {
	srv := gitlabtest.NewServer(t)
	f, err := New(Options{
		BaseURL: srv.URL(),
		Token:   srv.Token(),
		Retry:   forges.RetryPolicy{AttemptTimeout: 10 * time.Second, MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, Budget: 2 * time.Second},
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return &harness{srv: srv, forge: f}
}

func (h *harness) Forge() forges.Forge { return h.forge }

// Project is in a nested group, so the URL-encoded path is exercised.
func (h *harness) Project() forges.Project {
	p := h.srv.Project()
	p.Forge = "gitlab-test"
	return p
}

func (h *harness) Want() forgetest.Want {
	return forgetest.Want{
		BotLogin:      h.srv.BotLogin(),
		DefaultBranch: gitlabtest.DefaultBranch,
		CloneURL:      h.srv.CloneURL(),
		GitUsername:   "oauth2",
		GitPassword:   h.srv.Token(),
	}
}

func (h *harness) SeedIssue(t testing.TB, is forges.Issue) int64 {
	h.srv.AddIssue(is)
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
	h.srv.AddMergeRequest(mr)
	return mr
}

func (h *harness) SeedComment(t testing.TB, tg forges.Target, author, body string) int64 {
	return h.srv.AddComment(tg, author, body)
}

func (h *harness) SeedCI(t testing.TB, sha string, checks []forges.Check) { h.srv.AddCI(sha, checks) }

func (h *harness) SeedReviewComment(t testing.TB, mr int64, c forges.ReviewComment) time.Time {
	if err := h.srv.AddReviewComment(mr, c); err != nil {
		t.Fatalf("SeedReviewComment: %v", err)
	}
	return c.CreatedAt
}

func (h *harness) FailNext(t testing.TB, status, n int) { h.srv.FailNext(status, n) }

func (h *harness) Hang(t testing.TB, n int) { h.srv.Hang(n) }

func (h *harness) IssueBody(t testing.TB, number int64) string {
	body, ok := h.srv.IssueBody(number)
	if !ok {
		t.Fatalf("IssueBody: no issue %d", number)
	}
	return body
}

func (h *harness) TargetLabels(t testing.TB, tg forges.Target) []string {
	labels, ok := h.srv.TargetLabels(tg)
	if !ok {
		t.Fatalf("TargetLabels: no %s %d", tg.Kind, tg.Number)
	}
	return labels
}
