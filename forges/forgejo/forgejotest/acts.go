package forgejotest

import (
	"fmt"
	"slices"
	"strings"

	"github.com/alchemic-studio/alfred/forges"
)

// People's actions: each changes the state as the person would through the
// web UI and then delivers the webhook Forgejo 7 sends for it, waiting for the
// delivery. The Delivery says what the bot's endpoint answered (zero when no
// webhook is set).

// ActOpenIssue opens an issue as is.Author.
func (s *Server) ActOpenIssue(is forges.Issue) Delivery {
	s.mu.Lock()
	x := s.addIssue(is.Number, is.Title, is.Body, "open", is.Author)
	x.labels = s.ensureLabels(is.Labels)
	x.assignees = slices.Clone(is.Assignees)
	o := s.hookIssueEvent(x, "issues", "opened", is.Author, nil)
	s.mu.Unlock()
	return o.Wait()
}

// ActAssign adds assignee to issue or pull request number, done by by.
func (s *Server) ActAssign(number int64, assignee, by string) (Delivery, error) {
	return s.act(number, func(is *issue) *outgoing {
		if !slices.Contains(is.assignees, assignee) {
			is.assignees = append(is.assignees, assignee)
		}
		s.userFor(assignee)
		return s.hookIssueEvent(is, "issue_assign", "assigned", by, nil)
	})
}

// ActUnassign removes assignee, done by by.
func (s *Server) ActUnassign(number int64, assignee, by string) (Delivery, error) {
	return s.act(number, func(is *issue) *outgoing {
		is.assignees = slices.DeleteFunc(is.assignees, func(a string) bool { return a == assignee })
		return s.hookIssueEvent(is, "issue_assign", "unassigned", by, nil)
	})
}

// ActLabel adds and removes labels (defining unknown ones), done by by. Like
// Forgejo 7 it sends label_updated with the resulting labels and no delta.
func (s *Server) ActLabel(number int64, by string, add, remove []string) (Delivery, error) {
	return s.act(number, func(is *issue) *outgoing {
		for _, id := range s.ensureLabels(add) {
			s.putLabel(is, id)
		}
		for _, n := range remove {
			if l := s.labelByName(n); l != nil {
				is.labels = slices.DeleteFunc(is.labels, func(x int64) bool { return x == l.id })
			}
		}
		return s.hookIssueEvent(is, "issue_label", "label_updated", by, nil)
	})
}

// ActComment posts a comment as author.
func (s *Server) ActComment(number int64, author, body string) (Delivery, error) {
	return s.act(number, func(is *issue) *outgoing {
		return s.hookComment(s.addComment(number, author, body), "created", nil)
	})
}

// ActEditBody replaces the description, done by by.
func (s *Server) ActEditBody(number int64, by, body string) (Delivery, error) {
	return s.act(number, func(is *issue) *outgoing {
		from := is.body
		is.body = body
		return s.hookIssueEvent(is, "issues", "edited", by, map[string]any{"body": map[string]any{"from": from}})
	})
}

// ActClose closes an issue or pull request without merging, done by by.
func (s *Server) ActClose(number int64, by string) (Delivery, error) {
	return s.act(number, func(is *issue) *outgoing {
		now := s.now()
		is.state, is.closed = "closed", &now
		return s.hookIssueEvent(is, "issues", "closed", by, nil)
	})
}

// ActMerge merges pull request number as by: pull_request closed with
// merged true, then a push to the base branch, as Forgejo 7 sends them.
func (s *Server) ActMerge(number int64, by string) (Delivery, error) {
	var push *outgoing
	d, err := s.act(number, func(is *issue) *outgoing {
		if is.pull == nil {
			return nil
		}
		now := s.now()
		is.state, is.closed = "closed", &now
		is.pull.merged, is.pull.mergedAt = true, &now
		before := s.branches[is.pull.base]
		after := fmt.Sprintf("%040x", now.UnixNano())
		s.branches[is.pull.base] = after
		o := s.enqueue("pull_request", "pull_request", s.pullPayload(is, "closed", by, nil))
		push = s.hookPush(is.pull.base, before, after, by)
		return o
	})
	push.Wait()
	return d, err
}

// ActPush moves branch to sha as by: a push, then pull_request_sync
// "synchronized" for each open pull request from that branch.
func (s *Server) ActPush(branch, sha, by string) []Delivery {
	s.mu.Lock()
	before, ok := s.branches[branch]
	if !ok {
		before = strings.Repeat("0", 40)
	}
	s.branches[branch] = sha
	outs := []*outgoing{s.hookPush(branch, before, sha, by)}
	for _, is := range s.pullsByState("open") {
		if is.pull.head == branch {
			s.moved(is, sha)
			outs = append(outs, s.enqueue("pull_request", "pull_request_sync", s.pullPayload(is, "synchronized", by, nil)))
		}
	}
	s.mu.Unlock()
	var ds []Delivery
	for _, o := range outs {
		ds = append(ds, o.Wait())
	}
	return ds
}

// ActDeleteBranch deletes branch as by.
func (s *Server) ActDeleteBranch(branch, by string) Delivery {
	s.mu.Lock()
	delete(s.branches, branch)
	o := s.hookDelete(branch, by)
	s.mu.Unlock()
	return o.Wait()
}

// ActReview submits a review by author on pull request number: state
// APPROVED, REQUEST_CHANGES or COMMENT, with a body and inline comments. The
// webhook is as thin as Forgejo 7's: type and content only.
func (s *Server) ActReview(number int64, author, state, body string, inline ...forges.ReviewComment) (Delivery, error) {
	s.mu.Lock()
	at := s.now()
	s.mu.Unlock()
	if err := s.AddReview(number, author, state, body, at, inline...); err != nil {
		return Delivery{}, err
	}
	return s.act(number, func(is *issue) *outgoing { return s.hookReview(is, author, strings.ToUpper(state), body) })
}

func (s *Server) act(number int64, f func(*issue) *outgoing) (Delivery, error) {
	s.mu.Lock()
	is := s.issues[number]
	if is == nil {
		s.mu.Unlock()
		return Delivery{}, fmt.Errorf("no issue or pull request %d", number)
	}
	is.upd = s.now()
	o := f(is)
	s.mu.Unlock()
	return o.Wait(), nil
}
