package forgejo_test

import (
	"slices"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/forges/forgejo"
	"github.com/alchemic-studio/alfred/forges/forgejo/forgejotest"
	"github.com/alchemic-studio/alfred/forges/forgetest"
)

// harness adapts the fake Forgejo to the contract suite.
type harness struct {
	srv   *forgejotest.Server
	forge *forgejo.Forge
}

func newHarness(t *testing.T) forgetest.Harness {
	srv := forgejotest.NewServer(t)
	f, err := forgejo.New(forgejo.Options{
		BaseURL: srv.URL(), Token: forgejotest.BotToken, Username: forgejotest.Bot,
		Retry: forges.RetryPolicy{MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, AttemptTimeout: 10 * time.Second, Budget: 2 * time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	return &harness{srv: srv, forge: f}
}

func TestContract(t *testing.T) { forgetest.Run(t, newHarness) }

func (h *harness) Forge() forges.Forge { return h.forge }

func (h *harness) Project() forges.Project {
	return forges.Project{Forge: "forgejo", Owner: forgejotest.Owner, Name: forgejotest.Repo}
}

func (h *harness) Want() forgetest.Want {
	return forgetest.Want{BotLogin: forgejotest.Bot, DefaultBranch: forgejotest.DefaultBranch, CloneURL: h.srv.CloneURL(),
		GitUsername: forgejotest.Bot, GitPassword: forgejotest.BotToken}
}

func (h *harness) SeedIssue(t testing.TB, is forges.Issue) int64 {
	h.srv.AddIssue(is)
	return is.Number
}

func (h *harness) SeedUser(t testing.TB, login string, p forges.Permission) {
	h.srv.SetUser(login, map[forges.Permission]string{
		forges.PermissionAdmin: "admin", forges.PermissionWrite: "write", forges.PermissionRead: "read", forges.PermissionNone: "none",
	}[p])
}

func (h *harness) SeedBranch(t testing.TB, name string) string {
	sha := forgetest.FakeSHA(name)
	h.srv.AddBranch(name, sha)
	return sha
}

func (h *harness) SeedMergeRequest(t testing.TB, mr forges.MergeRequest) forges.MergeRequest {
	mr.HeadSHA = forgetest.FakeSHA(mr.SourceBranch)
	h.srv.AddPull(mr)
	if mr.State == forges.MergeRequestMerged {
		h.srv.DeleteBranch(mr.SourceBranch)
	}
	return mr
}

func (h *harness) SeedComment(t testing.TB, tg forges.Target, author, body string) int64 {
	id, err := h.srv.AddComment(tg.Number, author, body)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func (h *harness) SeedCI(t testing.TB, sha string, checks []forges.Check) {
	for _, c := range checks {
		h.srv.AddStatus(sha, c.Name, string(c.State), c.Description, c.URL)
	}
}

func (h *harness) SeedReviewComment(t testing.TB, mr int64, c forges.ReviewComment) time.Time {
	var err error
	if c.Path == "" {
		err = h.srv.AddReview(mr, c.Author, "COMMENT", c.Body, c.CreatedAt)
	} else {
		err = h.srv.AddReview(mr, c.Author, "COMMENT", "", c.CreatedAt, c)
	}
	if err != nil {
		t.Fatal(err)
	}
	return c.CreatedAt
}

func (h *harness) FailNext(t testing.TB, status, n int) { h.srv.FailNext(status, n) }

func (h *harness) Hang(t testing.TB, n int) { h.srv.Hang(n) }

func (h *harness) IssueBody(t testing.TB, number int64) string {
	is, ok := h.srv.Issue(number)
	if !ok {
		t.Fatalf("no issue %d", number)
	}
	return is.Body
}

func (h *harness) TargetLabels(t testing.TB, tg forges.Target) []string {
	is, ok := h.srv.Issue(tg.Number)
	if !ok {
		t.Fatalf("no %s %d", tg.Kind, tg.Number)
	}
	return slices.Clone(is.Labels)
}
