package bot

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	botrun "github.com/alchemic-studio/alfred/bot/run"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/agents/fake"
	"github.com/alchemic-studio/alfred/bot/lifecycle"
	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/forges/forgejo"
	"github.com/alchemic-studio/alfred/forges/forgejo/forgejotest"
	"github.com/alchemic-studio/alfred/sandbox"
	"github.com/alchemic-studio/alfred/state"
)

// TestPersonDrivesAnIssueOnForgejo is the whole lifecycle as a person lives
// it on a Forgejo that speaks HTTP: the fake Forgejo 7 API (forgejotest),
// its signed webhooks into the shared webhook handler, git over smart HTTP,
// the real Forgejo client, the engine, and the fake agent started as a real
// process by the host runner. The person uses comments, labels, a review and
// the merge button only; CI arrives as commit statuses, which Forgejo 7 sends no webhook
// for, so the poller finds them.
func TestPersonDrivesAnIssueOnForgejo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newForgejoWorld(t, forges.RetryPolicy{MinBackoff: time.Millisecond})
	fj, forge, p, st, agent, fa, base, key := w.fj, w.forge, w.project, w.st, w.agent, w.fa, w.base, w.key
	wait, accepted := w.wait, w.accepted

	// The person opens an issue and assigns it to the bot, which asks a
	// question first; the answer in the thread brings the plan.
	agent.ReplyNext("## Functional analysis\n\nUsers want a greeting.\n\n## Questions\n\n- In which languages?")
	fj.ActOpenIssue(forges.Issue{Number: 1, Title: "Say hello", Body: "The demo should greet.", Author: forgejotest.Owner, Labels: []string{"type::task"}})
	accepted(fj.ActAssign(1, forgejotest.Bot, forgejotest.Owner))
	wait(lifecycle.StatusWaitingInfo)
	accepted(fj.ActComment(1, forgejotest.Owner, "English for now."))
	wait(lifecycle.StatusWaitingValidation)

	// Naming the bot asks for another plan.
	accepted(fj.ActComment(1, forgejotest.Owner, "@"+forgejotest.Bot+" please keep it in one file"))
	waitUntil(t, func() bool { runs, _ := st.Runs(key.ID()); return len(runs) == 3 })
	wait(lifecycle.StatusWaitingValidation)
	if reqs := fa.Requests(); !strings.Contains(reqs[2].Prompt, "please keep it in one file") {
		t.Errorf("the plan revision's prompt lacks the feedback: %q", reqs[2].Prompt)
	}
	is, _ := fj.Issue(1)
	if sec, ok := forges.Section(is.Body); !ok || !strings.Contains(sec, "Users want a greeting.") || !strings.HasPrefix(is.Body, "The demo should greet.") {
		t.Errorf("description: %q", is.Body)
	}
	if !slices.Contains(is.Labels, "status::waiting_validation") {
		t.Errorf("labels %q", is.Labels)
	}

	// ai::validate_plan: the branch is pushed over HTTP and a pull request opened.
	accepted(fj.ActLabel(1, forgejotest.Owner, []string{"ai::validate_plan"}, nil))
	mb := wait(lifecycle.StatusInCI)
	is, _ = fj.Issue(1)
	if slices.Contains(is.Labels, "ai::validate_plan") {
		t.Error("ai::validate_plan stays on the issue")
	}
	pr, err := forge.MergeRequest(ctx, p, mb.MergeRequestIID)
	if err != nil || pr.SourceBranch != mb.BranchName || pr.HeadSHA == "" || !strings.Contains(pr.Body, "Closes #1") {
		t.Fatalf("pull request: %+v %v", pr, err)
	}

	// CI red, found by polling: ci_fix pushes a fix; green: in review.
	fj.AddStatus(pr.HeadSHA, "ci/test", "failure", "2 tests failed", "")
	waitUntil(t, func() bool {
		m, _ := st.Mailbox(key)
		return m.CIFixAttempts == 1 && m.ActiveRunID == "" && m.HeadSHA != pr.HeadSHA
	})
	mb = wait(lifecycle.StatusInCI)
	fj.AddStatus(mb.HeadSHA, "ci/test", "success", "ok", "")
	mb = wait(lifecycle.StatusInReview)

	// A review asking for changes: review_fix with the inline comment, back to CI.
	accepted(fj.ActReview(mb.MergeRequestIID, forgejotest.Owner, "REQUEST_CHANGES", "Almost.",
		forges.ReviewComment{Path: "hello.go", Line: 3, Body: "Say hello in French too"}))
	waitUntil(t, func() bool {
		m, _ := st.Mailbox(key)
		return m.Phase == string(agents.PhaseReviewFix) && m.ActiveRunID == ""
	})
	mb = wait(lifecycle.StatusInCI)
	runs, _ := st.Runs(mb.ID)
	last := runs[len(runs)-1]
	if last.Phase != string(agents.PhaseReviewFix) || !strings.Contains(last.Input, "Say hello in French too") {
		t.Errorf("review_fix input %q", last.Input)
	}
	fj.AddStatus(mb.HeadSHA, "ci/test", "success", "ok", "")
	mb = wait(lifecycle.StatusInReview)

	// Merged: done; the session state is gone.
	accepted(fj.ActMerge(mb.MergeRequestIID, forgejotest.Owner))
	wait(lifecycle.StatusDone)
	if _, err := os.Stat(filepath.Join(base, ".agent-sessions", "forgejo", "alice-demo-issue-1")); !os.IsNotExist(err) {
		t.Errorf("session state left: %v", err)
	}
	is, _ = fj.Issue(1)
	kinds := map[string]int{}
	for _, c := range is.Comments {
		_, k, _ := forges.ParseMarker(c.Body)
		kinds[k]++
	}
	// The fake, like Forgejo, said mergeable false after every push while
	// it checked: none of that was taken for a conflict.
	runs, _ = st.Runs(mb.ID)
	for _, r := range runs {
		if r.Phase == string(agents.PhaseConflictResolution) {
			t.Errorf("a conflict_resolution run (%s) on a pull request without conflicts", r.Trigger)
		}
	}
	for k, n := range map[string]int{lifecycle.KindAcknowledgement: 1, lifecycle.KindQuestions: 1, lifecycle.KindPlan: 2, lifecycle.KindPlanValidated: 1, lifecycle.KindSession: 1, lifecycle.KindNothingToDo: 0} {
		if kinds[k] != n {
			t.Errorf("%d %s comments, want %d (all: %v)", kinds[k], k, n, kinds)
		}
	}
	if n := len(lifecycle.StatusLabels(is.Labels)); n != 1 || !slices.Contains(is.Labels, "status::done") {
		t.Errorf("labels at the end: %q", is.Labels)
	}
}

// forgejoWorld is an engine on the fake Forgejo over HTTP, through the real
// Forgejo client (with retry), its webhooks signed into the shared handler,
// and the fake agent as a real process; key is issue 1's mailbox.
type forgejoWorld struct {
	fj      *forgejotest.Server
	forge   *forgejo.Forge
	project forges.Project
	st      *state.Store
	e       *Engine
	agent   *scripted
	fa      *fake.Adapter
	base    string
	key     state.MailboxKey
	t       *testing.T
}

func newForgejoWorld(t *testing.T, retry forges.RetryPolicy) *forgejoWorld {
	t.Helper()
	ctx := context.Background()
	w := &forgejoWorld{t: t, fj: forgejotest.NewServer(t), base: t.TempDir()}
	g := &gitForge{root: t.TempDir()}
	bare := g.seed(t, forgejotest.Owner, forgejotest.Repo)
	if err := w.fj.ServeGit(bare); err != nil {
		t.Fatal(err)
	}
	forge, err := forgejo.New(forgejo.Options{BaseURL: w.fj.URL(), Token: forgejotest.BotToken, Retry: retry})
	if err != nil {
		t.Fatal(err)
	}
	w.forge = forge
	w.project = forges.Project{Forge: "forgejo", Owner: forgejotest.Owner, Name: forgejotest.Repo}
	if _, _, err := forges.SyncLabels(ctx, forge, w.project, lifecycle.Labels()); err != nil {
		t.Fatal(err)
	}
	w.fa, err = fake.New(fake.Options{ResumableSessions: true, Reply: analysisReply, Exec: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	w.st = openStore(t)
	w.agent = &scripted{Adapter: w.fa}
	w.e, err = New(Config{
		Forges: map[string]forges.Forge{"forgejo": forge}, Store: w.st,
		Adapters: map[string]agents.Adapter{fake.ID: w.agent},
		Runner:   sandbox.NewHostRunner(sandbox.HostOptions{}),
		Sandbox:  sandbox.Spec{UID: os.Getuid(), GID: os.Getgid(), Env: map[string]string{"PATH": os.Getenv("PATH")}},
		Repos:    &botrun.Repos{Base: w.base, Name: "Alfred", Email: "alfred@example.invalid"},
		Sessions: botrun.SessionStore{Base: w.base}, PublicURL: "http://alfred.test",
		PollInterval:    50 * time.Millisecond,
		RetryDelay:      5 * time.Millisecond,
		ForgeCallBudget: retry.Budget,
		Defaults:        map[string]string{"AGENT_ADAPTER": fake.ID},
		Logger:          slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: testLogLevel()})),
	})
	if err != nil {
		t.Fatal(err)
	}
	w.e.stepped = walked.add
	if err := w.e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.e.Close)
	hook := httptest.NewServer(forges.NewWebhookHandler("forgejo", forgejo.Hooks{}, []string{"old-secret", "s3cret"}, w.e.Intake, w.e.log))
	t.Cleanup(hook.Close)
	w.fj.SetWebhook(hook.URL, "s3cret")
	w.key = state.MailboxKey{Forge: "forgejo", Owner: forgejotest.Owner, Project: forgejotest.Repo, Kind: state.KindIssue, IID: 1}
	return w
}

// wait waits until issue 1's mailbox has status s and no run.
func (w *forgejoWorld) wait(s lifecycle.Status) state.Mailbox {
	w.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if mb, err := w.st.Mailbox(w.key); err == nil && mb.Status == string(s) && mb.ActiveRunID == "" {
			return mb
		}
		time.Sleep(20 * time.Millisecond)
	}
	mb, _ := w.st.Mailbox(w.key)
	w.t.Fatalf("status %q (run %q), want %q", mb.Status, mb.ActiveRunID, s)
	return mb
}

// accepted fails the test unless the webhook was delivered and accepted.
func (w *forgejoWorld) accepted(d forgejotest.Delivery, err error) {
	w.t.Helper()
	if err != nil {
		w.t.Fatal(err)
	}
	if d.Status != 202 && d.Status != 200 {
		w.t.Fatalf("webhook answered %d", d.Status)
	}
}
