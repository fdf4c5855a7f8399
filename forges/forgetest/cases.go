package forgetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/forges"
)

// ctxFor bounds the calls of the Forge under test. Cases take it once seeded:
// seeding a real forge takes seconds per merge request. It guards against a
// hang, not a slow answer: a real Forgejo beside the e2e package on two
// cores once took over 30 s for a case's few listings.
func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func issueTarget(h Harness, n int64) forges.Target {
	return forges.Target{Project: h.Project(), Kind: forges.TargetIssue, Number: n}
}

func mrTarget(h Harness, n int64) forges.Target {
	return forges.Target{Project: h.Project(), Kind: forges.TargetMergeRequest, Number: n}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func sameSet(a, b []string) bool { return slices.Equal(sorted(a), sorted(b)) }

func testIdentity(t *testing.T, h Harness) {
	ctx, f, p, w := ctxFor(t), h.Forge(), h.Project(), h.Want()
	if f.Kind() == "" {
		t.Error("Kind() is empty")
	}
	me, err := f.Me(ctx)
	if err != nil {
		t.Fatalf("Me: %v", err)
	}
	if me.Login != w.BotLogin {
		t.Errorf("Me().Login = %q, want %q", me.Login, w.BotLogin)
	}
	if br, err := f.DefaultBranch(ctx, p); err != nil || br != w.DefaultBranch {
		t.Errorf("DefaultBranch = %q, %v; want %q", br, err, w.DefaultBranch)
	}
	if u, err := f.CloneURL(ctx, p); err != nil || u != w.CloneURL {
		t.Errorf("CloneURL = %q, %v; want %q", u, err, w.CloneURL)
	}
	if u, pw, err := f.GitCredentials(ctx, p); err != nil || u != w.GitUsername || pw != w.GitPassword {
		t.Errorf("GitCredentials = %q, (secret), %v; want %q and the configured token", u, err, w.GitUsername)
	}
}

func testPermission(t *testing.T, h Harness) {
	ctx, f, p := ctxFor(t), h.Forge(), h.Project()
	h.SeedUser(t, "olivia", forges.PermissionAdmin)
	h.SeedUser(t, "wendy", forges.PermissionWrite)
	h.SeedUser(t, "reed", forges.PermissionRead)
	for _, tc := range []struct {
		user string
		want forges.Permission
	}{
		{"olivia", forges.PermissionAdmin},
		{"wendy", forges.PermissionWrite},
		{"reed", forges.PermissionRead},
		{"nobody-at-all", forges.PermissionNone},
	} {
		got, err := f.Permission(ctx, p, tc.user)
		if err != nil {
			t.Errorf("Permission(%q): %v", tc.user, err)
			continue
		}
		if got != tc.want {
			t.Errorf("Permission(%q) = %v, want %v", tc.user, got, tc.want)
		}
	}
}

func testIssue(t *testing.T, h Harness) {
	ctx, f, p := ctxFor(t), h.Forge(), h.Project()
	want := forges.Issue{
		Number: 7, Title: "Add a name on ai client and resume from it #6 #7",
		Body:   "Première ligne\r\nsecond line ✓\r\n\r\n```go\nx := 1\n```\n",
		Author: "alice", Labels: []string{"type::task", "status::in_ci"}, Assignees: []string{h.Want().BotLogin},
	}
	want.Number = h.SeedIssue(t, want)
	closedNumber := h.SeedIssue(t, forges.Issue{Number: 8, Title: "closed one", Body: "x", Author: "alice", State: "closed"})
	got, err := f.Issue(ctx, p, want.Number)
	if err != nil {
		t.Fatalf("Issue(%d): %v", want.Number, err)
	}
	if got.Number != want.Number || got.Title != want.Title || got.Body != want.Body || got.Author != "alice" || got.State != "open" {
		t.Errorf("Issue(%d) = %+v, want %+v with state open", want.Number, got, want)
	}
	if !sameSet(got.Labels, want.Labels) {
		t.Errorf("Issue(%d).Labels = %q, want %q", want.Number, got.Labels, want.Labels)
	}
	if !sameSet(got.Assignees, want.Assignees) {
		t.Errorf("Issue(%d).Assignees = %q, want %q", want.Number, got.Assignees, want.Assignees)
	}
	closed, err := f.Issue(ctx, p, closedNumber)
	if err != nil {
		t.Fatalf("Issue(%d): %v", closedNumber, err)
	}
	if closed.State != "closed" {
		t.Errorf("Issue(%d).State = %q, want closed", closedNumber, closed.State)
	}
}

func testNotFound(t *testing.T, h Harness) {
	ctx, f, p := ctxFor(t), h.Forge(), h.Project()
	n := h.SeedIssue(t, forges.Issue{Number: 1, Title: "t", Author: "alice"})
	if _, err := f.Issue(ctx, p, 999); !errors.Is(err, forges.ErrNotFound) {
		t.Errorf("Issue(999) error = %v, want one wrapping ErrNotFound", err)
	}
	if _, err := f.MergeRequest(ctx, p, 999); !errors.Is(err, forges.ErrNotFound) {
		t.Errorf("MergeRequest(999) error = %v, want one wrapping ErrNotFound", err)
	}
	if _, err := f.Comments(ctx, issueTarget(h, 999)); !errors.Is(err, forges.ErrNotFound) {
		t.Errorf("Comments(issue 999) error = %v, want one wrapping ErrNotFound", err)
	}
	if _, err := f.CreateComment(ctx, issueTarget(h, 999), "x"); !errors.Is(err, forges.ErrNotFound) {
		t.Errorf("CreateComment(issue 999) error = %v, want one wrapping ErrNotFound", err)
	}
	if _, err := f.EditComment(ctx, issueTarget(h, n), 999999, "x"); !errors.Is(err, forges.ErrNotFound) {
		t.Errorf("EditComment(999999) error = %v, want one wrapping ErrNotFound", err)
	}
	err := f.UpdateLabel(ctx, p, forges.Label{Name: "no-such-label", Color: "ededed"})
	if !errors.Is(err, forges.ErrNotFound) {
		t.Errorf("UpdateLabel(no-such-label) error = %v, want one wrapping ErrNotFound", err)
	}
}

func testSetIssueBody(t *testing.T, h Harness) {
	ctx, f, p := ctxFor(t), h.Forge(), h.Project()
	n := h.SeedIssue(t, forges.Issue{Number: 3, Title: "t", Body: "old", Author: "alice"})
	body := "People wrote this.\r\n\r\n<!-- agent:section:start -->\r\n## Agent ✓\r\n<!-- agent:section:end -->\r\n"
	if err := f.SetIssueBody(ctx, p, n, body); err != nil {
		t.Fatalf("SetIssueBody: %v", err)
	}
	if got := h.IssueBody(t, n); got != body {
		t.Errorf("stored body = %q, want %q", got, body)
	}
	got, err := f.Issue(ctx, p, n)
	if err != nil {
		t.Fatalf("Issue(%d): %v", n, err)
	}
	if got.Body != body {
		t.Errorf("Issue(%d).Body = %q, want %q", n, got.Body, body)
	}
	if err := f.SetIssueBody(ctx, p, 999, "x"); !errors.Is(err, forges.ErrNotFound) {
		t.Errorf("SetIssueBody(999) error = %v, want one wrapping ErrNotFound", err)
	}
}

func testCommentsPaginated(t *testing.T, h Harness) {
	f := h.Forge()
	tg := issueTarget(h, h.SeedIssue(t, forges.Issue{Number: 2, Title: "t", Author: "alice"}))
	var ids []int64
	for i := range 120 {
		author := "alice"
		if i%3 == 0 {
			author = h.Want().BotLogin
		}
		ids = append(ids, h.SeedComment(t, tg, author, fmt.Sprintf("comment %03d", i)))
	}
	got, err := f.Comments(ctxFor(t), tg)
	if err != nil {
		t.Fatalf("Comments: %v", err)
	}
	if len(got) != 120 {
		t.Fatalf("Comments returned %d comments, want 120", len(got))
	}
	for i, c := range got {
		if c.ID != ids[i] || c.Body != fmt.Sprintf("comment %03d", i) {
			t.Fatalf("comment %d = {ID %d, Body %q}, want {ID %d, Body %q} (oldest first)", i, c.ID, c.Body, ids[i], fmt.Sprintf("comment %03d", i))
		}
		wantAuthor := "alice"
		if i%3 == 0 {
			wantAuthor = h.Want().BotLogin
		}
		if c.Author != wantAuthor {
			t.Fatalf("comment %d author = %q, want %q", i, c.Author, wantAuthor)
		}
	}
}

func testCreateAndEditComment(t *testing.T, h Harness) {
	ctx, f := ctxFor(t), h.Forge()
	tg := issueTarget(h, h.SeedIssue(t, forges.Issue{Number: 4, Title: "t", Author: "alice"}))
	h.SeedComment(t, tg, "alice", "first")
	c, err := f.CreateComment(ctx, tg, "hello ✓\n\n<!-- agent:key=0123456789ab:kind=acknowledgement -->")
	if err != nil {
		t.Fatalf("CreateComment: %v", err)
	}
	if c.ID == 0 || c.Author != h.Want().BotLogin || !strings.HasPrefix(c.Body, "hello ✓") {
		t.Errorf("CreateComment = %+v, want an id, author %q and the body", c, h.Want().BotLogin)
	}
	e, err := f.EditComment(ctx, tg, c.ID, "edited")
	if err != nil {
		t.Fatalf("EditComment: %v", err)
	}
	if e.ID != c.ID || e.Body != "edited" {
		t.Errorf("EditComment = %+v, want id %d and body edited", e, c.ID)
	}
	all, err := f.Comments(ctx, tg)
	if err != nil {
		t.Fatalf("Comments: %v", err)
	}
	if len(all) != 2 || all[0].Body != "first" || all[1].ID != c.ID || all[1].Body != "edited" {
		t.Errorf("Comments after edit = %+v, want [first, edited]", all)
	}
}

func testMergeRequestComments(t *testing.T, h Harness) {
	f := h.Forge()
	is := h.SeedIssue(t, forges.Issue{Number: 5, Title: "issue", Author: "alice"})
	mr := h.SeedMergeRequest(t, forges.MergeRequest{Number: 20, Title: "mr", Author: h.Want().BotLogin, State: forges.MergeRequestOpen,
		SourceBranch: "agent/issue-5-x", TargetBranch: h.Want().DefaultBranch, Mergeable: forges.MergeableUnknown})
	h.SeedComment(t, issueTarget(h, is), "alice", "on the issue")
	h.SeedComment(t, mrTarget(h, mr.Number), "alice", "on the mr")
	ctx := ctxFor(t)
	if _, err := f.CreateComment(ctx, mrTarget(h, mr.Number), "bot on the mr"); err != nil {
		t.Fatalf("CreateComment on mr: %v", err)
	}
	got, err := f.Comments(ctx, mrTarget(h, mr.Number))
	if err != nil {
		t.Fatalf("Comments(mr): %v", err)
	}
	var bodies []string
	for _, c := range got {
		bodies = append(bodies, c.Body)
	}
	if !slices.Equal(bodies, []string{"on the mr", "bot on the mr"}) {
		t.Errorf("Comments(mr %d) bodies = %q, want [on the mr, bot on the mr]", mr.Number, bodies)
	}
}

func testLabels(t *testing.T, h Harness) {
	ctx, f, p := ctxFor(t), h.Forge(), h.Project()
	want := map[string]forges.Label{}
	for i := range 60 {
		l := forges.Label{Name: fmt.Sprintf("area::part-%02d", i), Color: fmt.Sprintf("%06x", 0x101010*(i%15)+i), Description: fmt.Sprintf("part %d", i)}
		if err := f.CreateLabel(ctx, p, l); err != nil {
			t.Fatalf("CreateLabel(%s): %v", l.Name, err)
		}
		want[l.Name] = l
	}
	upd := forges.Label{Name: "area::part-07", Color: "abcdef", Description: "changed ✓"}
	if err := f.UpdateLabel(ctx, p, upd); err != nil {
		t.Fatalf("UpdateLabel: %v", err)
	}
	want[upd.Name] = upd
	got, err := f.Labels(ctx, p)
	if err != nil {
		t.Fatalf("Labels: %v", err)
	}
	seen := map[string]bool{}
	for _, l := range got {
		w, ok := want[l.Name]
		if !ok {
			continue
		}
		seen[l.Name] = true
		if strings.HasPrefix(l.Color, "#") || !forges.SameColor(l.Color, w.Color) || l.Description != w.Description {
			t.Errorf("label %s = {%q, %q}, want {%q, %q} (colour without '#')", l.Name, l.Color, l.Description, w.Color, w.Description)
		}
	}
	if len(seen) != len(want) {
		t.Errorf("Labels returned %d of the %d created labels (pagination?)", len(seen), len(want))
	}
}

func testAddRemoveLabels(t *testing.T, h Harness) {
	ctx, f, p := ctxFor(t), h.Forge(), h.Project()
	for _, n := range []string{"status::in_ci", "ai::retry", "type::bug", "other"} {
		if err := f.CreateLabel(ctx, p, forges.Label{Name: n, Color: "ededed"}); err != nil {
			t.Fatalf("CreateLabel(%s): %v", n, err)
		}
	}
	is := h.SeedIssue(t, forges.Issue{Number: 6, Title: "t", Author: "alice", Labels: []string{"type::bug"}})
	mr := h.SeedMergeRequest(t, forges.MergeRequest{Number: 21, Title: "mr", Author: h.Want().BotLogin, State: forges.MergeRequestOpen,
		SourceBranch: "agent/issue-6-x", TargetBranch: h.Want().DefaultBranch, Mergeable: forges.MergeableUnknown})
	ctx = ctxFor(t)
	for _, tg := range []forges.Target{issueTarget(h, is), mrTarget(h, mr.Number)} {
		before := h.TargetLabels(t, tg)
		if err := f.AddLabels(ctx, tg, "status::in_ci", "ai::retry"); err != nil {
			t.Fatalf("AddLabels(%v): %v", tg, err)
		}
		want := append(slices.Clone(before), "status::in_ci", "ai::retry")
		if got := h.TargetLabels(t, tg); !sameSet(got, want) {
			t.Errorf("labels of %s %d after AddLabels = %q, want %q", tg.Kind, tg.Number, got, want)
		}
		if err := f.RemoveLabel(ctx, tg, "ai::retry"); err != nil {
			t.Fatalf("RemoveLabel(%v): %v", tg, err)
		}
		if err := f.RemoveLabel(ctx, tg, "other"); err != nil {
			t.Errorf("RemoveLabel of a label not on %s %d: %v, want no error", tg.Kind, tg.Number, err)
		}
		want = append(slices.Clone(before), "status::in_ci")
		if got := h.TargetLabels(t, tg); !sameSet(got, want) {
			t.Errorf("labels of %s %d after RemoveLabel = %q, want %q", tg.Kind, tg.Number, got, want)
		}
	}
	got, err := f.Issue(ctx, p, is)
	if err != nil {
		t.Fatalf("Issue(%d): %v", is, err)
	}
	if !sameSet(got.Labels, []string{"type::bug", "status::in_ci"}) {
		t.Errorf("Issue(%d).Labels = %q, want [type::bug status::in_ci]", is, got.Labels)
	}
}

// seedMRs seeds an open clean, an open conflicting, a merged and a closed
// merge request, merged first (see the package comment), and returns them in
// that order: open clean, open conflict, merged, closed.
func seedMRs(t *testing.T, h Harness) []forges.MergeRequest {
	bot, main := h.Want().BotLogin, h.Want().DefaultBranch
	merged := h.SeedMergeRequest(t, forges.MergeRequest{Number: 24, Title: "merged", Body: "Closes #3", Author: "alice", State: forges.MergeRequestMerged,
		SourceBranch: "feature/merged", TargetBranch: main, Mergeable: forges.MergeableClean})
	closed := h.SeedMergeRequest(t, forges.MergeRequest{Number: 25, Title: "closed", Body: "nope", Author: "alice", State: forges.MergeRequestClosed,
		SourceBranch: "feature/closed", TargetBranch: main, Mergeable: forges.MergeableClean})
	clean := h.SeedMergeRequest(t, forges.MergeRequest{Number: 22, Title: "open clean", Body: "Closes #1", Author: bot, State: forges.MergeRequestOpen,
		SourceBranch: "agent/issue-1-open", TargetBranch: main, Mergeable: forges.MergeableClean})
	conflict := h.SeedMergeRequest(t, forges.MergeRequest{Number: 23, Title: "open conflict", Body: "Closes #2", Author: bot, State: forges.MergeRequestOpen,
		SourceBranch: "agent/issue-2-conflict", TargetBranch: main, Mergeable: forges.MergeableConflict})
	return []forges.MergeRequest{clean, conflict, merged, closed}
}

func checkMR(t *testing.T, what string, got *forges.MergeRequest, want forges.MergeRequest, mergeable bool) {
	t.Helper()
	if got.Number != want.Number || got.Title != want.Title || got.Body != want.Body || got.State != want.State ||
		got.Author != want.Author || got.SourceBranch != want.SourceBranch || got.TargetBranch != want.TargetBranch ||
		got.HeadSHA != want.HeadSHA {
		t.Errorf("%s = %+v, want %+v", what, *got, want)
	}
	if mergeable && got.Mergeable != want.Mergeable {
		t.Errorf("%s.Mergeable = %q, want %q", what, got.Mergeable, want.Mergeable)
	}
}

func testMergeRequest(t *testing.T, h Harness) {
	f, p := h.Forge(), h.Project()
	mrs := seedMRs(t, h)
	ctx := ctxFor(t)
	for _, want := range mrs {
		got, err := f.MergeRequest(ctx, p, want.Number)
		if err != nil {
			t.Errorf("MergeRequest(%d): %v", want.Number, err)
			continue
		}
		checkMR(t, fmt.Sprintf("MergeRequest(%d)", want.Number), got, want, want.State == forges.MergeRequestOpen)
	}
}

func testMergeRequestForBranch(t *testing.T, h Harness) {
	f, p := h.Forge(), h.Project()
	mrs := seedMRs(t, h)
	for i := range 30 { // more open merge requests than one page holds
		h.SeedMergeRequest(t, forges.MergeRequest{Number: int64(30 + i), Title: fmt.Sprintf("filler %d", i), Author: "alice",
			State: forges.MergeRequestOpen, SourceBranch: fmt.Sprintf("filler/%d", i), TargetBranch: h.Want().DefaultBranch,
			Mergeable: forges.MergeableUnknown})
	}
	ctx := ctxFor(t)
	for _, want := range mrs[:2] {
		got, err := f.MergeRequestForBranch(ctx, p, want.SourceBranch)
		if err != nil {
			t.Errorf("MergeRequestForBranch(%q): %v", want.SourceBranch, err)
			continue
		}
		checkMR(t, fmt.Sprintf("MergeRequestForBranch(%q)", want.SourceBranch), got, want, true)
	}
	for _, br := range []string{"feature/merged", "feature/closed", "no/such-branch"} {
		if got, err := f.MergeRequestForBranch(ctx, p, br); !errors.Is(err, forges.ErrNotFound) {
			t.Errorf("MergeRequestForBranch(%q) = %+v, %v; want an error wrapping ErrNotFound (no open one)", br, got, err)
		}
	}
}

func testCreateMergeRequest(t *testing.T, h Harness) {
	f, p := h.Forge(), h.Project()
	is := h.SeedIssue(t, forges.Issue{Number: 9, Title: "t", Author: "alice"})
	head := h.SeedBranch(t, "agent/issue-9-add-x")
	ctx := ctxFor(t)
	nmr := forges.NewMergeRequest{Title: "Add x", Body: fmt.Sprintf("Closes #%d\n\nDone ✓", is), SourceBranch: "agent/issue-9-add-x", TargetBranch: h.Want().DefaultBranch}
	got, err := f.CreateMergeRequest(ctx, p, nmr)
	if err != nil {
		t.Fatalf("CreateMergeRequest: %v", err)
	}
	want := forges.MergeRequest{Number: got.Number, Title: nmr.Title, Body: nmr.Body, State: forges.MergeRequestOpen, Author: h.Want().BotLogin,
		SourceBranch: nmr.SourceBranch, TargetBranch: nmr.TargetBranch, HeadSHA: head}
	if got.Number == 0 {
		t.Fatal("CreateMergeRequest returned number 0")
	}
	checkMR(t, "CreateMergeRequest", got, want, false)
	read, err := f.MergeRequest(ctx, p, got.Number)
	if err != nil {
		t.Fatalf("MergeRequest(%d): %v", got.Number, err)
	}
	checkMR(t, "MergeRequest after create", read, want, false)
	byBranch, err := f.MergeRequestForBranch(ctx, p, nmr.SourceBranch)
	if err != nil || byBranch.Number != got.Number {
		t.Errorf("MergeRequestForBranch after create = %+v, %v; want number %d", byBranch, err, got.Number)
	}
}

func testCIStatus(t *testing.T, h Harness) {
	f, p := h.Forge(), h.Project()
	for i, tc := range []struct {
		name   string
		checks []forges.Check
		want   forges.CIState
	}{
		{"none", nil, forges.CINone},
		{"success", []forges.Check{{Name: "ci/test", State: forges.CISuccess, Description: "ok"}, {Name: "ci/lint", State: forges.CISuccess}}, forges.CISuccess},
		{"pending", []forges.Check{{Name: "ci/test", State: forges.CISuccess}, {Name: "ci/lint", State: forges.CIPending}}, forges.CIPending},
		{"failure", []forges.Check{{Name: "ci/test", State: forges.CIFailure, Description: "2 tests failed"}, {Name: "ci/lint", State: forges.CISuccess}}, forges.CIFailure},
		{"failure beats pending", []forges.Check{{Name: "ci/test", State: forges.CIFailure}, {Name: "ci/lint", State: forges.CIPending}}, forges.CIFailure},
	} {
		commit := h.SeedBranch(t, fmt.Sprintf("ci/%d", i))
		if tc.checks != nil {
			h.SeedCI(t, commit, tc.checks)
		}
		got, err := f.CIStatus(ctxFor(t), p, commit)
		if err != nil {
			t.Errorf("%s: CIStatus: %v", tc.name, err)
			continue
		}
		if got.State != tc.want || got.SHA != commit {
			t.Errorf("%s: CIStatus = {SHA %s, State %q}, want {%s, %q}", tc.name, got.SHA, got.State, commit, tc.want)
		}
		gotChecks := map[string]forges.CIState{}
		for _, c := range got.Checks {
			gotChecks[c.Name] = c.State
		}
		if len(gotChecks) != len(tc.checks) {
			t.Errorf("%s: CIStatus checks = %+v, want %+v", tc.name, got.Checks, tc.checks)
		}
		for _, c := range tc.checks {
			if gotChecks[c.Name] != c.State {
				t.Errorf("%s: check %s = %q, want %q", tc.name, c.Name, gotChecks[c.Name], c.State)
			}
		}
	}
}

func testReviewComments(t *testing.T, h Harness) {
	f, p := h.Forge(), h.Project()
	mr := h.SeedMergeRequest(t, forges.MergeRequest{Number: 26, Title: "mr", Author: h.Want().BotLogin, State: forges.MergeRequestOpen,
		SourceBranch: "agent/issue-1-review", TargetBranch: h.Want().DefaultBranch, Mergeable: forges.MergeableUnknown})
	t0 := time.Date(2026, 11, 30, 4, 0, 0, 0, time.UTC)
	seeded := []forges.ReviewComment{
		{Author: "alice", Body: "old nit", Path: "src/a.go", Line: 3, CreatedAt: t0},
		{Author: "wendy", Body: "`name` must not be empty here.", Path: "src/client.py", Line: 8, CreatedAt: t0.Add(time.Hour)},
		{Author: "alice", Body: "Please validate the name before resuming.", CreatedAt: t0.Add(2 * time.Hour)},
	}
	for i := range seeded {
		seeded[i].CreatedAt = h.SeedReviewComment(t, mr.Number, seeded[i])
	}
	ctx := ctxFor(t)
	all, err := f.ReviewComments(ctx, p, mr.Number, time.Time{})
	if err != nil {
		t.Fatalf("ReviewComments(zero): %v", err)
	}
	checkReview(t, "ReviewComments(zero time)", all, seeded)
	between := seeded[0].CreatedAt.Add(seeded[1].CreatedAt.Sub(seeded[0].CreatedAt) / 2)
	recent, err := f.ReviewComments(ctx, p, mr.Number, between)
	if err != nil {
		t.Fatalf("ReviewComments(since): %v", err)
	}
	checkReview(t, "ReviewComments(since between the first two)", recent, seeded[1:])
}

func checkReview(t *testing.T, what string, got, want []forges.ReviewComment) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s returned %d comments %+v, want %d", what, len(got), got, len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Author != w.Author || g.Body != w.Body || g.Path != w.Path || (w.Path != "" && g.Line != w.Line) || !g.CreatedAt.Equal(w.CreatedAt) {
			t.Errorf("%s[%d] = %+v, want %+v (oldest first)", what, i, g, w)
		}
	}
}

func testBranchExists(t *testing.T, h Harness) {
	f, p := h.Forge(), h.Project()
	h.SeedBranch(t, "agent/issue-7-add-a-name")
	ctx := ctxFor(t)
	for _, tc := range []struct {
		branch string
		want   bool
	}{
		{h.Want().DefaultBranch, true},
		{"agent/issue-7-add-a-name", true},
		{"agent/nope", false},
	} {
		got, err := f.BranchExists(ctx, p, tc.branch)
		if err != nil || got != tc.want {
			t.Errorf("BranchExists(%q) = %v, %v; want %v", tc.branch, got, err, tc.want)
		}
	}
}

func testRetryTransient(t *testing.T, h Harness) {
	ctx, f, p := ctxFor(t), h.Forge(), h.Project()
	n := h.SeedIssue(t, forges.Issue{Number: 1, Title: "retry me", Author: "alice"})
	for _, tc := range []struct{ status, n int }{{503, 2}, {502, 1}, {500, 1}, {504, 1}, {429, 1}, {408, 1}, {425, 1}} {
		h.FailNext(t, tc.status, tc.n)
		got, err := f.Issue(ctx, p, n)
		if err != nil {
			t.Errorf("Issue after %d x %d: %v, want a retry to succeed", tc.n, tc.status, err)
			continue
		}
		if got.Title != "retry me" {
			t.Errorf("Issue after %d x %d: title %q", tc.n, tc.status, got.Title)
		}
	}
	h.FailNext(t, 503, 1)
	if _, err := f.Comments(ctx, issueTarget(h, n)); err != nil {
		t.Errorf("Comments after one 503: %v, want a retry to succeed", err)
	}
}

// testRefusalsAreFinal: a refusal is answered at once, not retried (the one
// failure FailNext sets would be gone on a second attempt), and says what it
// is, so the engine can word it for a person.
func testRefusalsAreFinal(t *testing.T, h Harness) {
	ctx, f, p := ctxFor(t), h.Forge(), h.Project()
	n := h.SeedIssue(t, forges.Issue{Number: 1, Title: "t", Author: "alice"})
	for _, tc := range []struct {
		status int
		want   error
	}{
		{401, forges.ErrUnauthorized},
		{403, forges.ErrForbidden},
		{409, forges.ErrConflict},
		{422, forges.ErrInvalid},
	} {
		h.FailNext(t, tc.status, 1)
		_, err := f.Issue(ctx, p, n)
		if !errors.Is(err, tc.want) {
			t.Errorf("Issue answered %d = %v, want an error wrapping %q, not retried", tc.status, err, tc.want)
		}
		if !forges.Refused(err) {
			t.Errorf("Refused(%v) = false", err)
		}
	}
}

func testPersistentServerError(t *testing.T, h Harness) {
	f, p := h.Forge(), h.Project()
	n := h.SeedIssue(t, forges.Issue{Number: 1, Title: "t", Author: "alice"})
	h.FailNext(t, 503, 100000) // more than any budget or the deadline lets it try
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := f.Issue(ctx, p, n)
	if err == nil {
		t.Fatal("Issue succeeded while every answer is 503")
	}
	if errors.Is(err, forges.ErrNotFound) || forges.Refused(err) {
		t.Errorf("Issue error = %v, must not wrap ErrNotFound or a refusal for a 503", err)
	}
	if !errors.Is(err, forges.ErrUnavailable) && !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Issue error = %v, want ErrUnavailable (or the deadline)", err)
	}
}

func testContextDeadline(t *testing.T, h Harness) {
	f, p := h.Forge(), h.Project()
	n := h.SeedIssue(t, forges.Issue{Number: 1, Title: "t", Author: "alice"})
	h.Hang(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := f.Issue(ctx, p, n); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Issue with a hanging server = %v, want an error wrapping context.DeadlineExceeded", err)
	}
	canceled, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if _, err := f.Issue(canceled, p, n); !errors.Is(err, context.Canceled) {
		t.Errorf("Issue with a canceled context = %v, want an error wrapping context.Canceled", err)
	}
}

func testEnsureComment(t *testing.T, h Harness) {
	f := h.Forge()
	n := h.SeedIssue(t, forges.Issue{Number: 3, Title: "t", Author: "alice"})
	tg := issueTarget(h, n)
	for i := range 60 {
		h.SeedComment(t, tg, "alice", fmt.Sprintf("chatter %d", i))
	}
	key := forges.Key("forge/alice/demo/issue-3", "session", "")
	marker, _ := forges.Marker(key, "session")
	quote := h.SeedComment(t, tg, "alice", "> quoting the bot\n> "+marker)
	for i := range 60 {
		h.SeedComment(t, tg, "alice", fmt.Sprintf("more chatter %d", i))
	}
	ctx := ctxFor(t)

	c1, changed, err := forges.EnsureComment(ctx, f, tg, key, "session", "Run 1: analysis ✓")
	if err != nil || !changed {
		t.Fatalf("EnsureComment (create) = %v, %v; want changed", changed, err)
	}
	if c1.ID == quote {
		t.Fatal("EnsureComment took a comment of another user that quotes the marker")
	}
	c2, changed, err := forges.EnsureComment(ctx, f, tg, key, "session", "Run 1: analysis ✓")
	if err != nil || changed || c2.ID != c1.ID {
		t.Errorf("EnsureComment (same text) = %+v, changed %v, %v; want comment %d unchanged", c2, changed, err, c1.ID)
	}
	c3, changed, err := forges.EnsureComment(ctx, f, tg, key, "session", "Run 2: development ✓")
	if err != nil || !changed || c3.ID != c1.ID {
		t.Errorf("EnsureComment (new text) = %+v, changed %v, %v; want comment %d edited", c3, changed, err, c1.ID)
	}
	all, err := f.Comments(ctx, tg)
	if err != nil {
		t.Fatalf("Comments: %v", err)
	}
	mine := 0
	for _, c := range all {
		if k, _, ok := forges.ParseMarker(c.Body); ok && k == key && c.Author == h.Want().BotLogin {
			mine++
			if !strings.HasPrefix(c.Body, "Run 2: development ✓") {
				t.Errorf("managed comment body = %q, want the new text", c.Body)
			}
		}
		if c.ID == quote && !strings.HasPrefix(c.Body, "> quoting the bot") {
			t.Errorf("the quoting comment of alice was changed to %q", c.Body)
		}
	}
	if mine != 1 {
		t.Errorf("found %d managed comments with key %s, want exactly 1", mine, key)
	}
}

func testEnsureSection(t *testing.T, h Harness) {
	ctx, f, p := ctxFor(t), h.Forge(), h.Project()
	human := "We want to name an AI client session.\r\n\r\nRelated: #6 #7 — ✓\r\n"
	n := h.SeedIssue(t, forges.Issue{Number: 1, Title: "t", Body: human, Author: "alice"})
	changed, err := forges.EnsureSection(ctx, f, p, n, "## Agent status\n- state: analysis")
	if err != nil || !changed {
		t.Fatalf("EnsureSection = %v, %v; want changed", changed, err)
	}
	body := h.IssueBody(t, n)
	if !strings.HasPrefix(body, human) {
		t.Errorf("body after EnsureSection = %q, want the text people wrote kept byte for byte", body)
	}
	if s, ok := forges.Section(body); !ok || s != "## Agent status\n- state: analysis" {
		t.Errorf("Section of stored body = %q, %v", s, ok)
	}
	changed, err = forges.EnsureSection(ctx, f, p, n, "## Agent status\n- state: analysis")
	if err != nil || changed {
		t.Errorf("EnsureSection with the same text = %v, %v; want unchanged", changed, err)
	}
	if _, err := forges.EnsureSection(ctx, f, p, n, "## Agent status\n- state: development"); err != nil {
		t.Fatalf("EnsureSection (update): %v", err)
	}
	body = h.IssueBody(t, n)
	if s, _ := forges.Section(body); s != "## Agent status\n- state: development" || !strings.HasPrefix(body, human) {
		t.Errorf("body after update = %q", body)
	}
}

// catalogue is a label catalogue like the bot's (lifecycle.Labels), with a label
// of each prefix; the status labels are exclusive, as the bot's are.
var catalogue = []forges.Label{
	{Name: "status::in_ci", Color: "c5def5", Description: "The pull request waits for CI (set by the bot)", Exclusive: true},
	{Name: "status::blocked", Color: "b60205", Description: "Alfred gave up", Exclusive: true},
	{Name: "ai::retry", Color: "e99695", Description: "Retry the failed phase with counters reset"},
	{Name: "type::bug", Color: "d73a4a", Description: "Alfred runs the whole flow for a bug fix"},
	{Name: "type::question", Color: "cc317c", Description: "Alfred answers the question in the thread"},
}

// testSyncLabels syncs a catalogue onto a project holding an outdated
// type::bug and a status::blocked that differs only by its exclusive flag:
// a forge that stores the flag (forges.ExclusiveLabels) has status::blocked
// updated and every status label read back exclusive, the others leave it
// alone and read every label back not exclusive. A second sync does nothing.
func testSyncLabels(t *testing.T, h Harness) {
	ctx, f, p := ctxFor(t), h.Forge(), h.Project()
	if err := f.CreateLabel(ctx, p, forges.Label{Name: "type::bug", Color: "000000", Description: "old"}); err != nil {
		t.Fatalf("CreateLabel: %v", err)
	}
	cat := catalogue
	blocked := cat[1]
	blocked.Exclusive = false
	if err := f.CreateLabel(ctx, p, blocked); err != nil {
		t.Fatalf("CreateLabel: %v", err)
	}
	_, exclusive := f.(forges.ExclusiveLabels)
	wantUpdated := []string{"type::bug"}
	if exclusive {
		wantUpdated = []string{"status::blocked", "type::bug"}
	}
	created, updated, err := forges.SyncLabels(ctx, f, p, cat)
	if err != nil {
		t.Fatalf("SyncLabels: %v", err)
	}
	if len(created) != len(cat)-2 || !slices.Equal(updated, wantUpdated) {
		t.Errorf("first SyncLabels created %d %q, updated %q; want %d created and %q updated", len(created), created, updated, len(cat)-2, wantUpdated)
	}
	created, updated, err = forges.SyncLabels(ctx, f, p, cat)
	if err != nil || len(created) != 0 || len(updated) != 0 {
		t.Errorf("second SyncLabels = %q, %q, %v; want nothing to do", created, updated, err)
	}
	got, err := f.Labels(ctx, p)
	if err != nil {
		t.Fatalf("Labels: %v", err)
	}
	have := map[string]forges.Label{}
	for _, l := range got {
		have[l.Name] = l
	}
	for _, w := range cat {
		g, ok := have[w.Name]
		if !ok || !forges.SameColor(g.Color, w.Color) || g.Description != w.Description || g.Exclusive != (exclusive && w.Exclusive) {
			t.Errorf("label %s = %+v, want %+v (the forge stores the exclusive flag: %v)", w.Name, g, w, exclusive)
		}
	}
}
