package forgejo_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/forges/forgejo"
	"github.com/alchemic-studio/alfred/forges/forgejo/forgejotest"
)

func newForge(t *testing.T) (*forgejotest.Server, *forgejo.Forge, forges.Project, context.Context) {
	t.Helper()
	srv := forgejotest.NewServer(t)
	f, err := forgejo.New(forgejo.Options{BaseURL: srv.URL(), Token: forgejotest.BotToken, Retry: forges.RetryPolicy{MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return srv, f, forges.Project{Owner: forgejotest.Owner, Name: forgejotest.Repo}, ctx
}

func TestNewDoesNoIO(t *testing.T) {
	srv, _, _, _ := newForge(t)
	if n := srv.Requests(); n != 0 {
		t.Errorf("New made %d requests, want none (no /version call)", n)
	}
	if _, err := forgejo.New(forgejo.Options{BaseURL: srv.URL()}); err == nil {
		t.Error("New without a token succeeded")
	}
}

func TestSiteAdminAndOwnerAreAdmin(t *testing.T) {
	_, f, p, ctx := newForge(t)
	for _, user := range []string{forgejotest.Bot, forgejotest.Owner} { // Forgejo says "owner" for both
		if got, err := f.Permission(ctx, p, user); err != nil || got != forges.PermissionAdmin {
			t.Errorf("Permission(%s) = %v, %v; want admin", user, got, err)
		}
	}
}

func TestMissingIssueCommentsIsNotFoundWithoutRetry(t *testing.T) {
	srv, f, p, ctx := newForge(t)
	before := srv.Requests()
	_, err := f.Comments(ctx, forges.Target{Project: p, Kind: forges.TargetIssue, Number: 999})
	if !errors.Is(err, forges.ErrNotFound) {
		t.Errorf("Comments of a missing issue = %v, want ErrNotFound (Forgejo answers 500)", err)
	}
	if n := srv.Requests() - before; n != 1 {
		t.Errorf("%d requests, want 1: a 500 'does not exist' is not retried", n)
	}
}

func TestPostNotRetriedOnInternalError(t *testing.T) {
	srv, f, p, ctx := newForge(t)
	srv.AddIssue(forges.Issue{Number: 1, Title: "t", Author: "alice"})
	for _, code := range []int{500, 502, 504} {
		srv.FailNext(code, 1)
		if _, err := f.CreateComment(ctx, forges.Target{Project: p, Kind: forges.TargetIssue, Number: 1}, "x"); err == nil {
			t.Errorf("CreateComment after a %d succeeded: a POST that may have been applied must not be retried", code)
		}
	}
	srv.FailNext(503, 1)
	if _, err := f.CreateComment(ctx, forges.Target{Project: p, Kind: forges.TargetIssue, Number: 1}, "y"); err != nil {
		t.Errorf("CreateComment after a 503: %v, want a retry", err)
	}
	is, _ := srv.Issue(1)
	if len(is.Comments) != 1 || is.Comments[0].Body != "y" {
		t.Errorf("comments = %+v, want exactly the retried one", is.Comments)
	}
}

func TestAddUndefinedLabel(t *testing.T) {
	srv, f, p, ctx := newForge(t)
	srv.AddIssue(forges.Issue{Number: 1, Title: "t", Author: "alice"})
	err := f.AddLabels(ctx, forges.Target{Project: p, Kind: forges.TargetIssue, Number: 1}, "no-such-label")
	if !errors.Is(err, forges.ErrNotFound) {
		t.Errorf("AddLabels(undefined) = %v, want ErrNotFound", err)
	}
}

func TestCombinedStatusIgnoresUnknownStates(t *testing.T) {
	srv, f, p, ctx := newForge(t)
	sha := "57270c4a21aac4b0f6a5aa05cc714b4f4c961e94"
	srv.AddStatus(sha, "ci/lint", "success", "", "")
	srv.AddStatus(sha, "ci/test", "broken", "", "") // Forgejo accepts unknown states (201)
	srv.AddStatus(sha, "ci/build", "warning", "", "")
	got, err := f.CIStatus(ctx, p, sha)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != forges.CISuccess || len(got.Checks) != 2 {
		t.Errorf("CIStatus = %+v, want success from lint and build, the unknown state left out", got)
	}
}

func TestMergedPullRequestAfterBranchDeletion(t *testing.T) {
	srv, f, p, ctx := newForge(t)
	srv.AddPull(forges.MergeRequest{Number: 3, Title: "t", Author: "bot", State: forges.MergeRequestOpen, SourceBranch: "agent/x", TargetBranch: "main", HeadSHA: "57270c4a21aac4b0f6a5aa05cc714b4f4c961e94"})
	srv.SetMergeable(3, false)
	mr, err := f.MergeRequest(ctx, p, 3)
	if err != nil || mr.Mergeable != forges.MergeableConflict {
		t.Errorf("MergeRequest = %+v, %v; want a conflict", mr, err)
	}
	if ok, err := f.BranchExists(ctx, p, "agent/x"); err != nil || !ok {
		t.Errorf("BranchExists(agent/x) = %v, %v", ok, err)
	}
	srv.DeleteBranch("agent/x")
	if ok, err := f.BranchExists(ctx, p, "agent/x"); err != nil || ok {
		t.Errorf("BranchExists after delete = %v, %v", ok, err)
	}
}

func TestPagingBelowAskedPageSize(t *testing.T) {
	srv, f, p, ctx := newForge(t)
	srv.SetMaxResponseItems(7) // an instance with MAX_RESPONSE_ITEMS below the 50 asked for
	for i := range 20 {
		if err := f.CreateLabel(ctx, p, forges.Label{Name: fmt.Sprintf("l%02d", i), Color: "ededed"}); err != nil {
			t.Fatal(err)
		}
		srv.AddPull(forges.MergeRequest{Number: int64(100 + i), Title: "t", Author: "alice", State: forges.MergeRequestOpen,
			SourceBranch: fmt.Sprintf("b/%d", i), TargetBranch: "main", HeadSHA: "57270c4a21aac4b0f6a5aa05cc714b4f4c961e94"})
	}
	if got, err := f.Labels(ctx, p); err != nil || len(got) != 20 {
		t.Errorf("Labels = %d labels, %v; want 20 over 3 pages of 7 (X-Total-Count only)", len(got), err)
	}
	if mr, err := f.MergeRequestForBranch(ctx, p, "b/0"); err != nil || mr.Number != 100 {
		t.Errorf("MergeRequestForBranch(b/0) = %+v, %v; want 100 from the last page (Link)", mr, err)
	}
}

// TestRefusedTokenNotQuoted: Forgejo 15 quotes the token it refuses
// ("access token does not exist [sha: <the token>]"); the error says it was
// refused, never the token.
func TestRefusedTokenNotQuoted(t *testing.T) {
	const tok = "0123456789abcdef0123456789abcdef01234567"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"message":"access token does not exist [sha: %s]","url":"http://x/api/swagger"}`, r.Header.Get("Authorization")[len("token "):])
	}))
	defer srv.Close()
	f, err := forgejo.New(forgejo.Options{BaseURL: srv.URL, Token: tok})
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Me(context.Background())
	if !errors.Is(err, forges.ErrUnauthorized) || strings.Contains(err.Error(), tok) || !strings.Contains(err.Error(), "[sha: (hidden)]") {
		t.Fatalf("Me with a refused token: %v; want ErrUnauthorized without the token", err)
	}
}
