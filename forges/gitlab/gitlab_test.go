package gitlab

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	gl "gitlab.com/gitlab-org/api/client-go/v2"

	"github.com/alchemic-studio/alfred/forges"
)

func TestNewNeedsToken(t *testing.T) {
	if _, err := New(Options{BaseURL: "https://gitlab.example.com"}); err == nil {
		t.Error("New without a token succeeded")
	}
}

func TestWebBaseWithAPIPath(t *testing.T) {
	f, err := New(Options{BaseURL: "https://gitlab.example.com/gitlab/api/v4/", Token: "t"})
	if err != nil {
		t.Fatal(err)
	}
	tg := forges.Target{Project: forges.Project{Owner: "a/b", Name: "c"}, Kind: forges.TargetMergeRequest, Number: 3}
	if got, want := f.noteURL(tg, 9), "https://gitlab.example.com/gitlab/a/b/c/-/merge_requests/3#note_9"; got != want {
		t.Errorf("noteURL = %q, want %q", got, want)
	}
}

func TestPermissionLevels(t *testing.T) {
	for level, want := range map[gl.AccessLevelValue]forges.Permission{
		gl.NoPermissions:            forges.PermissionNone,
		gl.MinimalAccessPermissions: forges.PermissionNone,
		gl.GuestPermissions:         forges.PermissionRead,
		gl.PlannerPermissions:       forges.PermissionRead,
		gl.ReporterPermissions:      forges.PermissionRead,
		gl.DeveloperPermissions:     forges.PermissionWrite,
		gl.MaintainerPermissions:    forges.PermissionAdmin,
		gl.OwnerPermissions:         forges.PermissionAdmin,
		gl.AdminPermissions:         forges.PermissionAdmin,
	} {
		if got := permission(level); got != want {
			t.Errorf("permission(%d) = %v, want %v", level, got, want)
		}
	}
}

func TestMergeable(t *testing.T) {
	for _, tc := range []struct {
		status    string
		conflicts bool
		want      forges.Mergeable
	}{
		{"mergeable", false, forges.MergeableClean},
		{"can_be_merged", false, forges.MergeableClean},
		{"not_approved", false, forges.MergeableClean},
		{"ci_must_pass", false, forges.MergeableClean},
		{"conflict", false, forges.MergeableConflict},
		{"cannot_be_merged", false, forges.MergeableConflict},
		{"checking", false, forges.MergeableUnknown},
		{"unchecked", false, forges.MergeableUnknown},
		{"preparing", false, forges.MergeableUnknown},
		{"", false, forges.MergeableUnknown},
		{"mergeable", true, forges.MergeableConflict}, // has_conflicts wins over a stale status
	} {
		if got := mergeable(tc.status, tc.conflicts); got != tc.want {
			t.Errorf("mergeable(%q, %v) = %q, want %q", tc.status, tc.conflicts, got, tc.want)
		}
	}
}

// TestCreateCommentRetries: a POST answered 502 may have been
// applied, so it is not repeated (no duplicate comment); a 429 did nothing
// and is retried.
func TestCreateCommentRetries(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	h.SeedIssue(t, forges.Issue{Number: 1, Title: "t", Author: "alice"})
	tg := forges.Target{Project: h.Project(), Kind: forges.TargetIssue, Number: 1}

	h.FailNext(t, http.StatusBadGateway, 1)
	if _, err := h.forge.CreateComment(ctx, tg, "once"); err == nil {
		t.Error("CreateComment answered 502 succeeded, want the error (a POST is not repeated)")
	}
	h.FailNext(t, http.StatusTooManyRequests, 1)
	if _, err := h.forge.CreateComment(ctx, tg, "after 429"); err != nil {
		t.Errorf("CreateComment after one 429: %v, want a retry to succeed", err)
	}
	got, err := h.forge.Comments(ctx, tg)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Body != "after 429" {
		t.Errorf("comments = %+v, want exactly [after 429]", got)
	}
}

func TestErrorsCarryNoToken(t *testing.T) {
	h := newHarness(t)
	h.FailNext(t, http.StatusInternalServerError, 100000) // more than the budget tries
	_, err := h.forge.Issue(context.Background(), h.Project(), 1)
	if err == nil {
		t.Fatal("Issue succeeded against a failing server")
	}
	if strings.Contains(err.Error(), h.srv.Token()) {
		t.Errorf("error %q contains the token", err)
	}
	if !strings.Contains(err.Error(), "500") || !strings.Contains(err.Error(), "acme/platform/demo#1") {
		t.Errorf("error %q does not say what failed", err)
	}
}

func TestWrongTokenIsNotNotFound(t *testing.T) {
	h := newHarness(t)
	f, err := New(Options{BaseURL: h.srv.URL(), Token: "wrong"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Me(context.Background())
	var er *gl.ErrorResponse
	if err == nil || errors.Is(err, forges.ErrNotFound) || !errors.Is(err, forges.ErrUnauthorized) || !errors.As(err, &er) || er.StatusCode != http.StatusUnauthorized {
		t.Errorf("Me with a wrong token = %v, want a 401 error", err)
	}
}

type pipeline struct {
	ID          int64
	Ref, Status string
}

// TestCIStatusPipelines covers what the contract suite cannot seed: several
// pipelines for one commit and the statuses GitLab has beyond the four states.
func TestCIStatusPipelines(t *testing.T) {
	for _, tc := range []struct {
		name      string
		pipelines []pipeline
		want      forges.CIState
	}{
		{"re-run replaces the older pipeline of a ref", []pipeline{{ID: 1, Ref: "main", Status: "failed"}, {ID: 2, Ref: "main", Status: "success"}}, forges.CISuccess},
		{"older order does not matter", []pipeline{{ID: 9, Ref: "main", Status: "success"}, {ID: 3, Ref: "main", Status: "failed"}}, forges.CISuccess},
		{"branch and merge request pipelines both count", []pipeline{{ID: 1, Ref: "main", Status: "success"}, {ID: 2, Ref: "refs/merge-requests/4/head", Status: "failed"}}, forges.CIFailure},
		{"canceled is failure", []pipeline{{ID: 1, Ref: "main", Status: "canceled"}}, forges.CIFailure},
		{"skipped alone is none", []pipeline{{ID: 1, Ref: "main", Status: "skipped"}}, forges.CINone},
		{"skipped is left out", []pipeline{{ID: 1, Ref: "main", Status: "skipped"}, {ID: 2, Ref: "refs/merge-requests/4/head", Status: "success"}}, forges.CISuccess},
		{"manual waits on a person", []pipeline{{ID: 1, Ref: "main", Status: "manual"}}, forges.CIPending},
		{"created, waiting_for_resource, preparing, scheduled", []pipeline{{ID: 1, Ref: "a", Status: "created"}, {ID: 2, Ref: "b", Status: "waiting_for_resource"}, {ID: 3, Ref: "c", Status: "preparing"}, {ID: 4, Ref: "d", Status: "scheduled"}}, forges.CIPending},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			sha := strings.Repeat("c", 40)
			for _, p := range tc.pipelines {
				h.srv.AddPipeline(p.ID, sha, p.Ref, p.Status)
			}
			got, err := h.forge.CIStatus(context.Background(), h.Project(), sha)
			if err != nil {
				t.Fatal(err)
			}
			if got.State != tc.want {
				t.Errorf("CIStatus = %q (checks %+v), want %q", got.State, got.Checks, tc.want)
			}
		})
	}
}

// TestPaginationFallback: behind a proxy that drops X-Next-Page, the
// listing still walks every page with X-Total-Pages.
func TestPaginationFallback(t *testing.T) {
	calls := 0
	got, err := collect(func(lo gl.ListOptions) ([]int64, *gl.Response, error) {
		calls++
		if calls > 10 {
			t.Fatal("collect does not stop")
		}
		resp := &gl.Response{Response: &http.Response{Header: http.Header{}}, TotalPages: 3}
		return []int64{lo.Page}, resp, nil
	})
	if err != nil || len(got) != 3 || got[2] != 3 {
		t.Errorf("collect = %v, %v; want pages 1, 2, 3", got, err)
	}
}

// TestPaginationStopsOnLoop: a server that keeps pointing back is not followed.
func TestPaginationStopsOnLoop(t *testing.T) {
	calls := 0
	_, err := collect(func(lo gl.ListOptions) ([]int64, *gl.Response, error) {
		calls++
		return []int64{lo.Page}, &gl.Response{Response: &http.Response{Header: http.Header{}}, NextPage: 1}, nil
	})
	if err != nil || calls != 1 {
		t.Errorf("collect made %d calls (err %v), want 1", calls, err)
	}
}

// TestReviewThreadsAndComments: on a merge request, review threads (diff
// notes and discussion notes) are ReviewComments and plain notes are
// Comments, never both.
func TestReviewThreadsAndComments(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	h.SeedMergeRequest(t, forges.MergeRequest{Number: 20, Title: "mr", Author: "alfred-bot", State: forges.MergeRequestOpen,
		SourceBranch: "agent/x", TargetBranch: "main", HeadSHA: strings.Repeat("a", 40), Mergeable: forges.MergeableClean})
	at := time.Date(2026, 11, 30, 4, 0, 0, 0, time.UTC)
	h.SeedReviewComment(t, 20, forges.ReviewComment{Author: "wendy", Body: "on a line", Path: "a.go", Line: 4, CreatedAt: at})
	h.SeedReviewComment(t, 20, forges.ReviewComment{Author: "wendy", Body: "a thread", CreatedAt: at.Add(time.Minute)})
	tg := forges.Target{Project: h.Project(), Kind: forges.TargetMergeRequest, Number: 20}
	h.SeedComment(t, tg, "alice", "plain")

	comments, err := h.forge.Comments(ctx, tg)
	if err != nil {
		t.Fatal(err)
	}
	if len(comments) != 1 || comments[0].Body != "plain" {
		t.Errorf("Comments = %+v, want only the plain note", comments)
	}
	review, err := h.forge.ReviewComments(ctx, h.Project(), 20, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(review) != 2 || review[0].Path != "a.go" || review[0].Line != 4 || review[1].Body != "a thread" || review[1].Path != "" {
		t.Errorf("ReviewComments = %+v, want the diff note then the thread", review)
	}
	if want := h.srv.URL() + "/acme/platform/demo/-/merge_requests/20#note_"; !strings.HasPrefix(review[0].URL, want) {
		t.Errorf("review comment URL = %q, want prefix %q", review[0].URL, want)
	}
}

// TestLabelsStoredWithHash: GitLab stores and wants "#rrggbb"; the Forge
// speaks six hex digits without '#'.
func TestLabelsStoredWithHash(t *testing.T) {
	h := newHarness(t)
	created, _, err := forges.SyncLabels(context.Background(), h.forge, h.Project(), []forges.Label{{Name: "status::in_ci", Color: "c5def5", Description: "waits for CI"}})
	if err != nil || len(created) == 0 {
		t.Fatalf("SyncLabels = %q, %v", created, err)
	}
	for _, l := range h.srv.Labels() {
		if !strings.HasPrefix(l.Color, "#") || len(l.Color) != 7 {
			t.Errorf("label %s stored with colour %q, want #rrggbb", l.Name, l.Color)
		}
	}
}

// TestScopedStatusLabels: on GitLab the status labels keep their
// "status::" form (forges.StatusPrefixOf): scoped labels, so on an edition
// that has them (Premium, the fake's SetPremium) adding a second status
// takes the first off without the bot acting; on the free edition both
// stay, and the engine restores its own.
func TestScopedStatusLabels(t *testing.T) {
	if p := forges.StatusPrefixOf(forges.GitLab, true); p != forges.StatusPrefix {
		t.Fatalf("GitLab's scoped status prefix = %q, want %q", p, forges.StatusPrefix)
	}
	for _, premium := range []bool{true, false} {
		h := newHarness(t)
		h.srv.SetPremium(premium)
		ctx := context.Background()
		n := h.SeedIssue(t, forges.Issue{Number: 3, Title: "t", Author: "alice"})
		tg := forges.Target{Project: h.Project(), Kind: forges.TargetIssue, Number: n}
		for _, l := range []string{"status::in_ci", "type::task", "status::in_review"} {
			if err := h.forge.AddLabels(ctx, tg, l); err != nil {
				t.Fatal(err)
			}
		}
		want := []string{"type::task", "status::in_review"}
		if !premium {
			want = []string{"status::in_ci", "type::task", "status::in_review"}
		}
		if got := h.TargetLabels(t, tg); !slices.Equal(got, want) {
			t.Errorf("premium %v: labels %q, want %q", premium, got, want)
		}
	}
}
