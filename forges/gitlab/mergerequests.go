package gitlab

import (
	"context"
	"fmt"
	"slices"
	"time"

	gl "gitlab.com/gitlab-org/api/client-go/v2"

	"github.com/alchemic-studio/alfred/forges"
)

// MergeRequest reads a merge request by iid.
func (f *Forge) MergeRequest(ctx context.Context, p forges.Project, number int64) (*forges.MergeRequest, error) {
	mr, _, err := f.client.MergeRequests.GetMergeRequest(pid(p), number, nil, gl.WithContext(ctx))
	if err != nil {
		return nil, wrap(err, "read merge request %s!%d", p.FullName(), number)
	}
	return mergeRequest(&mr.BasicMergeRequest), nil
}

// MergeRequestForBranch finds the open merge request from branch (the newest
// if several are open).
func (f *Forge) MergeRequestForBranch(ctx context.Context, p forges.Project, branch string) (*forges.MergeRequest, error) {
	mrs, _, err := f.client.MergeRequests.ListProjectMergeRequests(pid(p), &gl.ListProjectMergeRequestsOptions{
		ListOptions:  gl.ListOptions{PerPage: 1},
		State:        gl.Ptr("opened"),
		SourceBranch: gl.Ptr(branch),
		OrderBy:      gl.Ptr("created_at"),
		Sort:         gl.Ptr("desc"),
	}, gl.WithContext(ctx))
	if err != nil {
		return nil, wrap(err, "find the open merge request from %q in %s", branch, p.FullName())
	}
	if len(mrs) == 0 {
		return nil, fmt.Errorf("gitlab: no open merge request from %q in %s: %w", branch, p.FullName(), forges.ErrNotFound)
	}
	return mergeRequest(mrs[0]), nil
}

// CreateMergeRequest opens a merge request inside the project.
func (f *Forge) CreateMergeRequest(ctx context.Context, p forges.Project, n forges.NewMergeRequest) (*forges.MergeRequest, error) {
	mr, _, err := f.client.MergeRequests.CreateMergeRequest(pid(p), &gl.CreateMergeRequestOptions{
		Title:        gl.Ptr(n.Title),
		Description:  gl.Ptr(n.Body),
		SourceBranch: gl.Ptr(n.SourceBranch),
		TargetBranch: gl.Ptr(n.TargetBranch),
	}, gl.WithContext(ctx))
	if err != nil {
		return nil, wrap(err, "open merge request %s -> %s in %s", n.SourceBranch, n.TargetBranch, p.FullName())
	}
	return mergeRequest(&mr.BasicMergeRequest), nil
}

func mergeRequest(mr *gl.BasicMergeRequest) *forges.MergeRequest {
	out := &forges.MergeRequest{
		Number:       mr.IID,
		Title:        mr.Title,
		Body:         mr.Description,
		State:        mergeRequestState(mr.State),
		SourceBranch: mr.SourceBranch,
		TargetBranch: mr.TargetBranch,
		HeadSHA:      mr.SHA,
		Mergeable:    mergeable(mr.DetailedMergeStatus, mr.HasConflicts),
		URL:          mr.WebURL,
	}
	if mr.Author != nil {
		out.Author = mr.Author.Username
	}
	if mr.MergedBy != nil && out.State == forges.MergeRequestMerged {
		out.MergedBy = mr.MergedBy.Username
	}
	return out
}

// mergeRequestState maps GitLab's opened, closed, merged and locked (a merge
// in progress) states.
func mergeRequestState(s string) string {
	switch s {
	case "merged":
		return forges.MergeRequestMerged
	case "closed":
		return forges.MergeRequestClosed
	default:
		return forges.MergeRequestOpen
	}
}

// mergeable tells whether git can merge the source into the target, from
// detailed_merge_status (GitLab 15.6+) or the older merge_status. The
// statuses that only say a rule blocks the merge (not_approved,
// ci_must_pass, draft_status, discussions_not_resolved, ...) are clean: git
// could merge, people or CI have not allowed it yet. has_conflicts wins over
// a stale status.
func mergeable(status string, hasConflicts bool) forges.Mergeable {
	if hasConflicts {
		return forges.MergeableConflict
	}
	switch status {
	case "conflict", "cannot_be_merged", "cannot_be_merged_recheck", "broken_status":
		return forges.MergeableConflict
	case "", "checking", "unchecked", "preparing", "cannot_be_merged_rechecking", "approvals_syncing":
		return forges.MergeableUnknown
	default: // "mergeable", "can_be_merged" and the policy blockers
		return forges.MergeableClean
	}
}

// ReviewComments lists the review comments of a merge request created after
// since, oldest first. On GitLab they are the notes of its threads: diff
// notes (on a line of the diff, with Path and Line) and discussion notes (a
// thread on the overview, which is what a submitted review's comments
// outside the diff become). Plain comments are Comments. ReviewID is 0:
// GitLab's API has no review object.
func (f *Forge) ReviewComments(ctx context.Context, p forges.Project, number int64, since time.Time) ([]forges.ReviewComment, error) {
	ds, err := collect(func(lo gl.ListOptions) ([]*gl.Discussion, *gl.Response, error) {
		return f.client.Discussions.ListMergeRequestDiscussions(pid(p), number, &gl.ListMergeRequestDiscussionsOptions{ListOptions: lo}, gl.WithContext(ctx))
	})
	if err != nil {
		return nil, wrap(err, "list discussions of merge request %s!%d", p.FullName(), number)
	}
	t := forges.Target{Project: p, Kind: forges.TargetMergeRequest, Number: number}
	var out []forges.ReviewComment
	for _, d := range ds {
		for _, n := range d.Notes {
			if n.System || !reviewNote(n) {
				continue
			}
			created := deref(n.CreatedAt)
			if !since.IsZero() && !created.After(since) {
				continue
			}
			rc := forges.ReviewComment{
				ID:        n.ID,
				Author:    n.Author.Username,
				Body:      n.Body,
				URL:       f.noteURL(t, n.ID),
				CreatedAt: created,
			}
			if n.Position != nil {
				rc.Path, rc.Line = positionPath(n.Position), int(positionLine(n.Position))
			}
			out = append(out, rc)
		}
	}
	slices.SortStableFunc(out, func(a, b forges.ReviewComment) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, nil
}

// reviewNote tells a note of a review thread (a diff note or a discussion
// note) from a plain comment.
func reviewNote(n *gl.Note) bool {
	return n.Type == gl.DiffNote || n.Type == gl.LegacyDiffNote || n.Type == gl.DiscussionNote
}

func positionPath(p *gl.NotePosition) string {
	if p.NewPath != "" {
		return p.NewPath
	}
	return p.OldPath
}

// positionLine is the line in the new file, or in the old one for a comment
// on a removed line.
func positionLine(p *gl.NotePosition) int64 {
	if p.NewLine != 0 {
		return p.NewLine
	}
	return p.OldLine
}
