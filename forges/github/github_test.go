package github

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/forges/github/githubtest"
)

// These tests cover what the contract suite cannot see: GitHub's own
// status codes, headers and shapes.

func testSetup(t *testing.T) (*githubtest.Server, *Forge, forges.Project) {
	t.Helper()
	srv := githubtest.NewServer(t)
	return srv, newTestForge(t, srv), srv.Project()
}

func sha40(c byte) string { return strings.Repeat(string(c), 40) }

func TestCommentsFollowLinkHeaders(t *testing.T) {
	srv, f, p := testSetup(t)
	h := &harness{srv: srv, forge: f}
	h.SeedIssue(t, forges.Issue{Number: 1, Title: "t", Author: "alice"})
	tg := forges.Target{Project: p, Kind: forges.TargetIssue, Number: 1}
	for range 2*githubtest.MaxPerPage + 1 {
		h.SeedComment(t, tg, "alice", "x")
	}
	before := srv.Requests()
	got, err := f.Comments(t.Context(), tg)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2*githubtest.MaxPerPage+1 {
		t.Errorf("got %d comments, want %d", len(got), 2*githubtest.MaxPerPage+1)
	}
	if n := srv.Requests() - before; n != 3 {
		t.Errorf("Comments made %d requests, want 3 pages", n)
	}
}

func TestIssueIsNotAPullRequest(t *testing.T) {
	srv, f, p := testSetup(t)
	h := &harness{srv: srv, forge: f}
	h.SeedMergeRequest(t, forges.MergeRequest{Number: 20, Title: "mr", Author: "alice", State: forges.MergeRequestOpen,
		SourceBranch: "b", TargetBranch: "main", HeadSHA: sha40('1')})
	if _, err := f.Issue(t.Context(), p, 20); !errors.Is(err, forges.ErrNotFound) {
		t.Errorf("Issue(pull request) = %v, want ErrNotFound", err)
	}
	mr, err := f.MergeRequest(t.Context(), p, 20)
	if err != nil {
		t.Fatal(err)
	}
	if mr.Mergeable != forges.MergeableUnknown {
		t.Errorf("mergeable null = %q, want unknown", mr.Mergeable)
	}
}

func TestRemoveLabelFromMissingIssue(t *testing.T) {
	_, f, p := testSetup(t)
	err := f.RemoveLabel(t.Context(), forges.Target{Project: p, Kind: forges.TargetIssue, Number: 99}, "x")
	if !errors.Is(err, forges.ErrNotFound) {
		t.Errorf("RemoveLabel on a missing issue = %v, want ErrNotFound", err)
	}
}

func TestPrimaryRateLimitWaitsForReset(t *testing.T) {
	reset := strconv.FormatInt(time.Now().Add(time.Second).Unix(), 10)
	srv, calls := rateLimited(t, http.StatusForbidden, map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": reset}, 1)
	f, err := New(Options{BaseURL: srv.URL, Token: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Me(t.Context()); err != nil {
		t.Fatalf("Me after a primary rate limit: %v", err)
	}
	if *calls != 2 {
		t.Errorf("made %d requests, want 2 (one limited, one after the reset)", *calls)
	}
}

// rateLimited answers 403 or 429 with the given headers, then 200.
func rateLimited(t *testing.T, status int, hdr map[string]string, times int) (*httptest.Server, *int) {
	calls := new(int)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*calls++
		if *calls <= times {
			for k, v := range hdr {
				w.Header().Set(k, v)
			}
			w.WriteHeader(status)
			_, _ = w.Write([]byte(`{"message":"limited","documentation_url":"https://docs.github.com/rest"}`))
			return
		}
		_, _ = w.Write([]byte(`{"login":"alfred-bot","id":7}`))
	}))
	t.Cleanup(srv.Close)
	return srv, calls
}

func TestRateLimitAnswers(t *testing.T) {
	tests := []struct {
		name      string
		status    int
		hdr       map[string]string
		wantCalls int
		wantErr   bool
	}{
		{"secondary limit with Retry-After", 429, map[string]string{"Retry-After": "0"}, 2, false},
		{"403 secondary limit with Retry-After", 403, map[string]string{"Retry-After": "0"}, 2, false},
		{"429 without headers backs off", 429, nil, 2, false},
		{"403 without rate-limit headers is a refusal", 403, nil, 1, true},
		{"reset beyond the budget", 403, map[string]string{
			"X-RateLimit-Remaining": "0",
			"X-RateLimit-Reset":     "9999999999",
		}, 1, true},
		{"Retry-After beyond the budget", 429, map[string]string{"Retry-After": "3600"}, 1, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv, calls := rateLimited(t, tc.status, tc.hdr, 1)
			f, err := New(Options{BaseURL: srv.URL, Token: "t", Retry: forges.RetryPolicy{MinBackoff: time.Millisecond, Budget: 5 * time.Second}})
			if err != nil {
				t.Fatal(err)
			}
			_, err = f.Me(t.Context())
			if (err != nil) != tc.wantErr {
				t.Errorf("Me error = %v, want error %v", err, tc.wantErr)
			}
			if *calls != tc.wantCalls {
				t.Errorf("%d calls, want %d", *calls, tc.wantCalls)
			}
		})
	}
}

func TestRateLimitWaitHonoursContext(t *testing.T) {
	srv, calls := rateLimited(t, 429, map[string]string{"Retry-After": "30"}, 1)
	f, err := New(Options{BaseURL: srv.URL, Token: "t"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if _, err := f.Me(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Me = %v, want the context's deadline while waiting out the limit", err)
	}
	if *calls != 1 {
		t.Errorf("%d calls, want 1", *calls)
	}
}

func TestAttemptTimeoutIsRetried(t *testing.T) {
	srv := githubtest.NewServer(t)
	srv.Hang(1)
	f, err := New(Options{BaseURL: srv.URL(), Token: srv.Token(), Retry: forges.RetryPolicy{AttemptTimeout: 100 * time.Millisecond, MinBackoff: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	me, err := f.Me(t.Context())
	if err != nil || me.Login != srv.BotLogin() {
		t.Fatalf("Me after one hung attempt = %+v, %v", me, err)
	}
	if n := srv.Requests(); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

func TestPermissionRoles(t *testing.T) {
	roles := map[string]string{ // user -> JSON answer
		"adm":    `{"permission":"admin","role_name":"admin"}`,
		"mnt":    `{"permission":"write","role_name":"maintain"}`,
		"wrt":    `{"permission":"write","role_name":"write"}`,
		"tri":    `{"permission":"read","role_name":"triage"}`,
		"rd":     `{"permission":"read","role_name":"read"}`,
		"custom": `{"permission":"write","role_name":"security-manager"}`,
		"legacy": `{"permission":"admin"}`,
		"none":   `{"permission":"none","role_name":""}`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/api/v3"), "/") // /repos/o/r/collaborators/{user}/permission
		if len(parts) != 7 || roles[parts[5]] == "" {
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"message":"Not Found"}`))
			return
		}
		_, _ = w.Write([]byte(roles[parts[5]]))
	}))
	t.Cleanup(srv.Close)
	f, err := New(Options{BaseURL: srv.URL, Token: "t"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]forges.Permission{
		"adm": forges.PermissionAdmin, "mnt": forges.PermissionAdmin, "wrt": forges.PermissionWrite,
		"tri": forges.PermissionRead, "rd": forges.PermissionRead, "custom": forges.PermissionWrite,
		"legacy": forges.PermissionAdmin, "none": forges.PermissionNone, "ghost": forges.PermissionNone,
	}
	for user, w := range want {
		got, err := f.Permission(t.Context(), forges.Project{Owner: "o", Name: "r"}, user)
		if err != nil || got != w {
			t.Errorf("Permission(%s) = %v, %v; want %v", user, got, err, w)
		}
	}
}

func TestReviewCommentsSkipPendingAndEmptyReviews(t *testing.T) {
	srv, f, p := testSetup(t)
	h := &harness{srv: srv, forge: f}
	h.SeedMergeRequest(t, forges.MergeRequest{Number: 20, Title: "mr", Author: srv.BotLogin(), State: forges.MergeRequestOpen,
		SourceBranch: "b", TargetBranch: "main", HeadSHA: sha40('1')})
	t0 := time.Date(2026, 11, 30, 4, 0, 0, 0, time.UTC)
	h.SeedReviewComment(t, 20, forges.ReviewComment{Author: "alice", Body: "inline", Path: "a.go", Line: 4, CreatedAt: t0})
	h.SeedReviewComment(t, 20, forges.ReviewComment{Author: "alice", Body: "   ", CreatedAt: t0.Add(time.Minute)})
	if _, err := srv.AddReview(20, "alice", "PENDING", "draft", t0.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	got, err := f.ReviewComments(t.Context(), p, 20, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Body != "inline" || got[0].Path != "a.go" || got[0].Line != 4 || got[0].ReviewID == 0 {
		t.Errorf("ReviewComments = %+v, want only the inline comment with its review id", got)
	}
}

func TestCheckRunState(t *testing.T) {
	tests := []struct {
		status, conclusion string
		want               forges.CIState
	}{
		{"queued", "", forges.CIPending},
		{"in_progress", "", forges.CIPending},
		{"completed", "success", forges.CISuccess},
		{"completed", "neutral", forges.CISuccess},
		{"completed", "skipped", forges.CISuccess},
		{"completed", "failure", forges.CIFailure},
		{"completed", "cancelled", forges.CIFailure},
		{"completed", "timed_out", forges.CIFailure},
		{"completed", "action_required", forges.CIFailure},
		{"completed", "startup_failure", forges.CIFailure},
		{"completed", "stale", forges.CIPending},
	}
	for _, tc := range tests {
		if got := checkRunState(tc.status, tc.conclusion); got != tc.want {
			t.Errorf("checkRunState(%s, %s) = %s, want %s", tc.status, tc.conclusion, got, tc.want)
		}
	}
	for s, want := range map[string]forges.CIState{"success": forges.CISuccess, "failure": forges.CIFailure, "error": forges.CIFailure, "pending": forges.CIPending} {
		if got := statusState(s); got != want {
			t.Errorf("statusState(%s) = %s, want %s", s, got, want)
		}
	}
}

func TestNewRejectsBadBaseURL(t *testing.T) {
	if _, err := New(Options{BaseURL: "not a url"}); err == nil {
		t.Error("New accepted a base URL without a host")
	}
}

func TestTokenNotInErrors(t *testing.T) {
	srv, f, p := testSetup(t)
	srv.FailNext(http.StatusInternalServerError, 100)
	_, err := f.Issue(t.Context(), p, 1)
	if err == nil || strings.Contains(err.Error(), srv.Token()) {
		t.Errorf("error = %v; want an error without the token", err)
	}
}

func TestLabelNamesAreEscaped(t *testing.T) {
	srv, f, p := testSetup(t)
	h := &harness{srv: srv, forge: f}
	name := "area/ui: needs work? 100%"
	if err := f.CreateLabel(t.Context(), p, forges.Label{Name: name, Color: "#00ff00", Description: "d"}); err != nil {
		t.Fatal(err)
	}
	if err := f.UpdateLabel(t.Context(), p, forges.Label{Name: name, Color: "0000ff", Description: "new"}); err != nil {
		t.Fatalf("UpdateLabel: %v", err)
	}
	h.SeedIssue(t, forges.Issue{Number: 1, Title: "t", Author: "alice", Labels: []string{name, "other"}})
	tg := forges.Target{Project: p, Kind: forges.TargetIssue, Number: 1}
	if err := f.RemoveLabel(t.Context(), tg, name); err != nil {
		t.Fatalf("RemoveLabel: %v", err)
	}
	if got := h.TargetLabels(t, tg); len(got) != 1 || got[0] != "other" {
		t.Errorf("labels after RemoveLabel = %q, want [other]", got)
	}
	ls, err := f.Labels(t.Context(), p)
	if err != nil || len(ls) != 2 || ls[0].Name != name || ls[0].Color != "0000ff" || ls[0].Description != "new" {
		t.Errorf("Labels = %+v, %v", ls, err)
	}
}

func TestPostNotRetriedWhenItMayHaveApplied(t *testing.T) {
	for _, tc := range []struct {
		status       int
		wantRequests int
	}{{http.StatusBadGateway, 1}, {http.StatusInternalServerError, 1}, {http.StatusServiceUnavailable, 2}} {
		srv, f, p := testSetup(t)
		h := &harness{srv: srv, forge: f}
		h.SeedIssue(t, forges.Issue{Number: 1, Title: "t", Author: "alice"})
		h.FailNext(t, tc.status, 1)
		before := srv.Requests()
		_, err := f.CreateComment(t.Context(), forges.Target{Project: p, Kind: forges.TargetIssue, Number: 1}, "hi")
		if n := srv.Requests() - before; n != tc.wantRequests {
			t.Errorf("POST answered %d: %d requests, want %d", tc.status, n, tc.wantRequests)
		}
		if (err == nil) != (tc.wantRequests == 2) {
			t.Errorf("POST answered %d: err = %v", tc.status, err)
		}
	}
}
