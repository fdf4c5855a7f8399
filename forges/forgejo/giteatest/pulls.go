package giteatest

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"code.gitea.io/sdk/gitea"

	"github.com/alchemic-studio/alfred/forges"
)

// CreatePull opens a pull request from head into base as author and returns
// its number, which Gitea chose.
func (r *Repo) CreatePull(t testing.TB, author, head, base, title, body string) int64 {
	t.Helper()
	r.in.EnsureUser(t, author)
	pr, _, err := r.in.Client(t, author).CreatePullRequest(r.Owner, r.Name, gitea.CreatePullRequestOption{Head: head, Base: base, Title: title, Body: body})
	check(t, err, "open pull request from %s into %s on %s as %s", head, base, r.FullName(), author)
	return pr.Index
}

// Pull reads pull request number as the admin.
func (r *Repo) Pull(t testing.TB, number int64) *gitea.PullRequest {
	t.Helper()
	pr, _, err := r.in.Client(t, "").GetPullRequest(r.Owner, r.Name, number)
	check(t, err, "read pull request %d of %s", number, r.FullName())
	return pr
}

// settleTimeout bounds WaitMergeable: the forge checks mergeability in a
// queue of its own, which the e2e package's other tests load (a clean
// answer once took over a minute there, on two cores shared with other
// builds); stableFor is how long a clean answer must last to count as
// settled.
const (
	settleTimeout = 5 * time.Minute
	stableFor     = 300 * time.Millisecond
)

// conflictText is what Gitea's page of a pull request says once its check
// found a conflict ("repo.pulls.files_conflicted" in options/locale).
const conflictText = "This pull request has changes conflicting with the target branch."

// WaitMergeable waits until Gitea has settled the mergeability of open pull
// request number as want, MergeableClean or MergeableConflict, and fails the
// test if it settles otherwise or not within settleTimeout.
//
// Gitea checks mergeability in the background and its API says only
// "mergeable": false while it checks, and false again for a conflict. So a
// clean pull request is settled when the API says true (and still does a
// moment later: a push to the base branch queues a new check), and a
// conflicting one when the pull request's web page says Gitea found the
// conflict (the repository is public, so the page needs no sign-in).
func (r *Repo) WaitMergeable(t testing.TB, number int64, want forges.Mergeable) {
	t.Helper()
	deadline := time.Now().Add(settleTimeout)
	for {
		var ok bool
		var seen string
		switch want {
		case forges.MergeableClean:
			ok = r.Pull(t, number).Mergeable
			if ok {
				time.Sleep(stableFor)
				ok = r.Pull(t, number).Mergeable
			}
			seen = "mergeable: false"
		case forges.MergeableConflict:
			ok = !r.Pull(t, number).Mergeable && r.pageSays(t, number, conflictText)
			seen = "no conflict on its page"
		default:
			t.Fatalf("wait for pull request %d of %s: cannot wait for mergeability %q", number, r.FullName(), want)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pull request %d of %s is not settled as %s after %v (%s)", number, r.FullName(), want, settleTimeout, seen)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// pageSays tells whether the web page of pull request number holds text.
func (r *Repo) pageSays(t testing.TB, number int64, text string) bool {
	t.Helper()
	url := r.URL() + "/pulls/" + strconv.FormatInt(number, 10)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	check(t, err, "request %s", url)
	resp, err := (&http.Client{Timeout: callTimeout}).Do(req)
	check(t, err, "read %s", url)
	defer resp.Body.Close()
	page, err := io.ReadAll(resp.Body)
	check(t, err, "read %s", url)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("read %s: HTTP %d", url, resp.StatusCode)
	}
	return strings.Contains(string(page), text)
}

// Merge merges open pull request number as the admin, with a merge commit.
func (r *Repo) Merge(t testing.TB, number int64) {
	t.Helper()
	ok, _, err := r.in.Client(t, "").MergePullRequest(r.Owner, r.Name, number, gitea.MergePullRequestOption{Style: gitea.MergeStyleMerge})
	check(t, err, "merge pull request %d of %s", number, r.FullName())
	if !ok {
		t.Fatalf("merge pull request %d of %s: not merged", number, r.FullName())
	}
}

// ClosePull closes pull request number without merging it, as the admin.
func (r *Repo) ClosePull(t testing.TB, number int64) {
	t.Helper()
	closed := gitea.StateClosed
	_, _, err := r.in.Client(t, "").EditPullRequest(r.Owner, r.Name, number, gitea.EditPullRequestOption{State: &closed})
	check(t, err, "close pull request %d of %s", number, r.FullName())
}

// Review submits a COMMENT review as author on pull request number, with a
// body and inline comments on lines of the head's files (Path and Line of
// each; the files must be in the pull request's diff). It returns the review
// and its inline comments as Gitea stored them.
func (r *Repo) Review(t testing.TB, author string, number int64, body string, inline ...forges.ReviewComment) (*gitea.PullReview, []*gitea.PullReviewComment) {
	t.Helper()
	r.in.EnsureUser(t, author)
	opt := gitea.CreatePullReviewOptions{State: gitea.ReviewStateComment, Body: body}
	for _, c := range inline {
		opt.Comments = append(opt.Comments, gitea.CreatePullReviewComment{Path: c.Path, Body: c.Body, NewLineNum: int64(c.Line)})
	}
	rv, _, err := r.in.Client(t, author).CreatePullReview(r.Owner, r.Name, number, opt)
	check(t, err, "review pull request %d of %s as %s", number, r.FullName(), author)
	if len(inline) == 0 {
		return rv, nil
	}
	comments, _, err := r.in.Client(t, "").ListPullReviewComments(r.Owner, r.Name, number, rv.ID)
	check(t, err, "list comments of review %d of pull request %d of %s", rv.ID, number, r.FullName())
	return rv, comments
}
