package giteatest

import (
	"testing"

	"code.gitea.io/sdk/gitea"

	"github.com/alchemic-studio/alfred/forges"
)

// CreateIssue opens an issue as is.Author with its title and body, then, as
// the admin, puts its labels (created when missing) and assignees on it and
// closes it when is.State is "closed". It returns the issue's number, which
// Gitea chose (is.Number is ignored).
func (r *Repo) CreateIssue(t testing.TB, is forges.Issue) int64 {
	t.Helper()
	r.in.EnsureUser(t, is.Author)
	x, _, err := r.in.Client(t, is.Author).CreateIssue(r.Owner, r.Name, gitea.CreateIssueOption{Title: is.Title, Body: is.Body})
	check(t, err, "open issue %q on %s as %s", is.Title, r.FullName(), is.Author)
	edit := gitea.EditIssueOption{}
	changed := false
	if len(is.Assignees) > 0 {
		for _, a := range is.Assignees {
			r.in.EnsureUser(t, a)
		}
		edit.Assignees, changed = is.Assignees, true
	}
	if is.State == string(gitea.StateClosed) {
		closed := gitea.StateClosed
		edit.State, changed = &closed, true
	}
	if changed {
		_, _, err = r.in.Client(t, "").EditIssue(r.Owner, r.Name, x.Index, edit)
		check(t, err, "edit issue %d of %s", x.Index, r.FullName())
	}
	r.AddLabels(t, x.Index, is.Labels...)
	return x.Index
}

// EnsureLabels creates the labels of names that are missing (colour ededed)
// and returns the ids of all of them, in the order of names.
func (r *Repo) EnsureLabels(t testing.TB, names ...string) []int64 {
	t.Helper()
	c := r.in.Client(t, "")
	have := map[string]int64{}
	for page := 1; ; page++ {
		list, _, err := c.ListRepoLabels(r.Owner, r.Name, gitea.ListLabelsOptions{ListOptions: gitea.ListOptions{Page: page, PageSize: 50}})
		check(t, err, "list labels of %s", r.FullName())
		for _, l := range list {
			have[l.Name] = l.ID
		}
		if len(list) == 0 || len(list) < 50 {
			break
		}
	}
	ids := make([]int64, 0, len(names))
	for _, n := range names {
		id, ok := have[n]
		if !ok {
			l, _, err := c.CreateLabel(r.Owner, r.Name, gitea.CreateLabelOption{Name: n, Color: "#ededed"})
			check(t, err, "create label %s on %s", n, r.FullName())
			id, have[n] = l.ID, l.ID
		}
		ids = append(ids, id)
	}
	return ids
}

// AddLabels puts labels (created when missing) on issue or pull request number.
func (r *Repo) AddLabels(t testing.TB, number int64, names ...string) {
	t.Helper()
	if len(names) == 0 {
		return
	}
	ids := r.EnsureLabels(t, names...)
	_, _, err := r.in.Client(t, "").AddIssueLabels(r.Owner, r.Name, number, gitea.IssueLabelsOption{Labels: ids})
	check(t, err, "add labels %q to %d of %s", names, number, r.FullName())
}

// Comment posts a comment as author on issue or pull request number and returns its id.
func (r *Repo) Comment(t testing.TB, author string, number int64, body string) int64 {
	t.Helper()
	r.in.EnsureUser(t, author)
	c, _, err := r.in.Client(t, author).CreateIssueComment(r.Owner, r.Name, number, gitea.CreateIssueCommentOption{Body: body})
	check(t, err, "comment on %d of %s as %s", number, r.FullName(), author)
	return c.ID
}

// Issue reads issue or pull request number as the admin.
func (r *Repo) Issue(t testing.TB, number int64) *gitea.Issue {
	t.Helper()
	is, _, err := r.in.Client(t, "").GetIssue(r.Owner, r.Name, number)
	check(t, err, "read issue %d of %s", number, r.FullName())
	return is
}

// IssueBody is the stored description of issue or pull request number.
func (r *Repo) IssueBody(t testing.TB, number int64) string {
	t.Helper()
	return r.Issue(t, number).Body
}

// IssueLabels are the names of the labels on issue or pull request number.
func (r *Repo) IssueLabels(t testing.TB, number int64) []string {
	t.Helper()
	names := []string{}
	for _, l := range r.Issue(t, number).Labels {
		names = append(names, l.Name)
	}
	return names
}

// Status records commit status c on commit sha, as the admin.
func (r *Repo) Status(t testing.TB, sha string, c forges.Check) {
	t.Helper()
	_, _, err := r.in.Client(t, "").CreateStatus(r.Owner, r.Name, sha, gitea.CreateStatusOption{
		State: gitea.StatusState(c.State), Context: c.Name, Description: c.Description, TargetURL: c.URL,
	})
	check(t, err, "set status %s of %s on %s", c.Name, sha, r.FullName())
}
