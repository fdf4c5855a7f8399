package github

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	gh "github.com/google/go-github/v93/github"

	"github.com/alchemic-studio/alfred/forges"
)

// MergeRequest reads a pull request. GitHub computes mergeability in the
// background: mergeable null is MergeableUnknown.
func (f *Forge) MergeRequest(ctx context.Context, p forges.Project, number int64) (*forges.MergeRequest, error) {
	pr, _, err := f.client.PullRequests.Get(ctx, p.Owner, p.Name, int(number))
	if err != nil {
		return nil, wrap(err, "read pull request %d of %s", number, p.FullName())
	}
	return toMergeRequest(pr), nil
}

// MergeRequestForBranch finds the open pull request from branch of the
// repository itself (head=owner:branch); pull requests from forks are not the bot's.
func (f *Forge) MergeRequestForBranch(ctx context.Context, p forges.Project, branch string) (*forges.MergeRequest, error) {
	prs, _, err := f.client.PullRequests.List(ctx, p.Owner, p.Name, &gh.PullRequestListOptions{
		State:       "open",
		Head:        p.Owner + ":" + branch,
		ListOptions: gh.ListOptions{PerPage: f.perPage},
	})
	if err != nil {
		return nil, wrap(err, "find pull request from %s in %s", branch, p.FullName())
	}
	for _, pr := range prs {
		if pr.GetHead().GetRef() == branch {
			return toMergeRequest(pr), nil
		}
	}
	return nil, fmt.Errorf("find pull request from %s in %s: %w", branch, p.FullName(), forges.ErrNotFound)
}

// CreateMergeRequest opens a pull request.
func (f *Forge) CreateMergeRequest(ctx context.Context, p forges.Project, mr forges.NewMergeRequest) (*forges.MergeRequest, error) {
	pr, _, err := f.client.PullRequests.Create(ctx, p.Owner, p.Name, gh.CreatePullRequest{
		Title: gh.Ptr(mr.Title),
		Body:  gh.Ptr(mr.Body),
		Head:  mr.SourceBranch,
		Base:  mr.TargetBranch,
	})
	if err != nil {
		return nil, wrap(err, "open pull request from %s to %s in %s", mr.SourceBranch, mr.TargetBranch, p.FullName())
	}
	return toMergeRequest(pr), nil
}

// ReviewComments lists what reviewers wrote on a pull request after since,
// oldest first. GitHub keeps it in two places, and both are returned:
//   - the inline comments on the diff (GET /pulls/{n}/comments), with Path and Line;
//   - the body of each submitted review that has one (GET /pulls/{n}/reviews),
//     with Path empty, ID and ReviewID both the review's id, and CreatedAt its
//     submission time. Pending (unsubmitted) reviews are left out.
//
// The comments endpoint's since filters on the update time; the result is
// filtered again on the creation time, so an old comment edited later is not new.
func (f *Forge) ReviewComments(ctx context.Context, p forges.Project, number int64, since time.Time) ([]forges.ReviewComment, error) {
	out, err := f.inlineComments(ctx, p, number, since)
	if err != nil {
		return nil, err
	}
	reviews, err := f.reviewBodies(ctx, p, number, since)
	if err != nil {
		return nil, err
	}
	out = append(out, reviews...)
	slices.SortStableFunc(out, func(a, b forges.ReviewComment) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, nil
}

// inlineComments lists the comments on the diff of a pull request created
// after since, oldest first.
func (f *Forge) inlineComments(ctx context.Context, p forges.Project, number int64, since time.Time) ([]forges.ReviewComment, error) {
	var out []forges.ReviewComment
	opts := &gh.PullRequestListCommentsOptions{
		Sort:        "created",
		Direction:   "asc",
		Since:       since,
		ListOptions: gh.ListOptions{PerPage: f.perPage},
	}
	for {
		page, resp, err := f.client.PullRequests.ListComments(ctx, p.Owner, p.Name, int(number), opts)
		if err != nil {
			return nil, wrap(err, "list review comments of pull request %d of %s", number, p.FullName())
		}
		for _, c := range page {
			if !c.GetCreatedAt().After(since) {
				continue
			}
			out = append(out, forges.ReviewComment{
				ID:        c.GetID(),
				ReviewID:  c.GetPullRequestReviewID(),
				Author:    c.GetUser().GetLogin(),
				Body:      c.GetBody(),
				Path:      c.GetPath(),
				Line:      cmp.Or(c.GetLine(), c.GetOriginalLine()),
				URL:       c.GetHTMLURL(),
				CreatedAt: c.GetCreatedAt().Time,
			})
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

// reviewBodies lists the bodies of the reviews of a pull request submitted
// after since, each as a comment of its review; pending and empty reviews
// are left out.
func (f *Forge) reviewBodies(ctx context.Context, p forges.Project, number int64, since time.Time) ([]forges.ReviewComment, error) {
	var out []forges.ReviewComment
	opts := &gh.ListOptions{PerPage: f.perPage}
	for {
		page, resp, err := f.client.PullRequests.ListReviews(ctx, p.Owner, p.Name, int(number), opts)
		if err != nil {
			return nil, wrap(err, "list reviews of pull request %d of %s", number, p.FullName())
		}
		for _, r := range page {
			if strings.TrimSpace(r.GetBody()) == "" || r.GetState() == "PENDING" || !r.GetSubmittedAt().After(since) {
				continue
			}
			out = append(out, forges.ReviewComment{
				ID:        r.GetID(),
				ReviewID:  r.GetID(),
				Author:    r.GetUser().GetLogin(),
				Body:      r.GetBody(),
				URL:       r.GetHTMLURL(),
				CreatedAt: r.GetSubmittedAt().Time,
			})
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

func toMergeRequest(pr *gh.PullRequest) *forges.MergeRequest {
	out := &forges.MergeRequest{
		Number:       int64(pr.GetNumber()),
		Title:        pr.GetTitle(),
		Body:         pr.GetBody(),
		State:        forges.MergeRequestOpen,
		Author:       pr.GetUser().GetLogin(),
		SourceBranch: pr.GetHead().GetRef(),
		TargetBranch: pr.GetBase().GetRef(),
		HeadSHA:      pr.GetHead().GetSHA(),
		Mergeable:    forges.MergeableUnknown,
		URL:          pr.GetHTMLURL(),
	}
	switch {
	case pr.GetMerged() || pr.MergedAt != nil:
		out.State, out.MergedBy = forges.MergeRequestMerged, pr.GetMergedBy().GetLogin()
	case pr.GetState() == "closed":
		out.State = forges.MergeRequestClosed
	}
	if pr.Mergeable != nil {
		out.Mergeable = forges.MergeableConflict
		if *pr.Mergeable {
			out.Mergeable = forges.MergeableClean
		}
	}
	return out
}
