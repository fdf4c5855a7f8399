package github

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	gh "github.com/google/go-github/v93/github"

	"github.com/alchemic-studio/alfred/forges"
)

// Issue reads an issue. GitHub serves pull requests on the issues endpoint
// too; a pull request number wraps forges.ErrNotFound here (read it with
// MergeRequest).
func (f *Forge) Issue(ctx context.Context, p forges.Project, number int64) (*forges.Issue, error) {
	is, _, err := f.client.Issues.Get(ctx, p.Owner, p.Name, int(number))
	if err != nil {
		return nil, wrap(err, "read issue %d of %s", number, p.FullName())
	}
	if is.IsPullRequest() {
		return nil, fmt.Errorf("read issue %d of %s: it is a pull request: %w", number, p.FullName(), forges.ErrNotFound)
	}
	return toIssue(is), nil
}

// SetIssueBody replaces an issue's description.
func (f *Forge) SetIssueBody(ctx context.Context, p forges.Project, number int64, body string) error {
	_, _, err := f.client.Issues.Update(ctx, p.Owner, p.Name, int(number), gh.UpdateIssueRequest{Body: &body})
	if err != nil {
		return wrap(err, "edit description of issue %d of %s", number, p.FullName())
	}
	return nil
}

// Comments lists the thread of an issue or pull request, oldest first (the
// issue comments API serves both; inline review comments are ReviewComments).
func (f *Forge) Comments(ctx context.Context, t forges.Target) ([]forges.Comment, error) {
	// The per-issue endpoint lists oldest first and takes no sort order.
	opts := &gh.IssueListCommentsOptions{ListOptions: gh.ListOptions{PerPage: f.perPage}}
	var out []forges.Comment
	for {
		page, resp, err := f.client.Issues.ListComments(ctx, t.Project.Owner, t.Project.Name, int(t.Number), opts)
		if err != nil {
			return nil, wrap(err, "list comments of %s #%d of %s", t.Kind, t.Number, t.Project.FullName())
		}
		for _, c := range page {
			out = append(out, toComment(c))
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

// CreateComment posts a comment on an issue or pull request.
func (f *Forge) CreateComment(ctx context.Context, t forges.Target, body string) (*forges.Comment, error) {
	c, _, err := f.client.Issues.CreateComment(ctx, t.Project.Owner, t.Project.Name, int(t.Number), gh.IssueCommentRequest{Body: body})
	if err != nil {
		return nil, wrap(err, "comment on %s #%d of %s", t.Kind, t.Number, t.Project.FullName())
	}
	out := toComment(c)
	return &out, nil
}

// EditComment replaces a comment's text. GitHub addresses comments by id
// alone, so t only names the project.
func (f *Forge) EditComment(ctx context.Context, t forges.Target, commentID int64, body string) (*forges.Comment, error) {
	c, _, err := f.client.Issues.UpdateComment(ctx, t.Project.Owner, t.Project.Name, commentID, gh.IssueCommentRequest{Body: body})
	if err != nil {
		return nil, wrap(err, "edit comment %d on %s #%d of %s", commentID, t.Kind, t.Number, t.Project.FullName())
	}
	out := toComment(c)
	return &out, nil
}

// Labels lists every label defined in the repository.
func (f *Forge) Labels(ctx context.Context, p forges.Project) ([]forges.Label, error) {
	opts := &gh.ListOptions{PerPage: f.perPage}
	var out []forges.Label
	for {
		page, resp, err := f.client.Issues.ListLabels(ctx, p.Owner, p.Name, opts)
		if err != nil {
			return nil, wrap(err, "list labels of %s", p.FullName())
		}
		for _, l := range page {
			out = append(out, forges.Label{Name: l.GetName(), Color: l.GetColor(), Description: l.GetDescription()})
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

// CreateLabel defines a label.
func (f *Forge) CreateLabel(ctx context.Context, p forges.Project, l forges.Label) error {
	_, _, err := f.client.Issues.CreateLabel(ctx, p.Owner, p.Name, gh.CreateIssueLabelRequest{
		Name:        l.Name,
		Color:       gh.Ptr(strings.TrimPrefix(l.Color, "#")),
		Description: gh.Ptr(l.Description),
	})
	if err != nil {
		return wrap(err, "create label %q in %s", l.Name, p.FullName())
	}
	return nil
}

// UpdateLabel sets the colour and description of the label named l.Name.
// go-github puts label names into the path as they are: they are escaped here.
func (f *Forge) UpdateLabel(ctx context.Context, p forges.Project, l forges.Label) error {
	_, _, err := f.client.Issues.UpdateLabel(ctx, p.Owner, p.Name, url.PathEscape(l.Name), gh.UpdateIssueLabelRequest{
		Color:       gh.Ptr(strings.TrimPrefix(l.Color, "#")),
		Description: gh.Ptr(l.Description),
	})
	if err != nil {
		return wrap(err, "update label %q in %s", l.Name, p.FullName())
	}
	return nil
}

// AddLabels puts labels on an issue or pull request.
func (f *Forge) AddLabels(ctx context.Context, t forges.Target, names ...string) error {
	if len(names) == 0 {
		return nil
	}
	_, _, err := f.client.Issues.AddLabelsToIssue(ctx, t.Project.Owner, t.Project.Name, int(t.Number), names)
	if err != nil {
		return wrap(err, "add labels %q to %s #%d of %s", names, t.Kind, t.Number, t.Project.FullName())
	}
	return nil
}

// RemoveLabel takes a label off an issue or pull request. GitHub answers 404
// when the label is not on it, which is no error here. A missing issue is:
// it is told apart by reading the issue back.
func (f *Forge) RemoveLabel(ctx context.Context, t forges.Target, name string) error {
	_, err := f.client.Issues.RemoveLabelForIssue(ctx, t.Project.Owner, t.Project.Name, int(t.Number), url.PathEscape(name))
	if err == nil {
		return nil
	}
	if !isNotFound(err) {
		return wrap(err, "remove label %q from %s #%d of %s", name, t.Kind, t.Number, t.Project.FullName())
	}
	if _, _, err := f.client.Issues.Get(ctx, t.Project.Owner, t.Project.Name, int(t.Number)); err != nil {
		return wrap(err, "remove label %q from %s #%d of %s", name, t.Kind, t.Number, t.Project.FullName())
	}
	return nil
}

func toIssue(is *gh.Issue) *forges.Issue {
	out := &forges.Issue{
		Number:    int64(is.GetNumber()),
		Title:     is.GetTitle(),
		Body:      is.GetBody(),
		State:     is.GetState(),
		Author:    is.GetUser().GetLogin(),
		Labels:    labelNames(is.Labels),
		URL:       is.GetHTMLURL(),
		UpdatedAt: is.GetUpdatedAt().Time,
	}
	for _, a := range is.Assignees {
		out.Assignees = append(out.Assignees, a.GetLogin())
	}
	if len(out.Assignees) == 0 && is.Assignee != nil {
		out.Assignees = []string{is.Assignee.GetLogin()}
	}
	return out
}

func labelNames(ls []*gh.Label) []string {
	out := make([]string, 0, len(ls))
	for _, l := range ls {
		out = append(out, l.GetName())
	}
	return out
}

func toComment(c *gh.IssueComment) forges.Comment {
	return forges.Comment{
		ID:        c.GetID(),
		Author:    c.GetUser().GetLogin(),
		Body:      c.GetBody(),
		URL:       c.GetHTMLURL(),
		CreatedAt: c.GetCreatedAt().Time,
		UpdatedAt: c.GetUpdatedAt().Time,
	}
}
