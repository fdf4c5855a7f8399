package bot

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/bot/lifecycle"
	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/state"
)

// commit writes path on branch of owner/name.git as a person would push it,
// and returns the new head.
func (g *gitForge) commit(t *testing.T, owner, name, branch, path, content string) string {
	t.Helper()
	work := t.TempDir()
	run(t, "", "git", "clone", "--quiet", "--branch", branch, filepath.Join(g.root, owner, name+".git"), work)
	if err := os.WriteFile(filepath.Join(work, path), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, work, "git", "add", path)
	run(t, work, "git", "commit", "--quiet", "-m", "change "+path)
	run(t, work, "git", "push", "--quiet", "origin", branch)
	return g.head(owner, name, branch)
}

// toInCI drives issue iid to its merge request, waiting for CI.
func (h *harness) toInCI(iid int64) state.Mailbox {
	h.t.Helper()
	h.assign(iid)
	h.waitStatus(iid, lifecycle.StatusWaitingValidation)
	h.command(iid, lifecycle.CommandValidatePlan)
	return h.waitStatus(iid, lifecycle.StatusInCI)
}

// poke makes the engine look at the merge request again, as a CI webhook or
// the poller does.
func (h *harness) poke(mb state.Mailbox) {
	h.t.Helper()
	ev := h.send(forges.Event{Type: forges.EventCIStatusChanged, Actor: "ci", SHA: mb.HeadSHA, Target: forges.Target{Project: h.project}})
	h.handled(ev.DeliveryID)
}

func (h *harness) phaseRuns(mb state.Mailbox, phase agents.Phase) int {
	n := 0
	for _, r := range mustRuns(h.t, h.store, mb.ID) {
		if r.Phase == string(phase) {
			n++
		}
	}
	return n
}

// TestConflictOnlyWhenGitAgrees: a forge that answers "not mergeable" while
// it re-checks after each push (Forgejo, Gitea) starts no conflict_resolution
// run; a real conflict starts exactly one, which resolves it; the runs are
// bounded by CONFLICT_FIX_MAX_ATTEMPTS; a run that finds nothing left to
// resolve pushes nothing and says so.
func TestConflictOnlyWhenGitAgrees(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	mb := h.toInCI(7)
	issue := h.issueTarget(7)

	// Still checking: five pushes' worth of "false", no conflict run.
	h.forge.setMergeable(mb.MergeRequestIID, forges.MergeableConflict)
	for range 5 {
		h.poke(mb)
	}
	if n := h.phaseRuns(mb, agents.PhaseConflictResolution); n != 0 {
		t.Fatalf("%d conflict_resolution runs on a merge request without conflict", n)
	}
	if got := h.mailbox(7); got.Status != string(lifecycle.StatusInCI) || got.ActiveRunID != "" {
		t.Fatalf("mailbox after the forge's false: %s, run %q", got.Status, got.ActiveRunID)
	}

	// A real conflict: main changes the file the branch changed.
	h.git.commit(t, "alice", "demo", "main", "hello.go", "package demo\n\n// main's own greeting\n")
	h.poke(mb)
	mb = h.waitStatus(7, lifecycle.StatusInCI)
	if n := h.phaseRuns(mb, agents.PhaseConflictResolution); n != 1 {
		t.Fatalf("%d conflict_resolution runs for one real conflict, want 1", n)
	}
	h.poke(mb) // the forge still says false: git finds the conflict resolved
	if n := h.phaseRuns(mb, agents.PhaseConflictResolution); n != 1 {
		t.Fatalf("%d conflict_resolution runs after the conflict was resolved, want 1", n)
	}
	if got := h.mailbox(7); got.ConflictFixAttempts != 0 {
		t.Errorf("conflict attempts after a clean merge: %d, want 0", got.ConflictFixAttempts)
	}

	// No attempts left: a new conflict blocks, with one comment.
	h.setSetting(projectSetting("CONFLICT_FIX_MAX_ATTEMPTS", "0"))
	h.git.commit(t, "alice", "demo", "main", "hello.go", "package demo\n\n// main changed it again\n")
	h.poke(mb)
	mb = h.waitStatus(7, lifecycle.StatusBlocked)
	if n := h.phaseRuns(mb, agents.PhaseConflictResolution); n != 1 || count(h.forge.commentKinds(issue), lifecycle.KindBlocked) != 1 {
		t.Fatalf("blocked: %d runs, comments %q", n, h.forge.commentKinds(issue))
	}

	// A person makes main agree with the branch and retries: nothing to
	// resolve, nothing pushed, said once.
	branch := h.git.head("alice", "demo", mb.BranchName)
	content := run(t, "", "git", "--git-dir", filepath.Join(h.git.root, "alice", "demo.git"), "show", branch+":hello.go")
	h.git.commit(t, "alice", "demo", "main", "hello.go", content+"\n")
	h.setSetting(projectSetting("CONFLICT_FIX_MAX_ATTEMPTS", "3"))
	h.command(7, lifecycle.CommandRetry)
	mb = h.waitStatus(7, lifecycle.StatusInCI)
	runs := mustRuns(t, h.store, mb.ID)
	last := runs[len(runs)-1]
	if last.Phase != string(agents.PhaseConflictResolution) || !last.NothingToDo || last.Pushed {
		t.Fatalf("the retried run: phase %s, nothing to do %v, pushed %v", last.Phase, last.NothingToDo, last.Pushed)
	}
	if got := h.git.head("alice", "demo", mb.BranchName); got != branch {
		t.Errorf("the branch moved from %s to %s", branch, got)
	}
	if count(h.forge.commentKinds(issue), lifecycle.KindNothingToDo) != 1 {
		t.Errorf("comments: %q, want one %s", h.forge.commentKinds(issue), lifecycle.KindNothingToDo)
	}
}
