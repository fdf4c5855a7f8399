package gitlab

import (
	"slices"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/forges/forgetest"
)

// TestContract runs the shared forges contract suite against the Forge
// talking to the stateful fake GitLab API.
func TestContract(t *testing.T) {
	forgetest.Run(t, func(t *testing.T) forgetest.Harness { return newHarness(t) })
}

type harness struct {
	fake  *fakeGitLab
	forge *Forge
}

func newHarness(t testing.TB) *harness {
	fake := newFakeGitLab(t)
	f, err := New(Options{
		BaseURL:      fake.srv.URL,
		Token:        fake.token,
		Timeout:      10 * time.Second,
		RetryWaitMin: time.Millisecond,
		RetryWaitMax: 2 * time.Second, // a Retry-After: 1 is honoured
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return &harness{fake: fake, forge: f}
}

func (h *harness) Forge() forges.Forge { return h.forge }

// Project is in a nested group, so the URL-encoded path is exercised.
func (h *harness) Project() forges.Project {
	return forges.Project{Forge: "gitlab-test", Owner: "acme/platform", Name: "demo"}
}

func (h *harness) Want() forgetest.Want {
	return forgetest.Want{
		BotLogin:      h.fake.bot,
		DefaultBranch: fakeDefault,
		CloneURL:      h.fake.srv.URL + "/" + h.fake.path + ".git",
		GitUsername:   "oauth2",
		GitPassword:   h.fake.token,
	}
}

func (h *harness) SeedIssue(t testing.TB, is forges.Issue) {
	f := h.fake
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seedUser(is.Author)
	for _, a := range is.Assignees {
		f.seedUser(a)
	}
	f.ensureLabels(is.Labels)
	state := "opened"
	if is.State == "closed" {
		state = "closed"
	}
	now := f.tick()
	f.issues[is.Number] = &fakeIssue{ID: f.id(), IID: is.Number, Title: is.Title, Description: is.Body, State: state,
		Author: is.Author, Labels: slices.Clone(is.Labels), Assignees: slices.Clone(is.Assignees), CreatedAt: now, UpdatedAt: now}
}

func (h *harness) SeedUser(t testing.TB, login string, p forges.Permission) {
	f := h.fake
	f.mu.Lock()
	defer f.mu.Unlock()
	f.user(login).Access = map[forges.Permission]int{
		forges.PermissionAdmin: 40, forges.PermissionWrite: 30, forges.PermissionRead: 20, forges.PermissionNone: accessNone,
	}[p]
}

func (h *harness) SeedBranch(t testing.TB, name, sha string) {
	f := h.fake
	f.mu.Lock()
	defer f.mu.Unlock()
	f.branches[name] = sha
}

func (h *harness) SeedMergeRequest(t testing.TB, mr forges.MergeRequest) {
	f := h.fake
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seedUser(mr.Author)
	if _, ok := f.branches[mr.SourceBranch]; !ok {
		f.branches[mr.SourceBranch] = mr.HeadSHA
	}
	state := map[string]string{forges.MergeRequestOpen: "opened", forges.MergeRequestClosed: "closed", forges.MergeRequestMerged: "merged", "": "opened"}[mr.State]
	status, conflicts := "checking", false
	switch mr.Mergeable {
	case forges.MergeableClean:
		status = "mergeable"
	case forges.MergeableConflict:
		status, conflicts = "conflict", true
	}
	now := f.tick()
	f.mrs[mr.Number] = &fakeMR{ID: f.id(), IID: mr.Number, Title: mr.Title, Description: mr.Body, State: state, Author: mr.Author,
		Source: mr.SourceBranch, Target: mr.TargetBranch, SHA: mr.HeadSHA, DetailedMergeStatus: status, HasConflicts: conflicts,
		CreatedAt: now, UpdatedAt: now}
}

func (h *harness) SeedComment(t testing.TB, tg forges.Target, author, body string) int64 {
	f := h.fake
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seedUser(author)
	return f.addNote(noteKeyOf(tg), author, body, "", time.Time{}).ID
}

func noteKeyOf(tg forges.Target) noteKey {
	if tg.Kind == forges.TargetMergeRequest {
		return noteKey{"merge_requests", tg.Number}
	}
	return noteKey{"issues", tg.Number}
}

// SeedCI runs one pipeline for sha whose jobs are the checks.
func (h *harness) SeedCI(t testing.TB, sha string, checks []forges.Check) {
	f := h.fake
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.tick()
	p := &fakePipeline{ID: f.id(), IID: int64(len(f.pipelines) + 1), SHA: sha, Ref: fakeDefault, CreatedAt: now, UpdatedAt: now}
	var jobs []string
	for _, c := range checks {
		st := jobStatus(c.State)
		jobs = append(jobs, st)
		id := f.id()
		f.statuses = append(f.statuses, &fakeStatus{ID: id, PipelineID: p.ID, SHA: sha, Ref: p.Ref, Status: st, Name: c.Name,
			TargetURL: c.URL, Description: c.Description, CreatedAt: now})
	}
	p.Status = pipelineStatus(jobs)
	f.pipelines = append(f.pipelines, p)
}

// SeedReviewComment adds a DiffNote thread when c.Path is set, else a
// DiscussionNote thread (what a review's overview comment becomes).
func (h *harness) SeedReviewComment(t testing.TB, mr int64, c forges.ReviewComment) {
	f := h.fake
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.mrs[mr] == nil {
		t.Fatalf("SeedReviewComment: no merge request %d", mr)
	}
	f.seedUser(c.Author)
	typ := "DiscussionNote"
	if c.Path != "" {
		typ = "DiffNote"
	}
	n := f.addNote(noteKey{"merge_requests", mr}, c.Author, c.Body, typ, c.CreatedAt)
	n.Path, n.Line = c.Path, c.Line
}

func (h *harness) FailNext(t testing.TB, status, n int) {
	f := h.fake
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failCode, f.failN = status, n
}

func (h *harness) Hang(t testing.TB, n int) {
	f := h.fake
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hangN = n
}

func (h *harness) IssueBody(t testing.TB, number int64) string {
	f := h.fake
	f.mu.Lock()
	defer f.mu.Unlock()
	is, ok := f.issues[number]
	if !ok {
		t.Fatalf("IssueBody: no issue %d", number)
	}
	return is.Description
}

func (h *harness) TargetLabels(t testing.TB, tg forges.Target) []string {
	f := h.fake
	f.mu.Lock()
	defer f.mu.Unlock()
	if tg.Kind == forges.TargetMergeRequest {
		if mr, ok := f.mrs[tg.Number]; ok {
			return slices.Clone(mr.Labels)
		}
	} else if is, ok := f.issues[tg.Number]; ok {
		return slices.Clone(is.Labels)
	}
	t.Fatalf("TargetLabels: no %s %d", tg.Kind, tg.Number)
	return nil
}
