package forgejo

import (
	"bytes"
	"encoding/base64"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"code.gitea.io/sdk/gitea"

	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/forges/forgejo/giteatest"
	"github.com/alchemic-studio/alfred/forges/forgetest"
)

// forgejoCorpus is the corpus folder of the deliveries recorded from the
// real Forgejo 15 of scripts/forgejo.sh by TestRecordForgejoWebhooks -record.
var forgejoCorpus = filepath.Join(corpus, "forgejo-15")

// forgejoRecordings are the deliveries of forgejoCorpus, in the order the
// recorder causes them: what Alfred reads of an issue's and a pull
// request's life, through a repository webhook of type forgejo.
var forgejoRecordings = []giteaRecording{
	{"issues", "opened", ""},
	{"issues", "edited", ""},
	{"issue_assign", "assigned", ""},
	{"issue_label", "label_updated", ""},
	{"issue_comment", "created", ""},
	{"issue_comment", "edited", ""},
	{"issue_label", "label_cleared", ""},
	{"issue_assign", "unassigned", ""},
	{"issues", "closed", ""},
	{"issues", "reopened", ""},
	{"create", "", ""},
	{"push", "", ""},
	{"pull_request", "opened", ""},
	{"pull_request_sync", "synchronized", ""},
	{"pull_request_comment", "created", ""},
	{"pull_request_review_rejected", "reviewed", ""},
	{"pull_request_review_approved", "reviewed", ""},
	{"pull_request", "closed", ""},
}

// TestRecordForgejoWebhooks checks the recordings of forgejoCorpus as
// TestRecordGiteaWebhooks does Gitea's: every delivery of forgejoRecordings
// is there with its headers, named after its event type and action, signed
// with the recording's secret under X-Forgejo-Signature (and Gitea's
// names), named in the folder's README, and nothing else is. What the
// parser makes of them is TestCorpus's job (their golden files).
//
// With -record it first records them anew from the real Forgejo of
// scripts/forgejo.sh (the ALFRED_TEST_FORGEJO_* variables): a fresh
// repository of the person with a webhook of type forgejo to a listener of
// the test, the API calls that cause each delivery, each saved as received.
// Then run the sweep with -update and update the README.
//
//	env=$(scripts/forgejo.sh start) && eval "$env" && go test ./forges/forgejo -run TestRecordForgejoWebhooks -record -v
func TestRecordForgejoWebhooks(t *testing.T) {
	if *record {
		recordForgejo(t)
		if t.Failed() {
			return
		}
	}
	checkRecordings(t, forgejoCorpus, forgejoRecordings, checkForgejoDelivery)
}

// checkRecordings checks the recordings of dir against recs, each with check.
func checkRecordings(t *testing.T, dir string, recs []giteaRecording, check func(*testing.T, giteaRecording, http.Header, []byte)) {
	readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Errorf("the folder's README: %v", err)
	}
	want := map[string]giteaRecording{}
	for _, r := range recs {
		want[r.name()+".json"] = r
	}
	got := map[string]bool{}
	for _, d := range forgetest.LoadCorpus(t, dir) {
		got[d.Path] = true
		r, ok := want[d.Path]
		if !ok {
			t.Errorf("%s: not one of the recordings of the folder", d.Path)
			continue
		}
		t.Run(r.name(), func(t *testing.T) {
			check(t, r, d.Header, d.Body)
			if !bytes.Contains(readme, []byte("`"+r.name()+"`")) {
				t.Errorf("%s/README.md does not name `%s`", dir, r.name())
			}
		})
	}
	for name := range want {
		if !got[name] {
			t.Errorf("%s: missing; record it with -record", filepath.Join(dir, name))
		}
	}
}

// checkForgejoDelivery checks that a delivery of Forgejo is the one r says,
// under Forgejo's headers and Gitea's, signed with the recording's secret.
func checkForgejoDelivery(t *testing.T, r giteaRecording, h http.Header, body []byte) {
	t.Helper()
	checkSigned(t, r, h, body, "Forgejo", map[string]string{"X-Gitea-Signature": forges.SignHMACSHA256(fixtureSecret, body)})
}

// recordForgejo records forgejoRecordings into forgejoCorpus.
func recordForgejo(t *testing.T) {
	in := giteatest.FromEnv(t, giteatest.Forgejo)
	if !strings.HasPrefix(in.Version, "15.") {
		t.Fatalf("%s is the recording of a Forgejo 15; this one is %s", forgejoCorpus, in.Version)
	}
	r := &giteaRecorder{in: in, hooks: listenHooks(t), saved: map[string]string{}}
	do(t, os.MkdirAll(forgejoCorpus, 0o755), "make %s", forgejoCorpus)
	repo := in.NewRepo(t, in.User.Login)
	repo.SetPermission(t, in.Bot.Login, forges.PermissionWrite)
	r.org, r.repo = repo.Owner, repo.Name
	r.fresh = repo
	_, _, err := in.Client(t, in.User.Login).CreateRepoHook(repo.Owner, repo.Name, gitea.CreateHookOption{
		Type: in.HookType(), Active: true, Events: giteaHookEvents, BranchFilter: "*",
		Config: map[string]string{"url": r.hooks.URL("/repo"), "content_type": "json", "secret": fixtureSecret},
	})
	do(t, err, "create the webhook of %s", repo.FullName())
	r.runForgejo(t)
	for _, rec := range forgejoRecordings {
		if _, ok := r.saved[rec.name()]; !ok {
			t.Errorf("%s was not recorded", rec.name())
		}
	}
}

// runForgejo makes the API calls that cause each delivery of
// forgejoRecordings, in their order, and saves each.
func (r *giteaRecorder) runForgejo(t *testing.T) {
	person, bot := r.in.User.Login, r.in.Bot.Login
	asPerson, asBot := r.in.Client(t, person), r.in.Client(t, bot)
	owner, repo := r.org, r.repo
	save := func(name string) { r.expectIn(t, forgejoCorpus, forgejoRecordings, name) }

	issue, _, err := asPerson.CreateIssue(owner, repo, gitea.CreateIssueOption{Title: "Greet the users", Body: "The demo should greet its users."})
	do(t, err, "open an issue")
	save("issues-opened")
	body := "The demo should greet its users, in French too."
	_, _, err = asPerson.EditIssue(owner, repo, issue.Index, gitea.EditIssueOption{Body: &body})
	do(t, err, "edit issue %d", issue.Index)
	save("issues-edited")
	_, _, err = asPerson.EditIssue(owner, repo, issue.Index, gitea.EditIssueOption{Assignees: []string{bot}})
	do(t, err, "assign issue %d", issue.Index)
	save("issue_assign-assigned")
	l, _, err := asPerson.CreateLabel(owner, repo, gitea.CreateLabelOption{Name: "status/in_ci", Color: "#c5def5", Exclusive: true})
	do(t, err, "create a label")
	_, _, err = asPerson.AddIssueLabels(owner, repo, issue.Index, gitea.IssueLabelsOption{Labels: []int64{l.ID}})
	do(t, err, "label issue %d", issue.Index)
	save("issue_label-label_updated")
	c, _, err := asBot.CreateIssueComment(owner, repo, issue.Index, gitea.CreateIssueCommentOption{Body: "Thanks, I'm on it."})
	do(t, err, "comment on issue %d", issue.Index)
	save("issue_comment-created")
	_, _, err = asBot.EditIssueComment(owner, repo, c.ID, gitea.EditIssueCommentOption{Body: "Thanks, I'm on it: a plan follows."})
	do(t, err, "edit comment %d", c.ID)
	save("issue_comment-edited")
	_, err = asPerson.ClearIssueLabels(owner, repo, issue.Index)
	do(t, err, "clear the labels of issue %d", issue.Index)
	save("issue_label-label_cleared")
	_, _, err = asPerson.EditIssue(owner, repo, issue.Index, gitea.EditIssueOption{Assignees: []string{}})
	do(t, err, "unassign issue %d", issue.Index)
	save("issue_assign-unassigned")
	closed, open := gitea.StateClosed, gitea.StateOpen
	_, _, err = asPerson.EditIssue(owner, repo, issue.Index, gitea.EditIssueOption{State: &closed})
	do(t, err, "close issue %d", issue.Index)
	save("issues-closed")
	_, _, err = asPerson.EditIssue(owner, repo, issue.Index, gitea.EditIssueOption{State: &open})
	do(t, err, "reopen issue %d", issue.Index)
	save("issues-reopened")

	const branch = "agent/issue-1-greet-the-users"
	_, _, err = asBot.CreateBranch(owner, repo, gitea.CreateBranchOption{BranchName: branch, OldBranchName: giteatest.DefaultBranch})
	do(t, err, "create branch %s", branch)
	save("create")
	_, _, err = asBot.CreateFile(owner, repo, "greeting.txt", gitea.CreateFileOptions{
		FileOptions: gitea.FileOptions{Message: "Greet the users", BranchName: branch},
		Content:     base64.StdEncoding.EncodeToString([]byte("Hello!\n")),
	})
	do(t, err, "commit on %s", branch)
	save("push")
	pr, _, err := asBot.CreatePullRequest(owner, repo, gitea.CreatePullRequestOption{Head: branch, Base: giteatest.DefaultBranch,
		Title: "Greet the users", Body: "Closes #" + strconv.FormatInt(issue.Index, 10)})
	do(t, err, "open a pull request")
	save("pull_request-opened")
	_, _, err = asBot.CreateFile(owner, repo, "greeting-fr.txt", gitea.CreateFileOptions{
		FileOptions: gitea.FileOptions{Message: "Greet in French too", BranchName: branch},
		Content:     base64.StdEncoding.EncodeToString([]byte("Bonjour !\n")),
	})
	do(t, err, "commit on %s", branch)
	save("pull_request_sync-synchronized")
	_, _, err = asPerson.CreateIssueComment(owner, repo, pr.Index, gitea.CreateIssueCommentOption{Body: "@alfred-bot why two files?"})
	do(t, err, "comment on pull request %d", pr.Index)
	save("pull_request_comment-created")
	_, _, err = asPerson.CreatePullReview(owner, repo, pr.Index, gitea.CreatePullReviewOptions{State: gitea.ReviewStateRequestChanges, Body: "One file, please."})
	do(t, err, "ask for changes on pull request %d", pr.Index)
	save("pull_request_review_rejected-reviewed")
	_, _, err = asPerson.CreatePullReview(owner, repo, pr.Index, gitea.CreatePullReviewOptions{State: gitea.ReviewStateApproved, Body: "Fine after all."})
	do(t, err, "approve pull request %d", pr.Index)
	save("pull_request_review_approved-reviewed")
	r.fresh.WaitMergeable(t, pr.Index, forges.MergeableClean) // the forge checks each push
	_, _, err = asPerson.MergePullRequest(owner, repo, pr.Index, gitea.MergePullRequestOption{Style: gitea.MergeStyleMerge})
	do(t, err, "merge pull request %d", pr.Index)
	save("pull_request-closed")
}

// expectIn waits for the delivery of recs named name and saves it in dir.
func (r *giteaRecorder) expectIn(t *testing.T, dir string, recs []giteaRecording, name string) {
	t.Helper()
	i := slices.IndexFunc(recs, func(g giteaRecording) bool { return g.name() == name })
	if i < 0 {
		t.Fatalf("%s is not one of the recordings", name)
	}
	rec := recs[i]
	d, ok := r.hooks.wait(rec, deliveryTimeout)
	if !ok {
		t.Fatalf("no %s delivery (%s/%s) within %s", name, rec.typ, rec.action, deliveryTimeout)
	}
	headers, err := d.headersJSON()
	do(t, err, "headers of %s", name)
	base := filepath.Join(dir, name)
	do(t, os.WriteFile(base+".json", d.body, 0o644), "save %s", name)
	do(t, os.WriteFile(base+".headers.json", headers, 0o644), "save %s", name)
	r.saved[name] = d.get("X-Gitea-Delivery")
	r.saved[d.get("X-Gitea-Delivery")] = name + ".json"
	t.Logf("recorded %s: %s", name, d)
}
