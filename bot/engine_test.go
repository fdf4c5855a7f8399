package bot

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	botrun "github.com/alchemic-studio/alfred/bot/run"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/agents/fake"
	"github.com/alchemic-studio/alfred/bot/lifecycle"
	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/sandbox"
	"github.com/alchemic-studio/alfred/state"
)

const analysisReply = "## Functional analysis\n\nUsers want a greeting.\n\n## Implementation plan\n\n1. Add hello.go.\n2. Test it."

// scripted is the fake adapter plus what a real agent does to the working
// copy: in phases that write, it changes a file.
type scripted struct {
	*fake.Adapter
	edits atomic.Int32

	mu      sync.Mutex
	replies []string // answers of the next runs, in place of the fake's
	// tokens and usd, when tokens is set, replace what each run reports
	// having used (the fake's: the prompt's and the reply's lengths, no cost).
	tokens int64
	usd    float64
}

// Spend makes every run report tokens (as input) and usd.
func (s *scripted) Spend(tokens int64, usd float64) {
	s.mu.Lock()
	s.tokens, s.usd = tokens, usd
	s.mu.Unlock()
}

// ReplyNext makes the next run answer text.
func (s *scripted) ReplyNext(text string) {
	s.mu.Lock()
	s.replies = append(s.replies, text)
	s.mu.Unlock()
}

func (s *scripted) Run(ctx context.Context, req agents.Request) (*agents.Result, error) {
	if !req.Phase.TextOnly() && req.Sandbox.Worktree != nil {
		n := s.edits.Add(1)
		f := filepath.Join(req.Sandbox.Worktree.Host, "hello.go")
		if err := os.WriteFile(f, []byte(fmt.Sprintf("package demo\n\n// edit %d by %s\n", n, req.Phase)), 0o644); err != nil {
			return nil, err
		}
	}
	res, err := s.Adapter.Run(ctx, req)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil && len(s.replies) > 0 {
		res.Text, s.replies = s.replies[0], s.replies[1:]
	}
	if err == nil && s.tokens > 0 {
		res.InputTokens, res.OutputTokens, res.CostUSD = s.tokens, 0, s.usd
	}
	return res, err
}

// namedRunner is a Runner the fake adapter never calls; its name decides
// whether sessions apply.
type namedRunner string

func (r namedRunner) Name() string { return string(r) }
func (r namedRunner) Run(context.Context, sandbox.Spec) (*sandbox.Result, error) {
	return nil, fmt.Errorf("namedRunner %s runs nothing", r)
}

type harness struct {
	t       *testing.T
	forge   *memForge
	git     *gitForge
	store   *state.Store
	engine  *Engine
	adapter *scripted
	base    string
	project forges.Project
	n       int
	// forged, when set, sends events whose comments are not on the forge.
	forged bool
}

// setup is what a test may change before the engine starts.
type setup struct {
	runner string
	// adapter serves AGENT_ADAPTER=fake; wrap, when set, changes what the
	// engine sees of it; adapters are more of them by id.
	adapter      *scripted
	wrap         func(agents.Adapter) agents.Adapter
	adapters     map[string]agents.Adapter
	installation *state.AgentInstallation // nil: the fake, resumable, on the image runner
	settings     []state.SettingOverride
	secrets      []string // Config.Secrets
	// detected and detectionWait go to Config; undetected leaves the store
	// without installations, as before the first detection has ended.
	detected      chan struct{}
	detectionWait time.Duration
	undetected    bool
	// logs, when set, receives the engine's log (else stderr, at
	// ALFRED_TEST_LOG's level).
	logs slog.Handler
	// second, when set, is a second forge the engine works on, named by
	// its Project.Forge in events.
	second *memForge
	// statusPrefixes go to Config.StatusPrefixes.
	statusPrefixes map[string]string
}

func newHarness(t *testing.T, opts ...func(*setup)) *harness {
	t.Helper()
	g := newGitForge(t, "alfred", "tok-s3cret")
	g.seed(t, "alice", "demo")
	h := &harness{t: t, forge: newMemForge(g), git: g, store: openStore(t), base: t.TempDir(),
		project: forges.Project{Forge: "forgejo", Owner: "alice", Name: "demo"}}
	fa, err := fake.New(fake.Options{ResumableSessions: true, Reply: analysisReply})
	if err != nil {
		t.Fatal(err)
	}
	su := setup{runner: "image", adapter: &scripted{Adapter: fa}, adapters: map[string]agents.Adapter{},
		settings: []state.SettingOverride{orgSetting("AGENT_ADAPTER", fake.ID)}}
	for _, o := range opts {
		o(&su)
	}
	h.adapter = su.adapter
	su.adapters[fake.ID] = su.adapter
	if su.wrap != nil {
		su.adapters[fake.ID] = su.wrap(su.adapter)
	}
	inst := state.AgentInstallation{AdapterID: fake.ID, Runner: "image", Image: "alfred-test", Version: fake.Version, ResumableSessions: true}
	if su.installation != nil {
		inst = *su.installation
	}
	err = h.store.Update(context.Background(), func(tx *state.Tx) error {
		for id := range su.adapters {
			if su.undetected {
				break
			}
			i := inst
			i.AdapterID = id
			if err := tx.PutInstallation(i); err != nil {
				return err
			}
		}
		for _, o := range su.settings {
			if err := tx.PutSetting(o); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	clients := map[string]forges.Forge{"forgejo": h.forge}
	if su.second != nil {
		clients["gitlab"] = su.second
	}
	h.engine, err = New(Config{
		Forges: clients, StatusPrefixes: su.statusPrefixes, Store: h.store,
		Adapters: su.adapters,
		Runner:   namedRunner(su.runner),
		Sandbox:  sandbox.Spec{Image: "alfred-test", UID: os.Getuid(), GID: os.Getgid(), Env: map[string]string{"FAKE_API_KEY": "sk-very-secret"}},
		Repos:    &botrun.Repos{Base: h.base, Name: "Alfred", Email: "alfred@example.invalid"},
		Sessions: botrun.SessionStore{Base: h.base}, PublicURL: "http://alfred.test", RetryDelay: 5 * time.Millisecond,
		Secrets: su.secrets, Detected: su.detected, DetectionWait: su.detectionWait,
		Logger: slog.New(su.logHandler()),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.engine.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.engine.stepped = walked.add
	t.Cleanup(h.engine.Close)
	return h
}

// startWith starts an engine of cfg in place of the harness's (closed by
// the caller first) and returns it.
func (h *harness) startWith(cfg Config) *Engine {
	h.t.Helper()
	e, err := New(cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := e.Start(context.Background()); err != nil {
		h.t.Fatal(err)
	}
	e.stepped = walked.add
	h.t.Cleanup(e.Close)
	h.engine = e
	return e
}

func orgSetting(key, value string) state.SettingOverride {
	return state.SettingOverride{Scope: state.ScopeOrganization, Forge: "forgejo", Owner: "alice", Key: key, Value: []byte(strconv.Quote(value))}
}

func projectSetting(key, value string) state.SettingOverride {
	o := orgSetting(key, value)
	o.Scope, o.Project = state.ScopeProject, "demo"
	return o
}

// setSetting changes a setting while the engine runs, as `alfred settings set` does.
func (h *harness) setSetting(o state.SettingOverride) {
	h.t.Helper()
	if err := h.store.Update(context.Background(), func(tx *state.Tx) error { return tx.PutSetting(o) }); err != nil {
		h.t.Fatal(err)
	}
}

// send delivers an event as a webhook would, with a fresh delivery id.
func (h *harness) send(ev forges.Event) forges.Event {
	h.t.Helper()
	h.n++
	if ev.DeliveryID == "" {
		ev.DeliveryID = fmt.Sprintf("delivery-%d", h.n)
	}
	if ev.Target.Project == (forges.Project{}) {
		ev.Target.Project = h.project
	}
	if ev.Comment != nil && !h.forged {
		h.forge.posted(ev.Target, ev.Comment)
	}
	if ev.Review != nil && !h.forged {
		h.forge.reviewed(ev.Target.Number, ev.Actor, ev.Review)
	}
	if err := h.engine.Intake(context.Background(), &ev); err != nil {
		h.t.Fatal(err)
	}
	return ev
}

// handled waits until the event of delivery is recorded as handled and
// returns its record.
func (h *harness) handled(delivery string) eventRecord {
	h.t.Helper()
	var rec eventRecord
	waitUntil(h.t, func() bool { rec = h.eventRecord(delivery); return rec.Done })
	return rec
}

// eventRecord is the stored record of delivery (zero when there is none).
func (h *harness) eventRecord(delivery string) eventRecord {
	for _, p := range h.store.List(eventsDir) {
		raw, _ := h.store.Get(p)
		var rec eventRecord
		if json.Unmarshal(raw, &rec) == nil && rec.Delivery == delivery {
			return rec
		}
	}
	return eventRecord{}
}

func (h *harness) mailbox(iid int64) state.Mailbox {
	mb, _ := h.store.Mailbox(state.MailboxKey{Forge: "forgejo", Owner: "alice", Project: "demo", Kind: state.KindIssue, IID: iid})
	return mb
}

// waitStatus waits until the mailbox has status s and no run in progress.
func (h *harness) waitStatus(iid int64, s lifecycle.Status) state.Mailbox {
	h.t.Helper()
	deadline := time.Now().Add(90 * time.Second) // real CLIs in Docker on a loaded machine
	for time.Now().Before(deadline) {
		mb := h.mailbox(iid)
		if mb.Status == string(s) && mb.ActiveRunID == "" {
			return mb
		}
		time.Sleep(10 * time.Millisecond)
	}
	mb := h.mailbox(iid)
	h.t.Fatalf("mailbox %d: status %q (run %q), want %q; forge calls: %q", iid, mb.Status, mb.ActiveRunID, s, h.forge.calls)
	return mb
}

func (h *harness) openIssue(iid int64, title string, labels ...string) {
	h.forge.mu.Lock()
	h.forge.issues[iid] = &forges.Issue{Number: iid, Title: title, Body: "Please add a greeting.", State: "open", Author: "alice",
		Labels: labels, Assignees: []string{"alfred"}, URL: fmt.Sprintf("http://forge.test/alice/demo/issues/%d", iid)}
	h.forge.mu.Unlock()
}

func (h *harness) issueTarget(iid int64) forges.Target {
	return forges.Target{Project: h.project, Kind: forges.TargetIssue, Number: iid}
}

func (h *harness) sessions(t *testing.T, mb state.Mailbox) []state.LLMSession {
	runs, err := h.store.Runs(mb.ID)
	if err != nil {
		t.Fatal(err)
	}
	var out []state.LLMSession
	for _, r := range runs {
		_, ls, _ := h.store.RunWithSessions(r.ID)
		out = append(out, ls...)
	}
	return out
}

func count(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}

// TestLifecycle drives one issue from assignment to done with labels alone:
// analysis and plan, validation, development and merge request, a red CI
// fixed, a review answered, merge; the agent session is created once and
// resumed at every run after.
func TestLifecycle(t *testing.T) {
	h := newHarness(t)
	const iid = 7
	h.openIssue(iid, "Add a greeting to the demo", "type::task")
	issue := h.issueTarget(iid)

	assigned := h.send(forges.Event{Type: forges.EventIssueAssigned, Actor: "alice", Assignee: "alfred", Target: issue,
		Labels: []string{"type::task"}})
	mb := h.waitStatus(iid, lifecycle.StatusWaitingValidation)

	if mb.BranchName != "agent/issue-7-add-a-greeting-to-the-demo" {
		t.Errorf("branch name %q", mb.BranchName)
	}
	if h.git.head("alice", "demo", mb.BranchName) != "" {
		t.Error("the analysis run created the branch on the forge")
	}
	is, _ := h.forge.Issue(context.Background(), h.project, iid)
	if sec, ok := forges.Section(is.Body); !ok || !strings.Contains(sec, "Users want a greeting.") || !strings.HasPrefix(is.Body, "Please add a greeting.") {
		t.Errorf("description after analysis: %q", is.Body)
	}
	if got := h.forge.labels(iid); !slices.Equal(got, []string{"type::task", "status::waiting_validation"}) {
		t.Errorf("labels after analysis: %q", got)
	}
	kinds := h.forge.commentKinds(issue)
	if !slices.Equal(kinds[:2], []string{lifecycle.KindAcknowledgement, lifecycle.KindSession}) || count(kinds, lifecycle.KindPlan) != 1 {
		t.Errorf("comments after analysis: %q", kinds)
	}

	// A redelivered webhook posts nothing twice.
	before := len(h.forge.calls)
	h.send(assigned)
	time.Sleep(100 * time.Millisecond)
	if len(h.forge.calls) != before {
		t.Errorf("a redelivery acted: %q", h.forge.calls[before:])
	}

	// A person changes the status label: it is restored, with one comment.
	h.forge.RemoveLabel(context.Background(), issue, "status::waiting_validation")
	h.forge.AddLabels(context.Background(), issue, "status::in_ci")
	h.send(forges.Event{Type: forges.EventIssueLabeled, Actor: "alice", Target: issue, Labels: h.forge.labels(iid)})
	h.waitStatus(iid, lifecycle.StatusWaitingValidation)
	waitUntil(t, func() bool { return count(h.forge.commentKinds(issue), lifecycle.KindStatusLabelRestored) == 1 })
	if got := h.forge.labels(iid); !slices.Equal(got, []string{"type::task", "status::waiting_validation"}) {
		t.Errorf("labels after restore: %q", got)
	}

	// Someone without write access cannot validate the plan.
	h.forge.AddLabels(context.Background(), issue, "ai::validate_plan")
	h.send(forges.Event{Type: forges.EventIssueLabeled, Actor: "mallory", Target: issue, Labels: h.forge.labels(iid)})
	time.Sleep(100 * time.Millisecond)
	if mb := h.mailbox(iid); mb.Status != string(lifecycle.StatusWaitingValidation) {
		t.Fatalf("mallory steered the bot: %s", mb.Status)
	}

	// ai::validate_plan by alice: development, push, merge request, in_ci.
	h.send(forges.Event{Type: forges.EventIssueLabeled, Actor: "alice", Target: issue, Labels: h.forge.labels(iid)})
	mb = h.waitStatus(iid, lifecycle.StatusInCI)
	if slices.Contains(h.forge.labels(iid), "ai::validate_plan") {
		t.Error("the command label was not removed")
	}
	head := h.git.head("alice", "demo", mb.BranchName)
	if head == "" || mb.HeadSHA != head || mb.MergeRequestIID == 0 {
		t.Fatalf("after development: head %q, mailbox %+v", head, mb)
	}
	mr, _ := h.forge.MergeRequest(context.Background(), h.project, mb.MergeRequestIID)
	if !strings.Contains(mr.Body, "Closes #7") || mr.SourceBranch != mb.BranchName || mr.TargetBranch != "main" {
		t.Errorf("merge request: %+v", mr)
	}

	// CI red: a ci_fix run pushes a new commit; green: in_review.
	h.forge.setCI(head, forges.CIFailure)
	h.send(forges.Event{Type: forges.EventCIStatusChanged, Actor: "ci", SHA: head, Target: forges.Target{Project: h.project}})
	waitUntil(t, func() bool { m := h.mailbox(iid); return m.HeadSHA != head && m.ActiveRunID == "" })
	mb = h.waitStatus(iid, lifecycle.StatusInCI)
	if mb.CIFixAttempts != 1 {
		t.Errorf("ci_fix_attempts %d", mb.CIFixAttempts)
	}
	h.forge.setCI(mb.HeadSHA, forges.CISuccess)
	h.send(forges.Event{Type: forges.EventCIStatusChanged, Actor: "ci", SHA: mb.HeadSHA, Target: forges.Target{Project: h.project}})
	mb = h.waitStatus(iid, lifecycle.StatusInReview)

	// A review comment on the merge request: review_fix, back to CI, green again.
	h.send(forges.Event{Type: forges.EventCommentCreated, Actor: "alice",
		Target:  forges.Target{Project: h.project, Kind: forges.TargetMergeRequest, Number: mb.MergeRequestIID},
		Comment: &forges.Comment{ID: 999, Author: "alice", Body: "Please name it greet.go"}})
	waitUntil(t, func() bool {
		m := h.mailbox(iid)
		return m.Phase == string(agents.PhaseReviewFix) && m.ActiveRunID == ""
	})
	mb = h.waitStatus(iid, lifecycle.StatusInCI)
	h.forge.setCI(mb.HeadSHA, forges.CISuccess)
	h.send(forges.Event{Type: forges.EventCIStatusChanged, Actor: "ci", SHA: mb.HeadSHA, Target: forges.Target{Project: h.project}})
	mb = h.waitStatus(iid, lifecycle.StatusInReview)

	// Every run after the first resumed the first run's session.
	sessions := h.sessions(t, mb)
	if len(sessions) != 4 {
		t.Fatalf("%d llm sessions, want 4 (analysis, development, ci_fix, review_fix)", len(sessions))
	}
	first := sessions[0]
	if first.NativeSessionID == nil || first.Resumed || first.ResumeFallback == nil || *first.ResumeFallback != "no_prior_session" {
		t.Fatalf("first session: %+v", first)
	}
	for _, s := range sessions[1:] {
		if !s.Resumed || s.NativeSessionID == nil || *s.NativeSessionID != *first.NativeSessionID || s.ResumeFallback != nil {
			t.Errorf("session %s: resumed %v id %v fallback %v", s.RunID, s.Resumed, s.NativeSessionID, s.ResumeFallback)
		}
		if s.SessionName == nil || *s.SessionName != mb.BranchName {
			t.Errorf("session name %v", s.SessionName)
		}
	}
	reqs := h.adapter.Requests()
	if reqs[0].Prompt == "" || !strings.Contains(reqs[1].Prompt, "Add hello.go") {
		t.Errorf("the development prompt lacks the plan: %q", reqs[1].Prompt)
	}
	stateDir := h.engine.cfg.Sessions.Dir(mb, fake.ID)
	if fi, err := os.Stat(stateDir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("session state dir: %v %v", fi, err)
	}
	// The status comment is one, edited in place, and shows the session.
	var status []forges.Comment
	cs, _ := h.forge.Comments(context.Background(), issue)
	for _, c := range cs {
		if _, k, _ := forges.ParseMarker(c.Body); k == lifecycle.KindSession {
			status = append(status, c)
		}
	}
	if len(status) != 1 || !strings.Contains(status[0].Body, "resumed") || !strings.Contains(status[0].Body, *first.NativeSessionID) {
		t.Errorf("status comments: %+v", status)
	}
	for _, r := range mustRuns(t, h.store, mb.ID) {
		if strings.Contains(r.Log, "sk-very-secret") {
			t.Errorf("run %s log shows a secret", r.ID)
		}
	}

	// Merged: done, session state removed, and nothing more happens.
	h.send(forges.Event{Type: forges.EventMergeRequestMerged, Actor: "alice",
		Target: forges.Target{Project: h.project, Kind: forges.TargetMergeRequest, Number: mb.MergeRequestIID}})
	h.waitStatus(iid, lifecycle.StatusDone)
	if _, err := os.Stat(filepath.Dir(stateDir)); !os.IsNotExist(err) {
		t.Errorf("session state still there after merge: %v", err)
	}
	if got := h.forge.labels(iid); !slices.Contains(got, "status::done") || len(lifecycle.StatusLabels(got)) != 1 {
		t.Errorf("labels at done: %q", got)
	}
}

func mustRuns(t *testing.T, st *state.Store, id string) []state.Run {
	runs, err := st.Runs(id)
	if err != nil {
		t.Fatal(err)
	}
	return runs
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("condition not met in time")
}

// testLogLevel is warn, or debug with ALFRED_TEST_LOG=debug.
func testLogLevel() slog.Level {
	if os.Getenv("ALFRED_TEST_LOG") == "debug" {
		return slog.LevelDebug
	}
	return slog.LevelWarn
}
