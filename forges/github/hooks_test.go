package github

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/forges"
)

var hello = forges.Project{Owner: "Codertocat", Name: "Hello-World"}

func headers(event, delivery string) http.Header {
	h := http.Header{}
	h.Set(headerEvent, event)
	h.Set(headerDelivery, delivery)
	return h
}

// fixture reads a payload of the corpus (../../testdata/github).
func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(corpus, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParse(t *testing.T) {
	issue := forges.Target{Project: hello, Kind: forges.TargetIssue, Number: 1}
	pull := forges.Target{Project: hello, Kind: forges.TargetMergeRequest, Number: 2}
	repo := forges.Target{Project: hello}
	const sha = "ec26c3e57ca3a959ca5aad62de7213c562f8c821"
	const statusSHA = "6113728f27ae82c7b1a177c8d03f9e96e0adf246"

	tests := []struct {
		event, file string
		want        forges.Event // pointer fields are checked by check
		check       func(t *testing.T, ev *forges.Event)
	}{
		{"issues", "issues/opened.payload.json", forges.Event{Type: forges.EventIssueOpened, Actor: "Codertocat", Target: issue}, func(t *testing.T, ev *forges.Event) {
			want := &forges.Issue{
				Number: 1, Title: "Spelling error in the README file", Body: "It looks like you accidently spelled 'commit' with two 't's.",
				State: "open", Author: "Codertocat", Labels: []string{"bug"}, Assignees: []string{"Codertocat"},
				URL: "https://github.com/Codertocat/Hello-World/issues/1", UpdatedAt: time.Date(2019, 5, 15, 15, 20, 18, 0, time.UTC),
			}
			got := *ev.Issue
			got.UpdatedAt = got.UpdatedAt.UTC()
			if !reflect.DeepEqual(&got, want) {
				t.Errorf("issue = %+v, want %+v", got, *want)
			}
		}},
		{"issues", "issues/opened.with-empty-body.payload.json", forges.Event{Type: forges.EventIssueOpened, Actor: "Codertocat", Target: issue}, func(t *testing.T, ev *forges.Event) {
			if ev.Issue.Body != "" {
				t.Errorf("body = %q, want empty", ev.Issue.Body)
			}
		}},
		{"issues", "issues/edited.payload.json", forges.Event{Type: forges.EventIssueEdited, Actor: "Codertocat", Target: issue}, nil},
		{"issues", "derived/issues.closed.json", forges.Event{Type: forges.EventIssueClosed, Actor: "Codertocat", Target: issue}, func(t *testing.T, ev *forges.Event) {
			if ev.Issue.State != "closed" {
				t.Errorf("state = %q", ev.Issue.State)
			}
		}},
		{"issues", "issues/reopened.payload.json", forges.Event{Type: forges.EventIssueReopened, Actor: "Codertocat", Target: issue}, nil},
		{"issues", "issues/assigned.payload.json", forges.Event{Type: forges.EventIssueAssigned, Actor: "Codertocat", Target: issue, Assignee: "Codertocat"}, nil},
		{"issues", "issues/unassigned.payload.json", forges.Event{Type: forges.EventIssueUnassigned, Actor: "Codertocat", Target: issue, Assignee: "Codertocat"}, nil},
		{"issues", "issues/labeled.payload.json", forges.Event{
			Type: forges.EventIssueLabeled, Actor: "Codertocat", Target: issue,
			Labels: []string{"bug"}, LabelsAdded: []string{"bug"}, LabelDeltaKnown: true,
		}, nil},
		{"issues", "issues/unlabeled.payload.json", forges.Event{
			Type: forges.EventIssueUnlabeled, Actor: "Codertocat", Target: issue,
			Labels: []string{"bug"}, LabelsRemoved: []string{"bug"}, LabelDeltaKnown: true,
		}, nil},
		{"issues", "issues/locked.payload.json", forges.Event{Type: forges.EventIgnored}, nil},
		{"issues", "issues/deleted.payload.json", forges.Event{Type: forges.EventIgnored}, nil},

		{"issue_comment", "issue_comment/created.payload.json", forges.Event{Type: forges.EventCommentCreated, Actor: "Codertocat", Target: issue}, func(t *testing.T, ev *forges.Event) {
			want := forges.Comment{
				ID: 492700400, Author: "Codertocat", Body: "You are totally right! I'll get this fixed right away.",
				URL:       "https://github.com/Codertocat/Hello-World/issues/1#issuecomment-492700400",
				CreatedAt: time.Date(2019, 5, 15, 15, 20, 21, 0, time.UTC), UpdatedAt: time.Date(2019, 5, 15, 15, 20, 21, 0, time.UTC),
			}
			got := *ev.Comment
			got.CreatedAt, got.UpdatedAt = got.CreatedAt.UTC(), got.UpdatedAt.UTC()
			if got != want {
				t.Errorf("comment = %+v, want %+v", got, want)
			}
		}},
		{"issue_comment", "issue_comment/edited.payload.json", forges.Event{Type: forges.EventCommentEdited, Actor: "Codertocat", Target: issue}, func(t *testing.T, ev *forges.Event) {
			if ev.Comment.Body != "You are totally right! I'll get this fixed today." {
				t.Errorf("body = %q", ev.Comment.Body)
			}
		}},
		{"issue_comment", "derived/issue_comment.created.on-pull-request.json", forges.Event{
			Type: forges.EventCommentCreated, Actor: "Codertocat", Target: forges.Target{Project: hello, Kind: forges.TargetMergeRequest, Number: 1},
		}, nil},
		{"issue_comment", "issue_comment/deleted.payload.json", forges.Event{Type: forges.EventIgnored}, nil},

		{"pull_request", "pull_request/opened.payload.json", forges.Event{Type: forges.EventMergeRequestOpened, Actor: "Codertocat", Target: pull}, func(t *testing.T, ev *forges.Event) {
			want := forges.MergeRequest{
				Number: 2, Title: "Update the README with new information.", Body: "This is a pretty simple change that we need to pull into master.",
				State: forges.MergeRequestOpen, Author: "Codertocat", SourceBranch: "changes", TargetBranch: "master",
				HeadSHA: sha, Mergeable: forges.MergeableUnknown, URL: "https://github.com/Codertocat/Hello-World/pull/2",
			}
			if *ev.MergeRequest != want {
				t.Errorf("merge request = %+v, want %+v", *ev.MergeRequest, want)
			}
		}},
		{"pull_request", "pull_request/opened.with-null-body.json", forges.Event{Type: forges.EventMergeRequestOpened, Actor: "Codertocat", Target: pull}, func(t *testing.T, ev *forges.Event) {
			if ev.MergeRequest.Body != "" {
				t.Errorf("body = %q, want empty", ev.MergeRequest.Body)
			}
		}},
		{"pull_request", "pull_request/reopened.payload.json", forges.Event{Type: forges.EventMergeRequestOpened, Actor: "Codertocat", Target: pull}, nil},
		{"pull_request", "pull_request/synchronize.payload.json", forges.Event{
			Type: forges.EventMergeRequestUpdated, Actor: "Codertocat", Target: pull, Branch: "changes", SHA: sha,
		}, nil},
		{"pull_request", "pull_request/closed.payload.json", forges.Event{Type: forges.EventMergeRequestClosed, Actor: "Codertocat", Target: pull}, func(t *testing.T, ev *forges.Event) {
			if ev.MergeRequest.State != forges.MergeRequestClosed || ev.MergeRequest.Mergeable != forges.MergeableClean {
				t.Errorf("state, mergeable = %q, %q", ev.MergeRequest.State, ev.MergeRequest.Mergeable)
			}
		}},
		{"pull_request", "derived/pull_request.closed.merged.json", forges.Event{Type: forges.EventMergeRequestMerged, Actor: "Codertocat", Target: pull}, func(t *testing.T, ev *forges.Event) {
			if ev.MergeRequest.State != forges.MergeRequestMerged {
				t.Errorf("state = %q", ev.MergeRequest.State)
			}
		}},
		{"pull_request", "pull_request/labeled.payload.json", forges.Event{
			Type: forges.EventIssueLabeled, Actor: "Codertocat", Target: pull,
			Labels: []string{"bug"}, LabelsAdded: []string{"bug"}, LabelDeltaKnown: true,
		}, nil},
		{"pull_request", "pull_request/unlabeled.payload.json", forges.Event{
			Type: forges.EventIssueUnlabeled, Actor: "Codertocat", Target: pull,
			Labels: []string{"bug"}, LabelsRemoved: []string{"bug"}, LabelDeltaKnown: true,
		}, nil},
		{"pull_request", "pull_request/assigned.payload.json", forges.Event{Type: forges.EventIgnored}, nil},
		{"pull_request", "pull_request/ready_for_review.payload.json", forges.Event{Type: forges.EventIgnored}, nil},

		{"pull_request_review", "pull_request_review/submitted.payload.json", forges.Event{Type: forges.EventReviewSubmitted, Actor: "Codertocat", Target: pull}, func(t *testing.T, ev *forges.Event) {
			want := forges.Review{ID: 237895671, State: "commented"}
			if ev.Review == nil || !reflect.DeepEqual(*ev.Review, want) {
				t.Errorf("review = %+v, want %+v", ev.Review, want)
			}
			if ev.MergeRequest == nil || ev.MergeRequest.SourceBranch != "changes" {
				t.Errorf("merge request = %+v", ev.MergeRequest)
			}
		}},
		{"pull_request_review", "pull_request_review/dismissed.payload.json", forges.Event{Type: forges.EventIgnored}, nil},
		{"pull_request_review_comment", "pull_request_review_comment/created.payload.json", forges.Event{Type: forges.EventIgnored}, nil},

		{"status", "status/payload.json", forges.Event{
			Type: forges.EventCIStatusChanged, Actor: "Codertocat", Target: repo, SHA: statusSHA,
		}, func(t *testing.T, ev *forges.Event) {
			want := forges.Check{Name: "default", State: forges.CISuccess}
			if ev.CI == nil || *ev.CI != want {
				t.Errorf("ci = %+v, want %+v", ev.CI, want)
			}
		}},
		{"check_run", "check_run/completed.payload.json", forges.Event{
			Type: forges.EventCIStatusChanged, Actor: "Codertocat", Target: pull, Branch: "changes", SHA: sha,
		}, func(t *testing.T, ev *forges.Event) {
			if ev.CI == nil || ev.CI.Name != "Octocoders-linter" || ev.CI.State != forges.CISuccess {
				t.Errorf("ci = %+v", ev.CI)
			}
		}},
		{"check_run", "check_run/completed.1.payload.json", forges.Event{
			Type: forges.EventCIStatusChanged, Actor: "Codertocat", Target: pull, Branch: "changes", SHA: sha,
		}, func(t *testing.T, ev *forges.Event) {
			if ev.CI == nil || ev.CI.State != forges.CIFailure {
				t.Errorf("ci = %+v, want a failure", ev.CI)
			}
		}},
		{"check_run", "check_run/created.payload.json", forges.Event{Type: forges.EventIgnored}, nil},
		{"check_suite", "check_suite/completed.payload.json", forges.Event{
			Type: forges.EventCIStatusChanged, Actor: "Codertocat", Target: pull, Branch: "changes", SHA: sha,
		}, func(t *testing.T, ev *forges.Event) {
			if ev.CI == nil || ev.CI.State != forges.CISuccess {
				t.Errorf("ci = %+v", ev.CI)
			}
		}},
		{"check_suite", "check_suite/requested.payload.json", forges.Event{Type: forges.EventIgnored}, nil},

		{"delete", "derived/delete.branch.json", forges.Event{Type: forges.EventBranchDeleted, Actor: "Codertocat", Target: repo, Branch: "feature"}, nil},
		{"delete", "delete/payload.json", forges.Event{Type: forges.EventIgnored}, nil},
		{"push", "push/with-new-branch.payload.json", forges.Event{
			Type: forges.EventPush, Actor: "Codertocat", Target: repo, Branch: "master", SHA: statusSHA,
		}, nil},
		{"push", "derived/push.deleted-branch.json", forges.Event{Type: forges.EventBranchDeleted, Actor: "Codertocat", Target: repo, Branch: "feature"}, nil},
		{"push", "push/payload.json", forges.Event{Type: forges.EventIgnored}, nil},
		{"create", "create/payload.json", forges.Event{Type: forges.EventIgnored}, nil},
		{"ping", "ping/payload.json", forges.Event{Type: forges.EventIgnored}, nil},
		{"workflow_run", "workflow_run/completed.payload.json", forges.Event{Type: forges.EventIgnored}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			ev, err := Hooks{}.Parse(headers(tc.event, "72d3162e-cc78-11e3-81ab-4c9367dc0958"), fixture(t, tc.file))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if ev.DeliveryID != "72d3162e-cc78-11e3-81ab-4c9367dc0958" {
				t.Errorf("delivery id = %q", ev.DeliveryID)
			}
			if tc.want.Type == forges.EventIgnored {
				if ev.Type != forges.EventIgnored || ev.Reason == "" {
					t.Fatalf("got %s (reason %q), want ignored with a reason", ev.Type, ev.Reason)
				}
				return
			}
			got := *ev
			got.DeliveryID, got.Issue, got.MergeRequest, got.Comment, got.Review, got.CI = "", nil, nil, nil, nil, nil
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("event =\n %+v\nwant\n %+v", got, tc.want)
			}
			if tc.check != nil {
				tc.check(t, ev)
			}
		})
	}
}

// TestParseCoversEveryEventType makes sure the table above tests each normalized type.
func TestParseCoversEveryEventType(t *testing.T) {
	all := []forges.EventType{
		forges.EventIssueOpened, forges.EventIssueEdited, forges.EventIssueClosed, forges.EventIssueReopened,
		forges.EventIssueAssigned, forges.EventIssueUnassigned, forges.EventIssueLabeled, forges.EventIssueUnlabeled,
		forges.EventCommentCreated, forges.EventCommentEdited,
		forges.EventMergeRequestOpened, forges.EventMergeRequestUpdated, forges.EventMergeRequestMerged, forges.EventMergeRequestClosed,
		forges.EventReviewSubmitted, forges.EventCIStatusChanged, forges.EventBranchDeleted, forges.EventPush, forges.EventIgnored,
	}
	seen := map[forges.EventType]bool{}
	for _, s := range seeds(t) {
		ev, err := Hooks{}.Parse(headers(s.event, "d"), s.body)
		if err == nil {
			seen[ev.Type] = true
		}
	}
	for _, typ := range all {
		if !seen[typ] {
			t.Errorf("no fixture parses to %s", typ)
		}
	}
}

func TestParseMalformed(t *testing.T) {
	tests := []struct {
		name, event string
		body        string
	}{
		{"no event header", "", `{"action":"opened"}`},
		{"not json", "issues", `{"action":`},
		{"truncated payload", "issues", string(fixture(t, "issues/opened.payload.json")[:200])},
		{"issue without repository", "issues", `{"action":"opened","issue":{"number":1}}`},
		{"issue without number", "issues", `{"action":"opened","issue":{},"repository":{"name":"r","owner":{"login":"o"}}}`},
		{"labeled without label", "issues", `{"action":"labeled","issue":{"number":1},"repository":{"name":"r","owner":{"login":"o"}}}`},
		{"wrong type", "pull_request", `{"action":"opened","pull_request":"yes"}`},
		{"ignored event still json", "ping", `not json`},
		{"status without sha", "status", `{"state":"success","repository":{"name":"r","owner":{"login":"o"}}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev, err := Hooks{}.Parse(headers(tc.event, "d"), []byte(tc.body))
			if !errors.Is(err, forges.ErrMalformed) {
				t.Fatalf("Parse = %+v, %v; want ErrMalformed", ev, err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
		})
	}
}

func BenchmarkParse(b *testing.B) {
	body := fixture(b, "pull_request/opened.payload.json")
	h := headers("pull_request", "d")
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := (Hooks{}).Parse(h, body); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerify(b *testing.B) {
	body := fixture(b, "pull_request/opened.payload.json")
	h := headers("pull_request", "d")
	h.Set(headerSignature, "sha256="+forges.SignHMACSHA256("s2", body))
	secrets := []string{"s1", "s2"}
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if err := (Hooks{}).Verify(h, body, secrets); err != nil {
			b.Fatal(err)
		}
	}
}
