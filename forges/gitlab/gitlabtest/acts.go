package gitlabtest

import (
	"fmt"
	"slices"
	"time"

	"github.com/alchemic-studio/alfred/forges"
)

// People's actions: each changes the state as the person would through
// GitLab's web UI, then delivers the webhook GitLab sends for it and waits
// for the delivery. The Delivery says what the bot's endpoint answered (its
// Status; zero when no webhook is set, see SetWebhook). A person the fake
// does not know yet becomes a user with read access.

// ActOpenIssue opens issue is.Number as is.Author, with its labels (defined
// when new) and assignees: an Issue Hook "open".
func (f *Server) ActOpenIssue(is forges.Issue) (Delivery, error) {
	f.mu.Lock()
	if is.Number <= 0 || f.issues[is.Number] != nil {
		f.mu.Unlock()
		return Delivery{}, fmt.Errorf("issue %d: want a new positive iid", is.Number)
	}
	f.seedUser(is.Author)
	for _, a := range is.Assignees {
		f.seedUser(a)
	}
	f.ensureLabels(is.Labels)
	now := f.tick()
	x := &fakeIssue{ID: f.id(), IID: is.Number, Title: is.Title, Description: is.Body, State: "opened",
		Author: is.Author, Labels: slices.Clone(is.Labels), Assignees: slices.Clone(is.Assignees), CreatedAt: now, UpdatedAt: now}
	f.issues[is.Number] = x
	o := f.issueHook(x, "open", is.Author, f.openChanges(x), now)
	f.mu.Unlock()
	return o.Wait(), nil
}

// ActAssign adds assignee to issue iid, done by actor: an Issue Hook
// "update" whose changes hold the assignees before and after.
func (f *Server) ActAssign(iid int64, assignee, actor string) (Delivery, error) {
	return f.actIssue(iid, actor, func(is *fakeIssue) {
		f.seedUser(assignee)
		if !slices.Contains(is.Assignees, assignee) {
			is.Assignees = append(is.Assignees, assignee)
		}
	})
}

// ActUnassign removes assignee from issue iid, done by actor.
func (f *Server) ActUnassign(iid int64, assignee, actor string) (Delivery, error) {
	return f.actIssue(iid, actor, func(is *fakeIssue) {
		is.Assignees = slices.DeleteFunc(is.Assignees, func(a string) bool { return a == assignee })
	})
}

// ActLabel adds and removes labels of issue iid (defining unknown ones),
// done by actor: an Issue Hook "update" whose changes hold the labels before
// and after.
func (f *Server) ActLabel(iid int64, actor string, add, remove []string) (Delivery, error) {
	return f.actIssue(iid, actor, func(is *fakeIssue) {
		f.ensureLabels(add)
		for _, l := range add {
			if !slices.Contains(is.Labels, l) {
				is.Labels = append(is.Labels, l)
			}
		}
		is.Labels = slices.DeleteFunc(is.Labels, func(l string) bool { return slices.Contains(remove, l) })
	})
}

// ActEditBody replaces the description of issue iid, done by actor.
func (f *Server) ActEditBody(iid int64, actor, body string) (Delivery, error) {
	return f.actIssue(iid, actor, func(is *fakeIssue) { is.Description = body })
}

// ActClose closes issue iid, done by actor: an Issue Hook "close".
func (f *Server) ActClose(iid int64, actor string) (Delivery, error) {
	return f.actIssue(iid, actor, func(is *fakeIssue) { is.State = "closed" })
}

// ActReopen reopens issue iid, done by actor: an Issue Hook "reopen".
func (f *Server) ActReopen(iid int64, actor string) (Delivery, error) {
	return f.actIssue(iid, actor, func(is *fakeIssue) { is.State = "opened" })
}

// ActComment posts a note by author on issue iid: a Note Hook "create".
func (f *Server) ActComment(iid int64, author, body string) (Delivery, error) {
	return f.actNote(noteKey{"issues", iid}, author, body, "")
}

// ActCommentMergeRequest posts a plain note by author on merge request iid.
func (f *Server) ActCommentMergeRequest(iid int64, author, body string) (Delivery, error) {
	return f.actNote(noteKey{"merge_requests", iid}, author, body, "")
}

// ActReviewComment starts a review thread by author on merge request iid
// (a DiscussionNote, what a review's overview comment becomes): a Note
// Hook the bot reads as a review.
func (f *Server) ActReviewComment(iid int64, author, body string) (Delivery, error) {
	return f.actNote(noteKey{"merge_requests", iid}, author, body, "DiscussionNote")
}

func (f *Server) actNote(key noteKey, author, body, typ string) (Delivery, error) {
	f.mu.Lock()
	if key.kind == "issues" && f.issues[key.iid] == nil || key.kind == "merge_requests" && f.mrs[key.iid] == nil {
		f.mu.Unlock()
		return Delivery{}, fmt.Errorf("no %s %d", key.kind, key.iid)
	}
	f.seedUser(author)
	n := f.addNote(key, author, body, typ, time.Time{})
	o := f.noteHook(key, n, "create")
	f.mu.Unlock()
	return o.Wait(), nil
}

// actIssue changes issue iid with change as actor and delivers the Issue
// Hook GitLab sends: close or reopen when the state moved, else update with
// the changes.
func (f *Server) actIssue(iid int64, actor string, change func(*fakeIssue)) (Delivery, error) {
	f.mu.Lock()
	is := f.issues[iid]
	if is == nil {
		f.mu.Unlock()
		return Delivery{}, fmt.Errorf("no issue %d", iid)
	}
	f.seedUser(actor)
	prev := cloneIssue(is)
	change(is)
	is.UpdatedAt = f.tick()
	o := f.issueUpdated(prev, is, actor)
	f.mu.Unlock()
	return o.Wait(), nil
}

// issueUpdated delivers the Issue Hook of is changed from prev by actor;
// callers hold mu.
func (f *Server) issueUpdated(prev, is *fakeIssue, actor string) *outgoing {
	action := "update"
	switch {
	case prev.State != "closed" && is.State == "closed":
		action = "close"
	case prev.State == "closed" && is.State != "closed":
		action = "reopen"
	}
	return f.issueHook(is, action, actor, f.issueChanges(prev, is), prev.UpdatedAt)
}

func cloneIssue(is *fakeIssue) *fakeIssue {
	c := *is
	c.Labels, c.Assignees = slices.Clone(is.Labels), slices.Clone(is.Assignees)
	return &c
}

func cloneMR(mr *fakeMR) *fakeMR {
	c := *mr
	c.Labels = slices.Clone(mr.Labels)
	return &c
}

// Readers for tests.

// Issue is issue iid as the API shows it.
func (f *Server) Issue(iid int64) (forges.Issue, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	is, ok := f.issues[iid]
	if !ok {
		return forges.Issue{}, false
	}
	state := "open"
	if is.State == "closed" {
		state = "closed"
	}
	return forges.Issue{Number: is.IID, Title: is.Title, Body: is.Description, State: state, Author: is.Author,
		Labels: slices.Clone(is.Labels), Assignees: slices.Clone(is.Assignees),
		URL: fmt.Sprintf("%s/%s/-/issues/%d", f.srv.URL, f.path, is.IID), UpdatedAt: is.UpdatedAt}, true
}

// Comments are the notes on the issue or merge request tg, oldest first.
func (f *Server) Comments(tg forges.Target) []forges.Comment {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []forges.Comment
	for _, n := range f.notes[noteKeyOf(tg)] {
		out = append(out, forges.Comment{ID: n.ID, Author: n.Author, Body: n.Body, CreatedAt: n.CreatedAt, UpdatedAt: n.UpdatedAt})
	}
	return out
}

// Branch is the commit branch name points at.
func (f *Server) Branch(name string) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	sha, ok := f.branches[name]
	return sha, ok
}

// MergeRequests are the merge requests, by iid.
func (f *Server) MergeRequests() []forges.MergeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []forges.MergeRequest
	for _, mr := range f.mrs {
		out = append(out, forges.MergeRequest{Number: mr.IID, Title: mr.Title, Body: mr.Description, SourceBranch: mr.Source,
			TargetBranch: mr.Target, HeadSHA: mr.SHA, Author: mr.Author,
			State: map[string]string{"opened": forges.MergeRequestOpen, "closed": forges.MergeRequestClosed, "merged": forges.MergeRequestMerged}[mr.State]})
	}
	slices.SortFunc(out, func(a, b forges.MergeRequest) int { return int(a.Number - b.Number) })
	return out
}
