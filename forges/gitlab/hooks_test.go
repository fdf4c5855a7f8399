package gitlab

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/forges/forgetest"
)

// fixture reads a payload of the corpus's webhooks/ (../../testdata/gitlab/webhooks).
func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(corpus, "webhooks", name))
	if err != nil {
		t.Fatalf("read fixture: %v", err)
	}
	return b
}

func hookHeader(event string) http.Header {
	h := http.Header{}
	h.Set(HeaderEvent, event)
	h.Set(HeaderEventUUID, "0b4d1b2c-7a0e-4c1e-9d52-7f0e9d3a2b11")
	return h
}

var (
	testProject  = forges.Project{Owner: "gitlabhq", Name: "gitlab-test"}
	orgProject   = forges.Project{Owner: "gitlab-org", Name: "gitlab-test"}
	mikeProject  = forges.Project{Owner: "mike", Name: "diaspora"}
	issue23      = forges.Target{Project: testProject, Kind: forges.TargetIssue, Number: 23}
	mr1          = forges.Target{Project: testProject, Kind: forges.TargetMergeRequest, Number: 1}
	issueUpdated = time.Date(2013, 12, 3, 17, 15, 43, 0, time.UTC)
)

func issue23State(state, body string, labels, assignees []string, author string) *forges.Issue {
	return &forges.Issue{Number: 23, Title: "New API: create/update/delete file", Body: body, State: state, Author: author,
		Labels: labels, Assignees: assignees, URL: "http://example.com/diaspora/issues/23", UpdatedAt: issueUpdated}
}

func mr1State(state, author string) *forges.MergeRequest {
	return &forges.MergeRequest{Number: 1, Title: "MS-Viewport", State: state, Author: author, SourceBranch: "ms-viewport",
		TargetBranch: "master", HeadSHA: "da1560886d4f094c3e6c9ef40349f7d38b5d27d7", Mergeable: forges.MergeableClean,
		URL: "http://example.com/diaspora/merge_requests/1"}
}

const issueBody = "Create new API for manipulations with repository"

// TestParse parses every recorded payload into the normalized event it
// stands for; the whole event is compared (as JSON, so times compare by value).
func TestParse(t *testing.T) {
	mrUpdatedService := &forges.MergeRequest{Number: 2, Title: "Update client.go 🎉", State: forges.MergeRequestOpen,
		SourceBranch: "next-feature", TargetBranch: "master", HeadSHA: "0ab96a10266b95b4b533dcfd98738015fbe70889",
		Mergeable: forges.MergeableUnknown, URL: "http://10.40.8.5:3200/test/woodpecker/-/merge_requests/2"}
	noteCreated := time.Date(2015, 5, 17, 18, 21, 36, 0, time.UTC)
	diffComment := forges.ReviewComment{ID: 1244, Author: "root", Body: "This MR needs work.",
		Path: "core/src/main/java/com/example/server/CorbaServer.java", Line: 74,
		URL: "http://example.com/gitlab-org/gitlab-test/merge_requests/1#note_1244", CreatedAt: noteCreated}
	threadComment := diffComment
	threadComment.Path, threadComment.Line = "", 0
	pipelineCheck := func(state forges.CIState, desc string) *forges.Check {
		return &forges.Check{Name: "pipeline #31 (master)", State: state, Description: desc,
			URL: "http://192.168.64.1:3005/gitlab-org/gitlab-test/-/pipelines/31"}
	}
	orgMR1 := forges.Target{Project: orgProject, Kind: forges.TargetMergeRequest, Number: 1}
	for _, tc := range []struct {
		file, event string
		want        forges.Event
	}{
		{"issue.json", "Issue Hook", forges.Event{Type: forges.EventIssueOpened, Actor: "root", Target: issue23,
			Issue: issue23State("open", issueBody, []string{"API"}, []string{"user1"}, "root")}},
		{"derived/issue_update_labels.json", "Issue Hook", forges.Event{Type: forges.EventIssueLabeled, Actor: "root", Target: issue23,
			Issue:  issue23State("open", issueBody, []string{"Platform"}, []string{"user1"}, ""),
			Labels: []string{"Platform"}, LabelsAdded: []string{"Platform"}, LabelsRemoved: []string{"API"}, LabelDeltaKnown: true}},
		{"derived/issue_update_unlabeled.json", "Issue Hook", forges.Event{Type: forges.EventIssueUnlabeled, Actor: "root", Target: issue23,
			Issue:  issue23State("open", issueBody, []string{}, []string{"user1"}, ""),
			Labels: []string{}, LabelsRemoved: []string{"API"}, LabelDeltaKnown: true}},
		{"derived/issue_update_assigned.json", "Issue Hook", forges.Event{Type: forges.EventIssueAssigned, Actor: "root", Target: issue23,
			Issue: issue23State("open", issueBody, []string{"API"}, []string{"user1"}, ""), Assignee: "user1"}},
		{"derived/issue_update_unassigned.json", "Issue Hook", forges.Event{Type: forges.EventIssueUnassigned, Actor: "root", Target: issue23,
			Issue: issue23State("open", issueBody, []string{"API"}, []string{}, ""), Assignee: "user1"}},
		{"derived/issue_update_description.json", "Issue Hook", forges.Event{Type: forges.EventIssueEdited, Actor: "root", Target: issue23,
			Issue: issue23State("open", "New description", []string{"API"}, []string{"user1"}, "")}},
		{"derived/issue_update_time_spent.json", "Issue Hook", forges.Event{Type: forges.EventIgnored, Reason: "issue update changes nothing the bot follows"}},
		{"derived/issue_close.json", "Issue Hook", forges.Event{Type: forges.EventIssueClosed, Actor: "root", Target: issue23,
			Issue: issue23State("closed", issueBody, []string{"API"}, []string{"user1"}, "")}},
		{"derived/issue_reopen.json", "Issue Hook", forges.Event{Type: forges.EventIssueReopened, Actor: "root", Target: issue23,
			Issue: issue23State("open", issueBody, []string{"API"}, []string{"user1"}, "")}},

		{"note_issue.json", "Note Hook", forges.Event{Type: forges.EventCommentCreated, Actor: "user1",
			Target: forges.Target{Project: orgProject, Kind: forges.TargetIssue, Number: 17},
			Comment: &forges.Comment{ID: 1241, Author: "user1", Body: "Hello world", URL: "http://example.com/gitlab-org/gitlab-test/issues/17#note_1241",
				CreatedAt: time.Date(2015, 5, 17, 17, 6, 40, 0, time.UTC), UpdatedAt: time.Date(2015, 5, 17, 17, 6, 40, 0, time.UTC)}}},
		{"derived/note_issue_update.json", "Note Hook", forges.Event{Type: forges.EventCommentEdited, Actor: "user1",
			Target: forges.Target{Project: orgProject, Kind: forges.TargetIssue, Number: 17},
			Comment: &forges.Comment{ID: 1241, Author: "user1", Body: "Hello world, edited", URL: "http://example.com/gitlab-org/gitlab-test/issues/17#note_1241",
				CreatedAt: time.Date(2015, 5, 17, 17, 6, 40, 0, time.UTC), UpdatedAt: time.Date(2015, 5, 17, 17, 10, 2, 0, time.UTC)}}},
		{"note_merge_request.json", "Note Hook", forges.Event{Type: forges.EventCommentCreated, Actor: "root", Target: orgMR1,
			Comment: &forges.Comment{ID: 1244, Author: "root", Body: "This MR needs work.", URL: "http://example.com/gitlab-org/gitlab-test/merge_requests/1#note_1244",
				CreatedAt: noteCreated, UpdatedAt: noteCreated}}},
		{"derived/note_merge_request_diffnote.json", "Note Hook", forges.Event{Type: forges.EventReviewSubmitted, Actor: "root", Target: orgMR1,
			Review: &forges.Review{State: "commented", Comments: []forges.ReviewComment{diffComment}}}},
		{"derived/note_merge_request_discussion.json", "Note Hook", forges.Event{Type: forges.EventReviewSubmitted, Actor: "root", Target: orgMR1,
			Review: &forges.Review{State: "commented", Comments: []forges.ReviewComment{threadComment}}}},
		{"note_commit.json", "Note Hook", forges.Event{Type: forges.EventIgnored, Reason: "notes on Commit are not used"}},

		{"merge_request.json", "Merge Request Hook", forges.Event{Type: forges.EventMergeRequestOpened, Actor: "user1", Target: mr1,
			MergeRequest: mr1State(forges.MergeRequestOpen, "user1")}},
		{"derived/merge_request_reopen.json", "Merge Request Hook", forges.Event{Type: forges.EventMergeRequestOpened, Actor: "user1", Target: mr1,
			MergeRequest: mr1State(forges.MergeRequestOpen, "")}},
		{"service_merge_request.json", "Merge Request Hook", forges.Event{Type: forges.EventMergeRequestUpdated, Actor: "test",
			Target:       forges.Target{Project: forges.Project{Owner: "test", Name: "woodpecker"}, Kind: forges.TargetMergeRequest, Number: 2},
			MergeRequest: mrUpdatedService, Branch: "next-feature", SHA: "0ab96a10266b95b4b533dcfd98738015fbe70889"}},
		{"derived/merge_request_update_commits.json", "Merge Request Hook", forges.Event{Type: forges.EventMergeRequestUpdated, Actor: "user1", Target: mr1,
			MergeRequest: mr1State(forges.MergeRequestOpen, ""), Branch: "ms-viewport", SHA: "da1560886d4f094c3e6c9ef40349f7d38b5d27d7"}},
		{"derived/merge_request_update_labels.json", "Merge Request Hook", forges.Event{Type: forges.EventIssueLabeled, Actor: "user1", Target: mr1,
			MergeRequest: mr1State(forges.MergeRequestOpen, ""),
			Labels:       []string{"Platform"}, LabelsAdded: []string{"Platform"}, LabelsRemoved: []string{"API"}, LabelDeltaKnown: true}},
		{"derived/merge_request_merge.json", "Merge Request Hook", forges.Event{Type: forges.EventMergeRequestMerged, Actor: "user1", Target: mr1,
			MergeRequest: mr1State(forges.MergeRequestMerged, "")}},
		{"derived/merge_request_close.json", "Merge Request Hook", forges.Event{Type: forges.EventMergeRequestClosed, Actor: "user1", Target: mr1,
			MergeRequest: mr1State(forges.MergeRequestClosed, "")}},
		{"derived/merge_request_approved.json", "Merge Request Hook", forges.Event{Type: forges.EventReviewSubmitted, Actor: "user1", Target: mr1,
			MergeRequest: mr1State(forges.MergeRequestOpen, ""), Review: &forges.Review{State: "approved"}}},
		{"derived/merge_request_unapproved.json", "Merge Request Hook", forges.Event{Type: forges.EventIgnored, Reason: `merge request action "unapproved" is not used`}},

		{"pipeline.json", "Pipeline Hook", forges.Event{Type: forges.EventCIStatusChanged, Actor: "user1", Target: orgMR1,
			Branch: "master", SHA: "bcbb5ec396a2c0f828686f14fac9b80b780504f2", CI: pipelineCheck(forges.CISuccess, "passed")}},
		{"derived/pipeline_failed.json", "Pipeline Hook", forges.Event{Type: forges.EventCIStatusChanged, Actor: "user1", Target: orgMR1,
			Branch: "master", SHA: "bcbb5ec396a2c0f828686f14fac9b80b780504f2", CI: pipelineCheck(forges.CIFailure, "failed")}},
		{"derived/pipeline_running.json", "Pipeline Hook", forges.Event{Type: forges.EventCIStatusChanged, Actor: "user1", Target: forges.Target{Project: orgProject},
			Branch: "master", SHA: "bcbb5ec396a2c0f828686f14fac9b80b780504f2", CI: pipelineCheck(forges.CIPending, "running")}},
		{"derived/pipeline_skipped.json", "Pipeline Hook", forges.Event{Type: forges.EventIgnored, Reason: "skipped pipeline"}},

		{"push.json", "Push Hook", forges.Event{Type: forges.EventPush, Actor: "jsmith", Target: forges.Target{Project: mikeProject},
			Branch: "master", SHA: "da1560886d4f094c3e6c9ef40349f7d38b5d27d7"}},
		{"derived/push_branch_deleted.json", "Push Hook", forges.Event{Type: forges.EventBranchDeleted, Actor: "jsmith", Target: forges.Target{Project: mikeProject},
			Branch: "feature/old", SHA: "95790bf891e76fee5e1747ab589903a6a1f80f22"}},
		{"tag_push.json", "Tag Push Hook", forges.Event{Type: forges.EventIgnored, Reason: "tag_push events are not used"}},
		{"job.json", "Job Hook", forges.Event{Type: forges.EventIgnored, Reason: "build events are not used"}},
		{"emoji_issue.json", "Emoji Hook", forges.Event{Type: forges.EventIgnored, Reason: "emoji events are not used"}},
		{"project.json", "System Hook", forges.Event{Type: forges.EventIgnored, Reason: "system hook project_create"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			h := hookHeader(tc.event)
			got, err := Hooks{}.Parse(h, fixture(t, tc.file))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			want := tc.want
			var env envelope
			if err := json.Unmarshal(fixture(t, tc.file), &env); err != nil {
				t.Fatal(err)
			}
			want.DeliveryID = h.Get(HeaderEventUUID)
			if env.ObjectKind != "" {
				want.DeliveryID += "/" + env.ObjectKind
			}
			g, _ := json.MarshalIndent(got, "", " ")
			w, _ := json.MarshalIndent(want, "", " ")
			if string(g) != string(w) {
				t.Errorf("Parse(%s) =\n%s\nwant\n%s", tc.file, g, w)
			}
		})
	}
}

// TestParseCoversEveryEventType makes sure each normalized type comes out of
// some recorded payload above.
func TestParseCoversEveryEventType(t *testing.T) {
	seen := map[forges.EventType]string{}
	for _, d := range forgetest.LoadCorpus(t, corpus) {
		if ev, err := (Hooks{}).Parse(d.Header, d.Body); err == nil {
			seen[ev.Type] = d.Path
		}
	}
	for _, ty := range []forges.EventType{
		forges.EventIgnored, forges.EventIssueOpened, forges.EventIssueEdited, forges.EventIssueClosed, forges.EventIssueReopened,
		forges.EventIssueAssigned, forges.EventIssueUnassigned, forges.EventIssueLabeled, forges.EventIssueUnlabeled,
		forges.EventCommentCreated, forges.EventCommentEdited, forges.EventMergeRequestOpened, forges.EventMergeRequestUpdated,
		forges.EventMergeRequestMerged, forges.EventMergeRequestClosed, forges.EventReviewSubmitted, forges.EventCIStatusChanged,
		forges.EventBranchDeleted, forges.EventPush,
	} {
		if _, ok := seen[ty]; !ok {
			t.Errorf("no fixture parses to %s", ty)
		}
	}
}

func TestParseMalformed(t *testing.T) {
	for name, body := range map[string][]byte{
		"empty":                   {},
		"not json":                []byte("object_kind=issue"),
		"json array":              []byte(`[{"object_kind":"issue"}]`),
		"no object_kind":          []byte(`{"object_attributes":{"iid":1}}`),
		"broken keys (recorded)":  fixture(t, "group_merge_request.json"),
		"issue without project":   []byte(`{"object_kind":"issue","object_attributes":{"iid":3,"action":"open"}}`),
		"issue without iid":       []byte(`{"object_kind":"issue","project":{"path_with_namespace":"a/b"},"object_attributes":{"action":"open"}}`),
		"note without its issue":  []byte(`{"object_kind":"note","project":{"path_with_namespace":"a/b"},"object_attributes":{"noteable_type":"Issue"}}`),
		"pipeline without sha":    []byte(`{"object_kind":"pipeline","project":{"path_with_namespace":"a/b"},"object_attributes":{"status":"success"}}`),
		"iid of the wrong type":   []byte(`{"object_kind":"merge_request","project":{"path_with_namespace":"a/b"},"object_attributes":{"iid":"7"}}`),
		"project path has no '/'": []byte(`{"object_kind":"push","ref":"refs/heads/x","project":{"path_with_namespace":"solo"}}`),
	} {
		t.Run(name, func(t *testing.T) {
			ev, err := Hooks{}.Parse(hookHeader("Issue Hook"), body)
			if !errors.Is(err, forges.ErrMalformed) {
				t.Errorf("Parse = %+v, %v; want an error wrapping ErrMalformed", ev, err)
			}
		})
	}
}

// TestParseTruncated cuts every payload of the corpus short: the token still
// verifies (GitLab signs nothing), and Parse refuses the body.
func TestParseTruncated(t *testing.T) {
	for _, d := range forgetest.LoadCorpus(t, corpus) {
		f, body := d.Path, d.Body
		h := d.Header.Clone()
		h.Set(HeaderToken, "s3cret")
		if err := (Hooks{}).Verify(h, body[:len(body)/2], []string{"s3cret"}); err != nil {
			t.Errorf("%s: Verify of a truncated body with the right token: %v", f, err)
		}
		if ev, err := (Hooks{}).Parse(h, body[:len(body)/2]); !errors.Is(err, forges.ErrMalformed) {
			t.Errorf("%s: Parse of a truncated body = %+v, %v; want ErrMalformed", f, ev, err)
		}
	}
}

func TestDeliveryID(t *testing.T) {
	body := fixture(t, "note_issue.json")
	for _, tc := range []struct {
		name    string
		headers map[string]string
		want    string
	}{
		{"idempotency key wins", map[string]string{HeaderIdempotencyKey: "key-1", HeaderEventUUID: "uuid-1"}, "key-1"},
		{"event uuid with the object kind", map[string]string{HeaderEventUUID: "uuid-1"}, "uuid-1/note"},
		{"none", nil, ""},
	} {
		h := http.Header{}
		for k, v := range tc.headers {
			h.Set(k, v)
		}
		ev, err := Hooks{}.Parse(h, body)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if ev.DeliveryID != tc.want {
			t.Errorf("%s: DeliveryID = %q, want %q", tc.name, ev.DeliveryID, tc.want)
		}
	}
}

func TestVerify(t *testing.T) {
	body := fixture(t, "issue.json")
	secrets := []string{"old-secret", "new-secret"}
	for _, tc := range []struct {
		name    string
		token   *string
		secrets []string
		ok      bool
	}{
		{"first secret", ptr("old-secret"), secrets, true},
		{"second secret (rotation)", ptr("new-secret"), secrets, true},
		{"wrong token", ptr("new-secreT"), secrets, false},
		{"prefix of a secret", ptr("new-secre"), secrets, false},
		{"secret with more", ptr("new-secret "), secrets, false},
		{"missing header", nil, secrets, false},
		{"empty header", ptr(""), secrets, false},
		{"empty token never matches an empty secret", ptr(""), []string{""}, false},
		{"no secret configured", ptr("new-secret"), nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := hookHeader("Issue Hook")
			if tc.token != nil {
				h.Set(HeaderToken, *tc.token)
			}
			err := Hooks{}.Verify(h, body, tc.secrets)
			if tc.ok && err != nil {
				t.Errorf("Verify = %v, want nil", err)
			}
			if !tc.ok && !errors.Is(err, forges.ErrBadSignature) {
				t.Errorf("Verify = %v, want an error wrapping ErrBadSignature", err)
			}
			if err != nil && strings.Contains(err.Error(), "secret") && strings.Contains(err.Error(), "new-secret") {
				t.Errorf("Verify error %q leaks a secret", err)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// TestWebhookHandler runs real payloads through the shared handler with
// GitLab's Hooks: verified before parsed, answered as the handler documents.
func TestWebhookHandler(t *testing.T) {
	var got []*forges.Event
	sink := func(_ context.Context, ev *forges.Event) error { got = append(got, ev); return nil }
	srv := httptest.NewServer(forges.NewWebhookHandler("gitlab-main", Hooks{}, []string{"old", "new"}, sink, nil))
	t.Cleanup(srv.Close)
	post := func(token, event string, body []byte) int {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(string(body)))
		if err != nil {
			t.Fatal(err)
		}
		req.Header = hookHeader(event)
		if token != "" {
			req.Header.Set(HeaderToken, token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	label := fixture(t, "derived/issue_update_labels.json")
	for _, tc := range []struct {
		name, token, event string
		body               []byte
		status             int
	}{
		{"accepted", "new", "Issue Hook", label, http.StatusAccepted},
		{"wrong token", "nope", "Issue Hook", label, http.StatusUnauthorized},
		{"no token", "", "Issue Hook", label, http.StatusUnauthorized},
		{"truncated", "old", "Issue Hook", label[:len(label)/3], http.StatusBadRequest},
		{"ignored", "old", "Tag Push Hook", fixture(t, "tag_push.json"), http.StatusOK},
	} {
		if s := post(tc.token, tc.event, tc.body); s != tc.status {
			t.Errorf("%s: status %d, want %d", tc.name, s, tc.status)
		}
	}
	if len(got) != 1 {
		t.Fatalf("sink got %d events, want 1", len(got))
	}
	if ev := got[0]; ev.Type != forges.EventIssueLabeled || ev.Target.Project.Forge != "gitlab-main" || ev.Target.Number != 23 {
		t.Errorf("sink got %+v, want issue_labeled on gitlab-main issue 23", ev)
	}
}

// FuzzParse feeds Parse mutations of every payload of the corpus: it must never
// panic, and must either fail with ErrMalformed or return a typed event whose
// target names a project.
func FuzzParse(f *testing.F) {
	for _, d := range forgetest.LoadCorpus(f, corpus) {
		f.Add(d.Body)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		ev, err := Hooks{}.Parse(hookHeader("Issue Hook"), body)
		if err != nil {
			if !errors.Is(err, forges.ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		if ev == nil || ev.Type == "" {
			t.Fatalf("Parse returned %+v with no error", ev)
		}
		if ev.Type == forges.EventIgnored {
			if ev.Reason == "" {
				t.Fatal("ignored event without a reason")
			}
			return
		}
		if ev.Target.Project.Owner == "" || ev.Target.Project.Name == "" {
			t.Fatalf("%s event without a project: %+v", ev.Type, ev.Target)
		}
		if (ev.Target.Kind == forges.TargetIssue || ev.Target.Kind == forges.TargetMergeRequest) && ev.Target.Number <= 0 {
			t.Fatalf("%s event on %s number %d", ev.Type, ev.Target.Kind, ev.Target.Number)
		}
	})
}

func TestDiff(t *testing.T) {
	for _, tc := range []struct {
		prev, cur, added, removed []string
	}{
		{nil, []string{"a"}, []string{"a"}, nil},
		{[]string{"a"}, nil, nil, []string{"a"}},
		{[]string{"a", "b"}, []string{"b", "c", "d"}, []string{"c", "d"}, []string{"a"}},
		{[]string{"a"}, []string{"a"}, nil, nil},
	} {
		added, removed := diff(tc.prev, tc.cur)
		if !slices.Equal(added, tc.added) || !slices.Equal(removed, tc.removed) {
			t.Errorf("diff(%q, %q) = %q, %q; want %q, %q", tc.prev, tc.cur, added, removed, tc.added, tc.removed)
		}
	}
}
