package bot

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/bot/lifecycle"
	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/state"
)

// TestTwoForgesOneEngine: one engine works on a Forgejo and a GitLab at
// once. The same owner, project and issue number on both are two mailboxes,
// each forge hears only about its own issue, in its own bot account's name,
// and the bot's own comment on one forge is its own there.
func TestTwoForgesOneEngine(t *testing.T) {
	g := newGitForge(t, "alfred", "tok-s3cret") // memForge's git credentials
	g.seed(t, "alice", "demo")
	gl := newMemForge(g)
	gl.me = "alfred-gl"
	gl.perms = map[string]forges.Permission{"alice": forges.PermissionWrite, "alfred-gl": forges.PermissionAdmin}
	glOrg := orgSetting("AGENT_ADAPTER", "fake")
	glOrg.Forge = "gitlab"
	h := newHarness(t, func(s *setup) { s.second, s.settings = gl, append(s.settings, glOrg) })

	h.openIssue(1, "Add a greeting", "type::task")
	glProject := forges.Project{Forge: "gitlab", Owner: "alice", Name: "demo"}
	glIssue := forges.Target{Project: glProject, Kind: forges.TargetIssue, Number: 1}
	gl.mu.Lock()
	gl.issues[1] = &forges.Issue{Number: 1, Title: "Add a farewell", Body: "Please add a farewell.", State: "open", Author: "alice",
		Labels: []string{"type::task"}, Assignees: []string{"alfred-gl"}, URL: "http://gitlab.test/alice/demo/-/issues/1"}
	gl.mu.Unlock()

	var wg sync.WaitGroup // both webhooks at the same time
	for _, ev := range []forges.Event{
		{Type: forges.EventIssueAssigned, Actor: "alice", Assignee: "alfred", Target: h.issueTarget(1), Labels: []string{"type::task"}},
		{Type: forges.EventIssueAssigned, Actor: "alice", Assignee: "alfred-gl", Target: glIssue, Labels: []string{"type::task"}},
	} {
		wg.Add(1)
		go func() { defer wg.Done(); h.send(ev) }()
	}
	wg.Wait()

	fj := h.waitStatus(1, lifecycle.StatusWaitingValidation)
	glKey := state.MailboxKey{Forge: "gitlab", Owner: "alice", Project: "demo", Kind: state.KindIssue, IID: 1}
	var glmb state.Mailbox
	waitUntil(t, func() bool { // the GitLab issue waits for validation too
		glmb, _ = h.store.Mailbox(glKey)
		return glmb.Status == string(lifecycle.StatusWaitingValidation) && glmb.ActiveRunID == ""
	})
	if fj.ID == glmb.ID || !strings.HasPrefix(glmb.ID, "gitlab/") || !strings.HasPrefix(fj.ID, "forgejo/") {
		t.Fatalf("mailbox ids %q and %q: want one per forge", fj.ID, glmb.ID)
	}
	for _, c := range []struct {
		f     *memForge
		me    string
		title string
	}{{h.forge, "alfred", "Add a greeting"}, {gl, "alfred-gl", "Add a farewell"}} {
		comments, _ := c.f.Comments(context.Background(), forges.Target{Kind: forges.TargetIssue, Number: 1})
		if len(comments) == 0 {
			t.Fatalf("forge of %s: no comment on its issue", c.me)
		}
		for _, cm := range comments {
			if cm.Author != c.me {
				t.Errorf("forge of %s: comment by %q", c.me, cm.Author)
			}
		}
	}
	for _, mb := range []state.Mailbox{fj, glmb} {
		if runs, _ := h.store.Runs(mb.ID); len(runs) != 1 || runs[0].MailboxID != mb.ID {
			t.Fatalf("%s: runs %+v, want its one analysis", mb.ID, runs)
		}
	}
	if is, _ := gl.Issue(context.Background(), glProject, 1); !strings.Contains(is.Body, "Please add a farewell.") || !strings.Contains(is.Body, "agent:section:start") {
		t.Fatalf("GitLab issue body: %q", is.Body)
	}
	// The bot's comment on GitLab is its own there, under its GitLab login.
	ev := h.send(forges.Event{Type: forges.EventCommentCreated, Actor: "alfred-gl", Target: glIssue, Comment: &forges.Comment{ID: 9, Author: "alfred-gl", Body: "a note"}})
	if rec := h.handled(ev.DeliveryID); !strings.Contains(rec.Outcome, "the bot's own event") {
		t.Fatalf("the bot's GitLab comment: %q", rec.Outcome)
	}
}

// TestForgeDownAtStart: a forge that does not answer when the engine starts
// stops nothing. Start succeeds, the engine says since when that forge is
// unreachable and how often it was asked, the other forge's issue goes on,
// the down forge's webhook is accepted and waits (no mailbox made, nothing
// said there); once the forge answers, its work starts by itself.
func TestForgeDownAtStart(t *testing.T) {
	g := newGitForge(t, "alfred", "tok-s3cret")
	g.seed(t, "alice", "demo")
	gl := newMemForge(g)
	gl.me = "alfred-gl"
	gl.perms = map[string]forges.Permission{"alice": forges.PermissionWrite, "alfred-gl": forges.PermissionAdmin}
	gl.down("Me", 1_000_000)
	glOrg := orgSetting("AGENT_ADAPTER", "fake")
	glOrg.Forge = "gitlab"
	before := time.Now()
	h := newHarness(t, func(s *setup) { s.second, s.settings = gl, append(s.settings, glOrg) })

	glProject := forges.Project{Forge: "gitlab", Owner: "alice", Name: "demo"}
	gl.mu.Lock()
	gl.issues[1] = &forges.Issue{Number: 1, Title: "Add a farewell", Body: "Please add a farewell.", State: "open", Author: "alice",
		Labels: []string{"type::task"}, Assignees: []string{"alfred-gl"}}
	gl.mu.Unlock()
	h.send(forges.Event{Type: forges.EventIssueAssigned, Actor: "alice", Assignee: "alfred-gl", Labels: []string{"type::task"},
		Target: forges.Target{Project: glProject, Kind: forges.TargetIssue, Number: 1}})

	h.openIssue(1, "Add a greeting", "type::task")
	h.send(forges.Event{Type: forges.EventIssueAssigned, Actor: "alice", Assignee: "alfred", Target: h.issueTarget(1), Labels: []string{"type::task"}})
	h.waitStatus(1, lifecycle.StatusWaitingValidation) // the forge that answers works meanwhile

	var down ForgeReach
	waitUntil(t, func() bool { // asked again in the background
		for _, r := range h.engine.Reach() {
			if r.Name == "gitlab" {
				down = r
			}
		}
		return down.Attempts >= 3
	})
	if down.Reachable() || down.Since.Before(before) || !strings.Contains(down.Err, "504 Gateway Timeout") {
		t.Fatalf("the down forge: %+v; want unreachable since the start, with its error", down)
	}
	if up := h.engine.reachOf("forgejo"); !up.Reachable() || up.Login != "alfred" || !up.Since.IsZero() {
		t.Fatalf("the forge that answers: %+v", up)
	}
	glKey := state.MailboxKey{Forge: "gitlab", Owner: "alice", Project: "demo", Kind: state.KindIssue, IID: 1}
	if mb, err := h.store.Mailbox(glKey); err == nil && mb.ID != "" {
		t.Fatalf("a mailbox of the down forge was made: %+v", mb)
	}
	gl.mu.Lock()
	calls := slices.Clone(gl.calls)
	gl.mu.Unlock()
	if len(calls) != 0 {
		t.Fatalf("the down forge was written to: %q", calls)
	}

	gl.down("Me", 0) // it answers again
	waitUntil(t, func() bool {
		mb, _ := h.store.Mailbox(glKey)
		return mb.Status == string(lifecycle.StatusWaitingValidation) && mb.ActiveRunID == ""
	})
	if r := h.engine.reachOf("gitlab"); !r.Reachable() || r.Login != "alfred-gl" || !r.Since.IsZero() || r.Attempts != 0 {
		t.Fatalf("the forge back: %+v", r)
	}
}
