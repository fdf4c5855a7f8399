package forgejo_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/forges/forgejo"
	"github.com/alchemic-studio/alfred/forges/forgejo/giteatest"
	"github.com/alchemic-studio/alfred/forges/forgetest"
)

// TestContractRealForges runs the contract suite against the real Gitea of
// scripts/gitea.sh and the real Forgejo of scripts/forgejo.sh: each subtest
// gets a fresh repository of the person (ALFRED_TEST_<FORGE>_USER), where
// the bot is an admin collaborator, and the Forge under test talks to the
// server through a giteatest.Faults proxy.
func TestContractRealForges(t *testing.T) {
	giteatest.Each(t, func(t *testing.T, in *giteatest.Instance) {
		t.Parallel()
		forgetest.Run(t, func(t *testing.T) forgetest.Harness { return newGiteaHarness(t, in) })
	})
}

// conflictFile is the file whose first line main and the conflicting
// branches edit: the README of the initial commit.
const conflictFile = "README.md"

// giteaHarness adapts a repository of the real Gitea to the contract suite.
type giteaHarness struct {
	in     *giteatest.Instance
	repo   *giteatest.Repo
	faults *giteatest.Faults
	forge  *forgejo.Forge

	// conflictBase is a branch at the commit before main's edit of
	// conflictFile: a branch made from it that edits the same line conflicts
	// with main, without main moving under the merge requests seeded so far.
	// Empty until the first merge request is seeded (see prepareConflicts).
	conflictBase string
	heads        map[int64]string // source branch of each seeded merge request
	files        map[string]bool  // branch+"/"+path of the files committed for inline comments
	lastReview   time.Time        // CreatedAt of the last seeded review comment
}

func newGiteaHarness(t *testing.T, in *giteatest.Instance) *giteaHarness {
	repo := in.NewBotRepo(t)
	h := &giteaHarness{in: in, repo: repo, faults: in.NewFaults(t), heads: map[int64]string{}, files: map[string]bool{}}
	f, err := forgejo.New(forgejo.Options{
		BaseURL: h.faults.URL(), Token: in.Bot.Token, Username: in.Bot.Login,
		Retry: forges.RetryPolicy{MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, AttemptTimeout: 10 * time.Second, Budget: 30 * time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	h.forge = f
	return h
}

func (h *giteaHarness) Forge() forges.Forge { return h.forge }

func (h *giteaHarness) Project() forges.Project {
	return forges.Project{Forge: h.in.Kind, Owner: h.repo.Owner, Name: h.repo.Name}
}

func (h *giteaHarness) Want() forgetest.Want {
	return forgetest.Want{BotLogin: h.in.Bot.Login, DefaultBranch: giteatest.DefaultBranch, CloneURL: h.repo.CloneURL(),
		GitUsername: h.in.Bot.Login, GitPassword: h.in.Bot.Token}
}

// SeedIssue opens the issue as its author; Gitea picks the number. Users it
// names are created, and read the public repository.
func (h *giteaHarness) SeedIssue(t testing.TB, is forges.Issue) int64 {
	return h.repo.CreateIssue(t, is)
}

func (h *giteaHarness) SeedUser(t testing.TB, login string, p forges.Permission) {
	h.repo.SetPermission(t, login, p)
}

func (h *giteaHarness) SeedBranch(t testing.TB, name string) string {
	return h.repo.Commit(t, h.repo.Owner, name, giteatest.DefaultBranch, "seed/"+name+".txt", name+"\n")
}

// SeedMergeRequest makes the source branch with a commit of its own (on
// conflictFile from conflictBase for a conflict), opens the pull request as
// its author, then merges it (deleting the branch) or closes it, or waits
// until Gitea settled its mergeability.
func (h *giteaHarness) SeedMergeRequest(t testing.TB, mr forges.MergeRequest) forges.MergeRequest {
	h.prepareConflicts(t)
	if mr.Mergeable == forges.MergeableConflict {
		mr.HeadSHA = h.repo.Commit(t, h.repo.Owner, mr.SourceBranch, h.conflictBase, conflictFile, "line changed on "+mr.SourceBranch+"\n")
	} else {
		mr.HeadSHA = h.SeedBranch(t, mr.SourceBranch)
	}
	mr.Number = h.repo.CreatePull(t, mr.Author, mr.SourceBranch, mr.TargetBranch, mr.Title, mr.Body)
	h.heads[mr.Number] = mr.SourceBranch
	switch mr.State {
	case forges.MergeRequestMerged:
		h.repo.WaitMergeable(t, mr.Number, forges.MergeableClean)
		h.repo.Merge(t, mr.Number)
		h.repo.DeleteBranch(t, mr.SourceBranch)
	case forges.MergeRequestClosed:
		h.repo.ClosePull(t, mr.Number)
	default:
		if mr.Mergeable != forges.MergeableUnknown {
			h.repo.WaitMergeable(t, mr.Number, mr.Mergeable)
		}
	}
	return mr
}

// prepareConflicts makes conflictBase and then edits conflictFile on main,
// once, before the first merge request: main moving later would make Gitea
// check every open pull request again. (Two git pushes: done only for the
// cases that seed merge requests.)
func (h *giteaHarness) prepareConflicts(t testing.TB) {
	if h.conflictBase != "" {
		return
	}
	h.conflictBase = "seed/conflict-base"
	h.repo.CreateBranch(t, h.conflictBase, giteatest.DefaultBranch)
	h.repo.Commit(t, h.repo.Owner, giteatest.DefaultBranch, "", conflictFile, "line changed on main\n")
}

func (h *giteaHarness) SeedComment(t testing.TB, tg forges.Target, author, body string) int64 {
	return h.repo.Comment(t, author, tg.Number, body)
}

func (h *giteaHarness) SeedCI(t testing.TB, sha string, checks []forges.Check) {
	for _, c := range checks {
		h.repo.Status(t, sha, c)
	}
}

// SeedReviewComment submits a review as c.Author, in a later second than the
// review comment seeded before (Gitea stamps to the second). An inline
// comment needs its file in the diff: a file of c.Line lines is committed to
// the source branch first when missing.
func (h *giteaHarness) SeedReviewComment(t testing.TB, mr int64, c forges.ReviewComment) time.Time {
	if wait := time.Until(h.lastReview.Add(time.Second)); wait > 0 {
		time.Sleep(wait)
	}
	var at time.Time
	if c.Path == "" {
		rv, _ := h.repo.Review(t, c.Author, mr, c.Body)
		at = rv.Submitted
	} else {
		head, ok := h.heads[mr]
		if !ok {
			t.Fatalf("seed review comment: merge request %d was not seeded", mr)
		}
		if !h.files[head+"/"+c.Path] {
			var lines strings.Builder
			for i := 1; i <= max(c.Line, 1); i++ {
				fmt.Fprintf(&lines, "line %d\n", i)
			}
			h.repo.Commit(t, h.repo.Owner, head, "", c.Path, lines.String())
			h.files[head+"/"+c.Path] = true
		}
		_, comments := h.repo.Review(t, c.Author, mr, "", c)
		if len(comments) != 1 {
			t.Fatalf("seed review comment on %s: Gitea stored %d comments, want 1", c.Path, len(comments))
		}
		at = comments[0].Created
	}
	h.lastReview = at
	return at
}

func (h *giteaHarness) FailNext(t testing.TB, status, n int) { h.faults.FailNext(status, n) }

func (h *giteaHarness) Hang(t testing.TB, n int) { h.faults.Hang(n) }

func (h *giteaHarness) IssueBody(t testing.TB, number int64) string {
	return h.repo.IssueBody(t, number)
}

func (h *giteaHarness) TargetLabels(t testing.TB, tg forges.Target) []string {
	return h.repo.IssueLabels(t, tg.Number)
}
