package e2e

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"code.gitea.io/sdk/gitea"

	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/forges/forgejo/giteatest"
)

// TestE2ERealForges plays the scenario on the real Gitea and the real
// Forgejo, then what only a real forge shows: a status label set by hand is
// restored once, as the forge really sends the label changes; five pushes in
// a row on the pull request (the forge answers mergeable false while it
// checks each) start no conflict_resolution run; a real conflict on main
// starts exactly one, which resolves it; the person merges through the API
// and the issue ends done, its session state removed.
func TestE2ERealForges(t *testing.T) { giteatest.Each(t, testE2ERealForge) }

func testE2ERealForge(t *testing.T, in *giteatest.Instance) {
	t.Parallel()
	started := time.Now()
	w := newGiteaWorld(t, in)
	s := start(t, w)
	defer s.sayRunsIfFailed() // where the work stood when a wait timed out
	s.play()

	// A person sets a second status label by hand: the forge takes the
	// bot's off (exclusive scoped labels), the bot puts it back, said once.
	w.label(s.n, []string{"status/in_review"}, nil)
	waitFor(t, time.Minute, "the status label restored", func() bool {
		_, labels, _ := w.issue(s.n)
		return contains(labels, "status/in_ci") && !contains(labels, "status/in_review") && s.kinds()["status_label_restored"] == 1
	})

	// Five pushes in a row on the pull request: no conflict_resolution run.
	branch := s.mb.BranchName
	for i := range 5 {
		w.repo.Commit(t, w.in.User.Login, branch, "", fmt.Sprintf("notes-%d.txt", i), fmt.Sprintf("note %d\n", i))
	}
	w.repo.WaitMergeable(t, s.mb.MergeRequestIID, forges.MergeableClean)
	time.Sleep(3 * time.Second) // ten polls
	s.waitStatus("in_ci")
	if n := s.phaseRuns("conflict_resolution"); n != 0 {
		t.Fatalf("%d conflict_resolution runs after five pushes without a conflict", n)
	}

	// A real conflict: main adds the file the agent wrote, with other text.
	head := w.repo.Pull(t, s.mb.MergeRequestIID).Head.Sha
	var agentFile string
	for _, f := range w.files(head) {
		if strings.HasPrefix(f, "greeting-") {
			agentFile = f
		}
	}
	if agentFile == "" {
		t.Fatalf("no agent file on the branch: %q", w.files(head))
	}
	w.repo.Commit(t, w.in.User.Login, giteatest.DefaultBranch, "", agentFile, "Hello from main, in other words.\n")
	// The forge finds the conflict in a queue of its own, which the other
	// tests of the package load: minutes, at worst, on two cores.
	waitFor(t, 5*time.Minute, "the conflict resolved", func() bool {
		s.waitStatus("in_ci")
		return s.phaseRuns("conflict_resolution") == 1 && s.lastRun().Phase == "conflict_resolution"
	})
	if r := s.lastRun(); !r.Pushed || r.Status != "succeeded" {
		t.Fatalf("the conflict_resolution run: %+v", r)
	}
	if l := s.lastSession(); !l.Resumed || *l.NativeSessionID != s.native {
		t.Errorf("the conflict_resolution session: %+v", l)
	}
	resolved := w.file(s.mb.HeadSHA, agentFile)
	if !strings.Contains(resolved, "Resolved by the agent") || strings.Contains(resolved, "<<<<<<<") {
		t.Fatalf("%s after the resolution: %q", agentFile, resolved)
	}
	w.repo.WaitMergeable(t, s.mb.MergeRequestIID, forges.MergeableClean)
	time.Sleep(3 * time.Second)
	s.waitStatus("in_ci")
	if n := s.phaseRuns("conflict_resolution"); n != 1 {
		t.Fatalf("%d conflict_resolution runs for one conflict, want 1", n)
	}

	// The person merges: the pull request closes the issue; done, state removed.
	w.repo.Merge(t, s.mb.MergeRequestIID)
	s.waitStatus("done")
	s.stateGone()
	if is := w.repo.Issue(t, s.n); is.State != gitea.StateClosed {
		t.Errorf("the issue is %s after the merge, want closed", is.State)
	}
	t.Logf("e2e on %s %s: wall time %s; webhook to the agent being started %s", in.Title(), in.Version,
		time.Since(started).Round(time.Millisecond), s.webhookToAgent.Round(time.Millisecond))
}

// giteaWorld is the world on a real Gitea or Forgejo: a fresh repository of
// alice with the bot as an admin collaborator (both answer 403 to anyone
// else who asks for a person's permission, which the bot does before
// obeying them); alice acts through the API, and the webhook is of the
// forge's own type.
type giteaWorld struct {
	t    testing.TB
	in   *giteatest.Instance
	repo *giteatest.Repo
}

func newGiteaWorld(t testing.TB, in *giteatest.Instance) *giteaWorld {
	repo := in.NewBotRepo(t)
	return &giteaWorld{t: t, in: in, repo: repo}
}

func (w *giteaWorld) forgeEnv() []string {
	return []string{"ALFRED_FORGE=forgejo", "ALFRED_FORGE_URL=" + w.in.URL, "ALFRED_FORGE_TOKEN=" + w.in.Bot.Token}
}

func (w *giteaWorld) project() string { return w.repo.FullName() }

// alice is the person's client.
func (w *giteaWorld) alice() *gitea.Client { return w.in.Client(w.t, w.in.User.Login) }

func (w *giteaWorld) check(err error, what string) {
	w.t.Helper()
	if err != nil {
		w.t.Fatalf("%s on %s: %v", what, w.repo.FullName(), err)
	}
}

func (w *giteaWorld) hook(url, secret string) {
	_, _, err := w.alice().CreateRepoHook(w.repo.Owner, w.repo.Name, gitea.CreateHookOption{
		Type:   w.in.HookType(),
		Config: map[string]string{"url": url, "content_type": "json", "secret": secret},
		Events: []string{"create", "delete", "push", "issues", "issue_comment", "pull_request", "pull_request_review", "status"},
		Active: true,
	})
	w.check(err, "create the webhook")
}

func (w *giteaWorld) openIssue(title, body string, labels ...string) int64 {
	is, _, err := w.alice().CreateIssue(w.repo.Owner, w.repo.Name, gitea.CreateIssueOption{Title: title, Body: body, Labels: w.repo.EnsureLabels(w.t, labels...)})
	w.check(err, "open an issue")
	return is.Index
}

func (w *giteaWorld) assign(n int64) {
	_, _, err := w.alice().EditIssue(w.repo.Owner, w.repo.Name, n, gitea.EditIssueOption{Assignees: []string{w.in.Bot.Login}})
	w.check(err, "assign the bot")
}

func (w *giteaWorld) label(n int64, add, remove []string) {
	if len(add) > 0 {
		_, _, err := w.alice().AddIssueLabels(w.repo.Owner, w.repo.Name, n, gitea.IssueLabelsOption{Labels: w.repo.EnsureLabels(w.t, add...)})
		w.check(err, "add labels")
	}
	for _, id := range w.repo.EnsureLabels(w.t, remove...) {
		_, err := w.alice().DeleteIssueLabel(w.repo.Owner, w.repo.Name, n, id)
		w.check(err, "remove a label")
	}
}

func (w *giteaWorld) status(sha, state, description string) {
	w.repo.Status(w.t, sha, forges.Check{Name: "ci/test", State: forges.CIState(state), Description: description})
}

func (w *giteaWorld) review(n int64, body string) {
	_, _, err := w.alice().CreatePullReview(w.repo.Owner, w.repo.Name, n, gitea.CreatePullReviewOptions{State: gitea.ReviewStateRequestChanges, Body: body})
	w.check(err, "review the pull request")
}

func (w *giteaWorld) close(n int64) {
	closed := gitea.StateClosed
	_, _, err := w.alice().EditIssue(w.repo.Owner, w.repo.Name, n, gitea.EditIssueOption{State: &closed})
	w.check(err, "close the issue")
}

func (w *giteaWorld) issue(n int64) (string, []string, []forges.Comment) {
	is := w.repo.Issue(w.t, n)
	var labels []string
	for _, l := range is.Labels {
		labels = append(labels, l.Name)
	}
	var comments []forges.Comment
	for page := 1; ; page++ {
		list, _, err := w.in.Client(w.t, "").ListIssueComments(w.repo.Owner, w.repo.Name, n, gitea.ListIssueCommentOptions{ListOptions: gitea.ListOptions{Page: page, PageSize: 50}})
		w.check(err, "list comments")
		for _, c := range list {
			comments = append(comments, forges.Comment{ID: c.ID, Author: c.Poster.UserName, Body: c.Body})
		}
		if len(list) < 50 {
			return is.Body, labels, comments
		}
	}
}

// file reads path at sha through the raw file endpoint ("" when missing).
func (w *giteaWorld) file(sha, path string) string {
	resp, err := http.Get(fmt.Sprintf("%s/raw/commit/%s/%s", w.repo.URL(), sha, path))
	if err != nil {
		w.t.Fatalf("read %s at %s: %v", path, sha, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return ""
	}
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func (w *giteaWorld) files(sha string) []string {
	list, _, err := w.in.Client(w.t, "").ListContents(w.repo.Owner, w.repo.Name, sha, "")
	w.check(err, "list the files at "+sha)
	var out []string
	for _, c := range list {
		out = append(out, c.Name)
	}
	return out
}
