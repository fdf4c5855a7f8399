package bot

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/alchemic-studio/alfred/bot/lifecycle"
	"github.com/alchemic-studio/alfred/forges"
)

// memForge is an in-memory forges.Forge for engine tests: issues, comments,
// labels, merge requests and CI live in maps; git goes to a real gitForge.
type memForge struct {
	mu       sync.Mutex
	me       string
	git      *gitForge
	perms    map[string]forges.Permission
	issues   map[int64]*forges.Issue
	comments map[forges.Target][]forges.Comment
	mrs      map[int64]*forges.MergeRequest
	ci       map[string]*forges.CIStatus
	reviews  map[int64][]forges.ReviewComment // merge request -> its reviews' texts
	nextID   int64
	calls    []string       // mutating calls, for assertions
	failNext map[string]int // method name -> how many calls fail, as a forge that is down
	goneNext map[string]int // method name -> how many calls answer 404, as a refusal
	missing  int            // reads of an issue that does not exist
}

// down makes the next n calls of method fail like a forge that times out.
func (f *memForge) down(method string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failNext[method] = n
}

// gone makes the next n calls of method answer that what they need does
// not exist (a 404: final, never retried).
func (f *memForge) gone(method string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.goneNext[method] = n
}

// failing reports whether this call of method fails (caller holds f.mu).
func (f *memForge) failing(method string) error {
	if f.goneNext[method] > 0 {
		f.goneNext[method]--
		return fmt.Errorf("%s: label not found: %w", method, forges.ErrNotFound)
	}
	if f.failNext[method] > 0 {
		f.failNext[method]--
		return fmt.Errorf("%s: 504 Gateway Timeout", method)
	}
	return nil
}

func newMemForge(g *gitForge) *memForge {
	return &memForge{me: "alfred", git: g, perms: map[string]forges.Permission{"alice": forges.PermissionWrite, "alfred": forges.PermissionAdmin},
		issues: map[int64]*forges.Issue{}, comments: map[forges.Target][]forges.Comment{}, mrs: map[int64]*forges.MergeRequest{},
		ci: map[string]*forges.CIStatus{}, reviews: map[int64][]forges.ReviewComment{}, nextID: 100, failNext: map[string]int{}, goneNext: map[string]int{}}
}

func (f *memForge) record(format string, args ...any) {
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
}

func (f *memForge) Kind() forges.Kind { return forges.Forgejo }
func (f *memForge) Me(context.Context) (forges.User, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.failing("Me"); err != nil {
		return forges.User{}, err
	}
	return forges.User{Login: f.me, ID: 1}, nil
}
func (f *memForge) Permission(_ context.Context, _ forges.Project, u string) (forges.Permission, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.perms[u], nil
}

func (f *memForge) Issue(_ context.Context, _ forges.Project, n int64) (*forges.Issue, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	is, ok := f.issues[n]
	if !ok {
		f.missing++
		return nil, fmt.Errorf("issue %d: %w", n, forges.ErrNotFound)
	}
	c := *is
	c.Labels = slices.Clone(is.Labels)
	return &c, nil
}

func (f *memForge) SetIssueBody(_ context.Context, _ forges.Project, n int64, body string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.issues[n].Body = body
	f.record("body %d", n)
	return nil
}

func (f *memForge) Comments(_ context.Context, t forges.Target) ([]forges.Comment, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t.Project = forges.Project{}
	return slices.Clone(f.comments[t]), nil
}

func (f *memForge) CreateComment(_ context.Context, t forges.Target, body string) (*forges.Comment, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.failing("CreateComment"); err != nil {
		return nil, err
	}
	t.Project = forges.Project{}
	f.nextID++
	c := forges.Comment{ID: f.nextID, Author: f.me, Body: body, CreatedAt: time.Now()}
	f.comments[t] = append(f.comments[t], c)
	_, kind, _ := forges.ParseMarker(body)
	f.record("comment %s", kind)
	return &c, nil
}

func (f *memForge) EditComment(_ context.Context, t forges.Target, id int64, body string) (*forges.Comment, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t.Project = forges.Project{}
	for i := range f.comments[t] {
		if f.comments[t][i].ID == id {
			f.comments[t][i].Body = body
			f.record("edit comment %d", id)
			c := f.comments[t][i]
			return &c, nil
		}
	}
	return nil, forges.ErrNotFound
}

func (f *memForge) Labels(context.Context, forges.Project) ([]forges.Label, error) {
	return lifecycle.Labels(), nil
}
func (f *memForge) CreateLabel(context.Context, forges.Project, forges.Label) error { return nil }
func (f *memForge) UpdateLabel(context.Context, forges.Project, forges.Label) error { return nil }

func (f *memForge) AddLabels(_ context.Context, t forges.Target, names ...string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.failing("AddLabels"); err != nil {
		return err
	}
	is := f.issues[t.Number]
	for _, n := range names {
		if !slices.Contains(is.Labels, n) {
			is.Labels = append(is.Labels, n)
		}
	}
	f.record("add %s", strings.Join(names, ","))
	return nil
}

func (f *memForge) RemoveLabel(_ context.Context, t forges.Target, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	is := f.issues[t.Number]
	is.Labels = slices.DeleteFunc(is.Labels, func(l string) bool { return l == name })
	f.record("remove %s", name)
	return nil
}

func (f *memForge) MergeRequest(_ context.Context, _ forges.Project, n int64) (*forges.MergeRequest, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	mr, ok := f.mrs[n]
	if !ok {
		return nil, forges.ErrNotFound
	}
	c := *mr
	c.HeadSHA = f.git.head("alice", "demo", mr.SourceBranch)
	return &c, nil
}

func (f *memForge) MergeRequestForBranch(_ context.Context, _ forges.Project, branch string) (*forges.MergeRequest, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, mr := range f.mrs {
		if mr.SourceBranch == branch && mr.State == forges.MergeRequestOpen {
			c := *mr
			return &c, nil
		}
	}
	return nil, fmt.Errorf("branch %s: %w", branch, forges.ErrNotFound)
}

func (f *memForge) CreateMergeRequest(_ context.Context, _ forges.Project, n forges.NewMergeRequest) (*forges.MergeRequest, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextID++
	mr := &forges.MergeRequest{Number: f.nextID, Title: n.Title, Body: n.Body, State: forges.MergeRequestOpen, Author: f.me,
		SourceBranch: n.SourceBranch, TargetBranch: n.TargetBranch, Mergeable: forges.MergeableClean}
	f.mrs[mr.Number] = mr
	f.record("open mr %d", mr.Number)
	return mr, nil
}

func (f *memForge) ReviewComments(_ context.Context, _ forges.Project, n int64, _ time.Time) ([]forges.ReviewComment, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.reviews[n]), nil
}

// reviewed puts the texts of a review by author on merge request n, as the
// forge has them before its webhook arrives.
func (f *memForge) reviewed(n int64, author string, r *forges.Review) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reviews[n] = append(f.reviews[n], forges.ReviewComment{Author: author, Body: r.Body})
	for _, c := range r.Comments {
		c.Author = author
		f.reviews[n] = append(f.reviews[n], c)
	}
}

func (f *memForge) CIStatus(_ context.Context, _ forges.Project, sha string) (*forges.CIStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s, ok := f.ci[sha]; ok {
		return s, nil
	}
	return &forges.CIStatus{SHA: sha, State: forges.CINone}, nil
}

func (f *memForge) BranchExists(context.Context, forges.Project, string) (bool, error) {
	return false, nil
}
func (f *memForge) DefaultBranch(context.Context, forges.Project) (string, error) { return "main", nil }
func (f *memForge) CloneURL(_ context.Context, p forges.Project) (string, error) {
	return f.git.srv.URL + "/" + p.FullName() + ".git", nil
}
func (f *memForge) GitCredentials(context.Context, forges.Project) (string, string, error) {
	return "alfred", "tok-s3cret", nil
}

func (f *memForge) setCI(sha string, state forges.CIState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ci[sha] = &forges.CIStatus{SHA: sha, State: state, Checks: []forges.Check{{Name: "ci/test", State: state, Description: "go test"}}}
}

func (f *memForge) labels(n int64) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.issues[n].Labels)
}

func (f *memForge) commentKinds(t forges.Target) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	t.Project = forges.Project{}
	var out []string
	for _, c := range f.comments[t] {
		_, kind, _ := forges.ParseMarker(c.Body)
		out = append(out, kind)
	}
	return out
}

// setMergeable makes the forge answer m for merge request n, as Forgejo's
// flag does: false (a conflict) may only mean it is still checking.
func (f *memForge) setMergeable(n int64, m forges.Mergeable) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mrs[n].Mergeable = m
}

// commentOf is the body of the last managed comment of kind on t.
func (f *memForge) commentOf(t forges.Target, kind string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	t.Project = forges.Project{}
	body := ""
	for _, c := range f.comments[t] {
		if _, k, _ := forges.ParseMarker(c.Body); k == kind {
			body = c.Body
		}
	}
	return body
}

// posted puts the comment of an event on the forge, as a person's comment
// is there before its webhook arrives; an id already taken by another
// comment gets a fresh one.
func (f *memForge) posted(t forges.Target, c *forges.Comment) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t.Project = forges.Project{}
	for _, have := range f.comments[t] {
		if have.ID == c.ID && have.Author == c.Author && have.Body == c.Body {
			return
		}
	}
	for _, list := range f.comments {
		for _, have := range list {
			if have.ID == c.ID {
				f.nextID++
				c.ID = f.nextID
			}
		}
	}
	if c.ID == 0 {
		f.nextID++
		c.ID = f.nextID
	}
	f.nextID = max(f.nextID, c.ID)
	f.comments[t] = append(f.comments[t], *c)
}
