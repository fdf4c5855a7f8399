package gitlab

import (
	"context"
	"fmt"
	"strings"
	"time"

	gl "gitlab.com/gitlab-org/api/client-go/v2"

	"github.com/alchemic-studio/alfred/forges"
)

// Issue reads an issue by iid.
func (f *Forge) Issue(ctx context.Context, p forges.Project, number int64) (*forges.Issue, error) {
	is, _, err := f.client.Issues.GetIssue(pid(p), number, gl.WithContext(ctx))
	if err != nil {
		return nil, wrap(err, "read issue %s#%d", p.FullName(), number)
	}
	out := &forges.Issue{
		Number:    is.IID,
		Title:     is.Title,
		Body:      is.Description,
		State:     issueState(is.State),
		Labels:    []string(is.Labels),
		Assignees: make([]string, 0, len(is.Assignees)),
		URL:       is.WebURL,
		UpdatedAt: deref(is.UpdatedAt),
	}
	if is.Author != nil {
		out.Author = is.Author.Username
	}
	for _, a := range is.Assignees {
		out.Assignees = append(out.Assignees, a.Username)
	}
	return out, nil
}

// SetIssueBody replaces the issue description.
func (f *Forge) SetIssueBody(ctx context.Context, p forges.Project, number int64, body string) error {
	_, _, err := f.client.Issues.UpdateIssue(pid(p), number, &gl.UpdateIssueOptions{Description: gl.Ptr(body)}, gl.WithContext(ctx))
	if err != nil {
		return wrap(err, "set description of issue %s#%d", p.FullName(), number)
	}
	return nil
}

// Comments lists the notes people and bots wrote on an issue or merge
// request, oldest first. GitLab's system notes ("added label", "mentioned
// in") are left out, and so are the review threads of a merge request (diff
// notes and resolvable discussion notes): ReviewComments lists those.
func (f *Forge) Comments(ctx context.Context, t forges.Target) ([]forges.Comment, error) {
	asc, byCreated := gl.Ptr("asc"), gl.Ptr("created_at")
	var (
		notes []*gl.Note
		err   error
	)
	switch t.Kind {
	case forges.TargetIssue:
		notes, err = collect(func(lo gl.ListOptions) ([]*gl.Note, *gl.Response, error) {
			return f.client.Notes.ListIssueNotes(pid(t.Project), t.Number,
				&gl.ListIssueNotesOptions{ListOptions: lo, Sort: asc, OrderBy: byCreated}, gl.WithContext(ctx))
		})
	case forges.TargetMergeRequest:
		notes, err = collect(func(lo gl.ListOptions) ([]*gl.Note, *gl.Response, error) {
			return f.client.Notes.ListMergeRequestNotes(pid(t.Project), t.Number,
				&gl.ListMergeRequestNotesOptions{ListOptions: lo, Sort: asc, OrderBy: byCreated}, gl.WithContext(ctx))
		})
	default:
		return nil, badKind(t)
	}
	if err != nil {
		return nil, wrap(err, "list comments of %s", describe(t))
	}
	out := make([]forges.Comment, 0, len(notes))
	for _, n := range notes {
		if n.System || (t.Kind == forges.TargetMergeRequest && reviewNote(n)) {
			continue
		}
		out = append(out, f.comment(t, n))
	}
	return out, nil
}

// CreateComment posts a note.
func (f *Forge) CreateComment(ctx context.Context, t forges.Target, body string) (*forges.Comment, error) {
	var (
		n   *gl.Note
		err error
	)
	switch t.Kind {
	case forges.TargetIssue:
		n, _, err = f.client.Notes.CreateIssueNote(pid(t.Project), t.Number, &gl.CreateIssueNoteOptions{Body: gl.Ptr(body)}, gl.WithContext(ctx))
	case forges.TargetMergeRequest:
		n, _, err = f.client.Notes.CreateMergeRequestNote(pid(t.Project), t.Number, &gl.CreateMergeRequestNoteOptions{Body: gl.Ptr(body)}, gl.WithContext(ctx))
	default:
		return nil, badKind(t)
	}
	if err != nil {
		return nil, wrap(err, "comment on %s", describe(t))
	}
	c := f.comment(t, n)
	return &c, nil
}

// EditComment replaces the text of a note.
func (f *Forge) EditComment(ctx context.Context, t forges.Target, commentID int64, body string) (*forges.Comment, error) {
	var (
		n   *gl.Note
		err error
	)
	switch t.Kind {
	case forges.TargetIssue:
		n, _, err = f.client.Notes.UpdateIssueNote(pid(t.Project), t.Number, commentID, &gl.UpdateIssueNoteOptions{Body: gl.Ptr(body)}, gl.WithContext(ctx))
	case forges.TargetMergeRequest:
		n, _, err = f.client.Notes.UpdateMergeRequestNote(pid(t.Project), t.Number, commentID, &gl.UpdateMergeRequestNoteOptions{Body: gl.Ptr(body)}, gl.WithContext(ctx))
	default:
		return nil, badKind(t)
	}
	if err != nil {
		return nil, wrap(err, "edit comment %d on %s", commentID, describe(t))
	}
	c := f.comment(t, n)
	return &c, nil
}

func (f *Forge) comment(t forges.Target, n *gl.Note) forges.Comment {
	return forges.Comment{
		ID:        n.ID,
		Author:    n.Author.Username,
		Body:      n.Body,
		URL:       f.noteURL(t, n.ID),
		CreatedAt: deref(n.CreatedAt),
		UpdatedAt: deref(n.UpdatedAt),
	}
}

// noteURL is where GitLab shows a note. The API does not return it, so it is
// built like GitLab builds it, from the instance root and the project path.
func (f *Forge) noteURL(t forges.Target, id int64) string {
	kind := "issues"
	if t.Kind == forges.TargetMergeRequest {
		kind = "merge_requests"
	}
	return fmt.Sprintf("%s/%s/-/%s/%d#note_%d", f.web, t.Project.FullName(), kind, t.Number, id)
}

// Labels lists the project's labels, including those inherited from its groups.
func (f *Forge) Labels(ctx context.Context, p forges.Project) ([]forges.Label, error) {
	labels, err := collect(func(lo gl.ListOptions) ([]*gl.Label, *gl.Response, error) {
		return f.client.Labels.ListLabels(pid(p), &gl.ListLabelsOptions{ListOptions: lo, IncludeAncestorGroups: gl.Ptr(true)}, gl.WithContext(ctx))
	})
	if err != nil {
		return nil, wrap(err, "list labels of %s", p.FullName())
	}
	out := make([]forges.Label, 0, len(labels))
	for _, l := range labels {
		out = append(out, forges.Label{Name: l.Name, Color: strings.ToLower(strings.TrimPrefix(l.Color, "#")), Description: l.Description})
	}
	return out, nil
}

// CreateLabel defines a project label.
func (f *Forge) CreateLabel(ctx context.Context, p forges.Project, l forges.Label) error {
	_, _, err := f.client.Labels.CreateLabel(pid(p), &gl.CreateLabelOptions{
		Name:        gl.Ptr(l.Name),
		Color:       gl.Ptr(color(l.Color)),
		Description: gl.Ptr(l.Description),
	}, gl.WithContext(ctx))
	if err != nil {
		return wrap(err, "create label %q in %s", l.Name, p.FullName())
	}
	return nil
}

// UpdateLabel sets the colour and description of the label named l.Name.
func (f *Forge) UpdateLabel(ctx context.Context, p forges.Project, l forges.Label) error {
	_, _, err := f.client.Labels.UpdateLabel(pid(p), l.Name, &gl.UpdateLabelOptions{
		Color:       gl.Ptr(color(l.Color)),
		Description: gl.Ptr(l.Description),
	}, gl.WithContext(ctx))
	if err != nil {
		return wrap(err, "update label %q in %s", l.Name, p.FullName())
	}
	return nil
}

// color is the form GitLab wants: "#" and six hex digits.
func color(c string) string { return "#" + strings.TrimPrefix(c, "#") }

// AddLabels adds labels with add_labels, which keeps the ones already there.
func (f *Forge) AddLabels(ctx context.Context, t forges.Target, names ...string) error {
	if len(names) == 0 {
		return nil
	}
	lo := gl.LabelOptions(names)
	if err := f.updateLabels(ctx, t, &lo, nil); err != nil {
		return wrap(err, "add labels %q to %s", names, describe(t))
	}
	return nil
}

// RemoveLabel removes a label with remove_labels; GitLab ignores a label that
// is not there.
func (f *Forge) RemoveLabel(ctx context.Context, t forges.Target, name string) error {
	lo := gl.LabelOptions{name}
	if err := f.updateLabels(ctx, t, nil, &lo); err != nil {
		return wrap(err, "remove label %q from %s", name, describe(t))
	}
	return nil
}

func (f *Forge) updateLabels(ctx context.Context, t forges.Target, add, remove *gl.LabelOptions) error {
	var err error
	switch t.Kind {
	case forges.TargetIssue:
		_, _, err = f.client.Issues.UpdateIssue(pid(t.Project), t.Number, &gl.UpdateIssueOptions{AddLabels: add, RemoveLabels: remove}, gl.WithContext(ctx))
	case forges.TargetMergeRequest:
		_, _, err = f.client.MergeRequests.UpdateMergeRequest(pid(t.Project), t.Number, &gl.UpdateMergeRequestOptions{AddLabels: add, RemoveLabels: remove}, gl.WithContext(ctx))
	default:
		return badKind(t)
	}
	return err
}

func issueState(s string) string {
	if s == "opened" {
		return "open"
	}
	return s
}

func describe(t forges.Target) string {
	if t.Kind == forges.TargetMergeRequest {
		return fmt.Sprintf("merge request %s!%d", t.Project.FullName(), t.Number)
	}
	return fmt.Sprintf("issue %s#%d", t.Project.FullName(), t.Number)
}

func badKind(t forges.Target) error {
	return fmt.Errorf("gitlab: target kind %q of %s#%d is neither %q nor %q", t.Kind, t.Project.FullName(), t.Number, forges.TargetIssue, forges.TargetMergeRequest)
}

func deref(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}
