package gitlabtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/forges/gitlab"
	"github.com/alchemic-studio/alfred/forges/gitlab/gitlabtest"
)

// receiver is the bot's webhook endpoint: it records what it is sent, verifies
// and parses it with forges/gitlab's Hooks, and answers status.
type receiver struct {
	t      *testing.T
	secret string
	mu     sync.Mutex
	got    []received
	status int
}

type received struct {
	header http.Header
	body   []byte
	ev     *forges.Event
	err    error
}

func newReceiver(t *testing.T, f *gitlabtest.Server, secret string) *receiver {
	rc := &receiver{t: t, secret: secret, status: http.StatusAccepted}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	f.SetWebhook(srv.URL+"/webhooks/gitlab", secret)
	return rc
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	got := received{header: r.Header.Clone(), body: body}
	if err := (gitlab.Hooks{}).Verify(r.Header, body, []string{rc.secret}); err != nil {
		got.err = err
	} else {
		got.ev, got.err = gitlab.Hooks{}.Parse(r.Header, body)
	}
	rc.mu.Lock()
	rc.got = append(rc.got, got)
	status := rc.status
	rc.mu.Unlock()
	w.WriteHeader(status)
}

// take returns what was received since the last take.
func (rc *receiver) take() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	out := rc.got
	rc.got = nil
	return out
}

// one is the one event of a delivery, checked as GitLab sends it: an Issue
// Hook or a Note Hook.
func (rc *receiver) one(d gitlabtest.Delivery, err error) *forges.Event {
	rc.t.Helper()
	if err != nil || d.Status != http.StatusAccepted || d.Err != nil || d.Event != "Issue Hook" && d.Event != "Note Hook" {
		rc.t.Fatalf("delivery %+v, %v; want an issue or note hook answered 202", d, err)
	}
	got := rc.take()
	if len(got) != 1 {
		rc.t.Fatalf("%d deliveries, want 1", len(got))
	}
	return rc.check(got[0], d.Event)
}

// check verifies the headers GitLab sends and that the parser took the body.
func (rc *receiver) check(g received, event string) *forges.Event {
	rc.t.Helper()
	h := g.header
	if h.Get("X-Gitlab-Event") != event || h.Get("X-Gitlab-Token") != rc.secret || h.Get("Content-Type") != "application/json" ||
		h.Get("X-Gitlab-Event-UUID") == "" || h.Get("Idempotency-Key") == "" || h.Get("X-Gitlab-Webhook-UUID") == "" ||
		!strings.HasPrefix(h.Get("User-Agent"), "GitLab/") || h.Get("X-Gitlab-Instance") == "" {
		rc.t.Errorf("headers %v, want GitLab's for %s", h, event)
	}
	if g.err != nil {
		rc.t.Fatalf("gitlab.Hooks refused the %s: %v\n%s", event, g.err, g.body)
	}
	if !json.Valid(g.body) || bytes.Contains(g.body, []byte("\n  ")) {
		rc.t.Errorf("body is not compact JSON: %s", g.body)
	}
	return g.ev
}

// TestRecordingsAreTheCorpus: the webhook bodies start from the corpus'
// GitLab examples, copied unchanged.
func TestRecordingsAreTheCorpus(t *testing.T) {
	files, _ := filepath.Glob("recordings/*.json")
	if len(files) == 0 {
		t.Fatal("no recordings")
	}
	for _, f := range files {
		mine, _ := os.ReadFile(f)
		corpus, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "gitlab", "webhooks", filepath.Base(f)))
		if err != nil || !bytes.Equal(mine, corpus) {
			t.Errorf("%s differs from testdata/gitlab/webhooks (%v)", f, err)
		}
	}
}

// TestActsDeliverWebhooks: each person's action changes the fake and
// delivers the hook GitLab sends, with its token, which forges/gitlab's
// Hooks verify and parse into the event the bot expects.
func TestActsDeliverWebhooks(t *testing.T) {
	f := gitlabtest.NewServer(t)
	f.SetUser("alice", forges.PermissionWrite)
	rc := newReceiver(t, f, "gl-s3cret")
	p, bot := f.Project(), f.BotLogin()
	issue := forges.Target{Project: p, Kind: forges.TargetIssue, Number: 7}

	ev := rc.one(f.ActOpenIssue(forges.Issue{Number: 7, Title: "Greet", Body: "Say hello.", Author: "alice", Labels: []string{"type::task"}}))
	if ev.Type != forges.EventIssueOpened || ev.Actor != "alice" || ev.Target != issue || ev.Issue.Title != "Greet" || ev.Issue.Body != "Say hello." ||
		ev.Issue.Author != "alice" || !slices.Equal(ev.Issue.Labels, []string{"type::task"}) || ev.Issue.State != "open" ||
		!strings.HasSuffix(ev.Issue.URL, "/acme/platform/demo/-/issues/7") || ev.DeliveryID == "" {
		t.Errorf("open: %+v %+v", ev, ev.Issue)
	}
	ev = rc.one(f.ActAssign(7, bot, "alice"))
	if ev.Type != forges.EventIssueAssigned || ev.Actor != "alice" || ev.Assignee != bot || ev.Target != issue ||
		!slices.Equal(ev.Issue.Assignees, []string{bot}) {
		t.Errorf("assign: %+v %+v", ev, ev.Issue)
	}
	ev = rc.one(f.ActLabel(7, "alice", []string{"ai::validate_plan"}, nil))
	if ev.Type != forges.EventIssueLabeled || !ev.LabelDeltaKnown || !slices.Equal(ev.LabelsAdded, []string{"ai::validate_plan"}) ||
		len(ev.LabelsRemoved) != 0 || !slices.Equal(ev.Labels, []string{"type::task", "ai::validate_plan"}) {
		t.Errorf("label: %+v", ev)
	}
	ev = rc.one(f.ActLabel(7, "alice", nil, []string{"ai::validate_plan"}))
	if ev.Type != forges.EventIssueUnlabeled || !slices.Equal(ev.LabelsRemoved, []string{"ai::validate_plan"}) {
		t.Errorf("unlabel: %+v", ev)
	}
	ev = rc.one(f.ActComment(7, "alice", "Any news?"))
	comments := f.Comments(issue)
	if ev.Type != forges.EventCommentCreated || ev.Actor != "alice" || ev.Target != issue || ev.Comment == nil ||
		ev.Comment.Body != "Any news?" || ev.Comment.Author != "alice" || len(comments) != 1 || ev.Comment.ID != comments[0].ID ||
		ev.Comment.CreatedAt.IsZero() {
		t.Errorf("comment: %+v %+v", ev, ev.Comment)
	}
	ev = rc.one(f.ActEditBody(7, "alice", "Say hello, politely."))
	if ev.Type != forges.EventIssueEdited || ev.Issue.Body != "Say hello, politely." {
		t.Errorf("edit: %+v", ev)
	}
	ev = rc.one(f.ActUnassign(7, bot, "alice"))
	if ev.Type != forges.EventIssueUnassigned || ev.Assignee != bot || len(ev.Issue.Assignees) != 0 {
		t.Errorf("unassign: %+v", ev)
	}
	ev = rc.one(f.ActClose(7, "alice"))
	if ev.Type != forges.EventIssueClosed || ev.Issue.State != "closed" {
		t.Errorf("close: %+v", ev)
	}
	ev = rc.one(f.ActReopen(7, "alice"))
	if ev.Type != forges.EventIssueReopened || ev.Issue.State != "open" {
		t.Errorf("reopen: %+v", ev)
	}
	if is, _ := f.Issue(7); is.State != "open" || is.Body != "Say hello, politely." || len(is.Assignees) != 0 || !slices.Equal(is.Labels, []string{"type::task"}) {
		t.Errorf("the issue after the acts: %+v", is)
	}

	// Merge request notes: a plain one is a comment, a thread's a review.
	f.AddMergeRequest(forges.MergeRequest{Number: 3, Title: "Greet", Author: bot, SourceBranch: "agent/issue-7", TargetBranch: "main", HeadSHA: strings.Repeat("a", 40)})
	mrT := forges.Target{Project: p, Kind: forges.TargetMergeRequest, Number: 3}
	ev = rc.one(f.ActCommentMergeRequest(3, "alice", "Looks good"))
	if ev.Type != forges.EventCommentCreated || ev.Target != mrT || ev.Comment.Body != "Looks good" {
		t.Errorf("merge request comment: %+v", ev)
	}
	ev = rc.one(f.ActReviewComment(3, "alice", "Greet in French too."))
	if ev.Type != forges.EventReviewSubmitted || ev.Target != mrT || ev.Review == nil || len(ev.Review.Comments) != 1 ||
		ev.Review.Comments[0].Body != "Greet in French too." {
		t.Errorf("review comment: %+v", ev)
	}

	// Every delivery has its own ids; the endpoint's answer is reported.
	seen := map[string]bool{}
	for _, d := range f.Deliveries() {
		if seen[d.Key] || seen[d.UUID] {
			t.Errorf("ids used twice: %+v", d)
		}
		seen[d.Key], seen[d.UUID] = true, true
	}
	rc.mu.Lock()
	rc.status = http.StatusUnauthorized
	rc.mu.Unlock()
	if d, err := f.ActComment(7, "alice", "again"); err != nil || d.Status != http.StatusUnauthorized {
		t.Errorf("delivery refused: %+v %v", d, err)
	}
	if _, err := f.ActAssign(99, bot, "alice"); err == nil {
		t.Error("assigning a missing issue: no error")
	}
	// A wrong token is refused by the parser's Verify.
	rc.take()
	if err := (gitlab.Hooks{}).Verify(http.Header{"X-Gitlab-Token": {"other"}}, nil, []string{"gl-s3cret"}); err == nil {
		t.Error("a wrong token verified")
	}
}

// TestNoWebhookNoDelivery: without SetWebhook the acts change the fake and
// send nothing.
func TestNoWebhookNoDelivery(t *testing.T) {
	f := gitlabtest.NewServer(t)
	if d, err := f.ActOpenIssue(forges.Issue{Number: 1, Title: "x", Author: "alice"}); err != nil || d != (gitlabtest.Delivery{}) {
		t.Fatalf("%+v %v", d, err)
	}
	if d, err := f.ActAssign(1, f.BotLogin(), "alice"); err != nil || d.Status != 0 {
		t.Fatalf("%+v %v", d, err)
	}
	if is, _ := f.Issue(1); !slices.Equal(is.Assignees, []string{f.BotLogin()}) {
		t.Fatalf("not assigned: %+v", is)
	}
}

// TestAPIChangesDeliverWebhooks: what the bot does through the API fires
// the hooks GitLab fires, in the bot's name, so that the bot hears its own
// changes (and must ignore them); a change that changes nothing fires none.
func TestAPIChangesDeliverWebhooks(t *testing.T) {
	ctx := context.Background()
	f := gitlabtest.NewServer(t)
	fg, err := gitlab.New(gitlab.Options{BaseURL: f.URL(), Token: f.Token()})
	if err != nil {
		t.Fatal(err)
	}
	f.AddIssue(forges.Issue{Number: 2, Title: "Greet", Body: "Say hello.", Author: "alice", Labels: []string{"type::task"}})
	f.AddBranch("agent/issue-2", strings.Repeat("b", 40))
	rc := newReceiver(t, f, "tok")
	p, bot := f.Project(), f.BotLogin()
	issue := forges.Target{Project: p, Kind: forges.TargetIssue, Number: 2}
	next := func(event string) *forges.Event {
		t.Helper()
		f.Flush()
		got := rc.take()
		if len(got) != 1 {
			t.Fatalf("%d deliveries, want one %s", len(got), event)
		}
		return rc.check(got[0], event)
	}

	c, err := fg.CreateComment(ctx, issue, "Working on it.")
	if err != nil {
		t.Fatal(err)
	}
	if ev := next("Note Hook"); ev.Type != forges.EventCommentCreated || ev.Actor != bot || ev.Comment.ID != c.ID || ev.Comment.Body != "Working on it." {
		t.Errorf("comment: %+v", ev)
	}
	if _, err := fg.EditComment(ctx, issue, c.ID, "Done."); err != nil {
		t.Fatal(err)
	}
	if ev := next("Note Hook"); ev.Type != forges.EventCommentEdited || ev.Actor != bot || ev.Comment.Body != "Done." {
		t.Errorf("edited comment: %+v", ev)
	}
	if err := fg.AddLabels(ctx, issue, "status::analysis"); err != nil {
		t.Fatal(err)
	}
	if ev := next("Issue Hook"); ev.Type != forges.EventIssueLabeled || ev.Actor != bot || !slices.Equal(ev.LabelsAdded, []string{"status::analysis"}) {
		t.Errorf("labels: %+v", ev)
	}
	if err := fg.SetIssueBody(ctx, p, 2, "Say hello.\n\n## Functional analysis"); err != nil {
		t.Fatal(err)
	}
	if ev := next("Issue Hook"); ev.Type != forges.EventIssueEdited || ev.Actor != bot {
		t.Errorf("body: %+v", ev)
	}
	// Removing a label that is not there changes nothing: no hook.
	if err := fg.RemoveLabel(ctx, issue, "absent"); err != nil {
		t.Fatal(err)
	}
	f.Flush()
	if got := rc.take(); len(got) != 0 {
		t.Errorf("a change of nothing sent %d hooks", len(got))
	}
	mr, err := fg.CreateMergeRequest(ctx, p, forges.NewMergeRequest{Title: "Greet", Body: "Closes #2", SourceBranch: "agent/issue-2", TargetBranch: "main"})
	if err != nil {
		t.Fatal(err)
	}
	if ev := next("Merge Request Hook"); ev.Type != forges.EventMergeRequestOpened || ev.Actor != bot || ev.MergeRequest.Number != mr.Number ||
		ev.MergeRequest.SourceBranch != "agent/issue-2" || ev.MergeRequest.HeadSHA != strings.Repeat("b", 40) {
		t.Errorf("merge request: %+v %+v", ev, ev.MergeRequest)
	}
	if err := fg.AddLabels(ctx, forges.Target{Project: p, Kind: forges.TargetMergeRequest, Number: mr.Number}, "status::in_ci"); err != nil {
		t.Fatal(err)
	}
	if ev := next("Merge Request Hook"); ev.Type != forges.EventIssueLabeled || ev.Target.Kind != forges.TargetMergeRequest || ev.Actor != bot {
		t.Errorf("merge request labels: %+v", ev)
	}
}

// TestServeGit: the project's git is served at its http_url_to_repo to the
// user oauth2 with the bot's token, as GitLab serves a private project; a
// push moves the branches the API reports and sends Push Hooks, and a
// Merge Request Hook update with oldrev for an open merge request of the
// pushed branch.
func TestServeGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("git is needed: %v", err)
	}
	ctx := context.Background()
	f := gitlabtest.NewServer(t)
	bare := filepath.Join(t.TempDir(), "demo.git")
	work := t.TempDir()
	gitRun(t, "", "init", "--quiet", "--bare", "--initial-branch=main", bare)
	gitRun(t, "", "init", "--quiet", "--initial-branch=main", work)
	os.WriteFile(filepath.Join(work, "README.md"), []byte("demo\n"), 0o644)
	gitRun(t, work, "add", ".")
	gitRun(t, work, "commit", "--quiet", "-m", "initial")
	gitRun(t, work, "push", "--quiet", bare, "main")
	if err := f.ServeGit(bare); err != nil {
		t.Fatal(err)
	}
	fg, err := gitlab.New(gitlab.Options{BaseURL: f.URL(), Token: f.Token()})
	if err != nil {
		t.Fatal(err)
	}
	p := f.Project()
	clone, err := fg.CloneURL(ctx, p)
	if err != nil || clone != f.CloneURL() || !strings.HasSuffix(clone, "/acme/platform/demo.git") {
		t.Fatalf("clone URL %q, %v", clone, err)
	}
	main := strings.TrimSpace(gitRun(t, "", "-C", bare, "rev-parse", "main"))
	if sha, ok := f.Branch("main"); !ok || sha != main {
		t.Errorf("main is %q on the API, %s in the repository", sha, main)
	}

	// No credentials, a wrong token, a wrong user: 401, as GitLab.
	for _, creds := range []string{"", "oauth2:wrong@", "someone:" + f.Token() + "@"} {
		u := strings.Replace(clone, "http://", "http://"+creds, 1)
		if out, err := gitTry(t, "", "ls-remote", u); err == nil || !strings.Contains(out, "Authentication failed") && !strings.Contains(out, "could not read Username") {
			t.Errorf("ls-remote with %q: %v %s", strings.Replace(creds, f.Token(), "TOKEN", 1), err, out)
		}
	}
	user, pass, _ := fg.GitCredentials(ctx, p)
	authed := strings.Replace(clone, "http://", "http://"+user+":"+pass+"@", 1)
	mine := t.TempDir()
	gitRun(t, "", "clone", "--quiet", authed, mine)
	if b, _ := os.ReadFile(filepath.Join(mine, "README.md")); string(b) != "demo\n" {
		t.Fatalf("clone: README %q", b)
	}

	rc := newReceiver(t, f, "tok")
	// A new branch: its Push Hook from all zeros, with its commit.
	gitRun(t, mine, "checkout", "--quiet", "-b", "agent/issue-1")
	os.WriteFile(filepath.Join(mine, "hello.txt"), []byte("hello\n"), 0o644)
	gitRun(t, mine, "add", ".")
	gitRun(t, mine, "commit", "--quiet", "-m", "Add hello")
	gitRun(t, mine, "push", "--quiet", "origin", "agent/issue-1")
	head := strings.TrimSpace(gitRun(t, mine, "rev-parse", "HEAD"))
	if sha, ok := f.Branch("agent/issue-1"); !ok || sha != head {
		t.Fatalf("the pushed branch on the API: %q %v, want %s", sha, ok, head)
	}
	f.Flush()
	got := rc.take()
	if len(got) != 1 {
		t.Fatalf("%d hooks for the push, want 1", len(got))
	}
	if ev := rc.check(got[0], "Push Hook"); ev.Type != forges.EventPush || ev.Branch != "agent/issue-1" || ev.SHA != head || ev.Actor != f.BotLogin() {
		t.Errorf("push: %+v", ev)
	}
	var push struct {
		Before  string
		Commits []struct {
			ID    string
			Title string
			Added []string
		}
		TotalCommitsCount int `json:"total_commits_count"`
	}
	json.Unmarshal(got[0].body, &push)
	if push.Before != strings.Repeat("0", 40) || push.TotalCommitsCount != 1 || push.Commits[0].ID != head ||
		push.Commits[0].Title != "Add hello" || !slices.Equal(push.Commits[0].Added, []string{"hello.txt"}) {
		t.Errorf("push body: %+v", push)
	}

	// With a merge request open from it, a push updates the merge request too.
	mr, err := fg.CreateMergeRequest(ctx, p, forges.NewMergeRequest{Title: "Hello", SourceBranch: "agent/issue-1", TargetBranch: "main"})
	if err != nil {
		t.Fatal(err)
	}
	f.Flush()
	rc.take()
	os.WriteFile(filepath.Join(mine, "hello.txt"), []byte("bonjour\n"), 0o644)
	gitRun(t, mine, "commit", "--quiet", "-am", "French")
	gitRun(t, mine, "push", "--quiet", "origin", "agent/issue-1")
	second := strings.TrimSpace(gitRun(t, mine, "rev-parse", "HEAD"))
	f.Flush()
	got = rc.take()
	if len(got) != 2 {
		t.Fatalf("%d hooks for the second push, want Push and Merge Request Hook", len(got))
	}
	if ev := rc.check(got[0], "Push Hook"); ev.Type != forges.EventPush || ev.SHA != second {
		t.Errorf("second push: %+v", ev)
	}
	if ev := rc.check(got[1], "Merge Request Hook"); ev.Type != forges.EventMergeRequestUpdated || ev.SHA != second ||
		ev.Branch != "agent/issue-1" || ev.Target.Number != mr.Number {
		t.Errorf("merge request update: %+v", ev)
	}
	if m, _ := fg.MergeRequest(ctx, p, mr.Number); m.HeadSHA != second {
		t.Errorf("merge request head %s, want %s", m.HeadSHA, second)
	}

	// Deleting the branch: a Push Hook to all zeros, the branch gone.
	gitRun(t, mine, "push", "--quiet", "origin", ":agent/issue-1")
	f.Flush()
	got = rc.take()
	if len(got) != 1 {
		t.Fatalf("%d hooks for the deletion", len(got))
	}
	if ev := rc.check(got[0], "Push Hook"); ev.Type != forges.EventBranchDeleted || ev.Branch != "agent/issue-1" || ev.SHA != second {
		t.Errorf("deletion: %+v", ev)
	}
	if ok, _ := fg.BranchExists(ctx, p, "agent/issue-1"); ok {
		t.Error("the deleted branch is still on the API")
	}
}

func gitTry(t *testing.T, dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=alice", "GIT_AUTHOR_EMAIL=a@x", "GIT_COMMITTER_NAME=alice", "GIT_COMMITTER_EMAIL=a@x")
	done := make(chan struct{})
	var out []byte
	var err error
	go func() { out, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-done
	}
	return string(out), err
}

func gitRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := gitTry(t, dir, args...)
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return out
}
