package forgejo_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/forges/forgejo"
	"github.com/alchemic-studio/alfred/forges/forgejo/giteatest"
)

// exclusiveCatalogue is like the bot's: exclusive status labels, plain
// others, and a family scoped with '/' for comparison.
var exclusiveCatalogue = []forges.Label{
	{Name: "status::in_ci", Color: "c5def5", Description: "waits for CI", Exclusive: true},
	{Name: "status::in_review", Color: "bfd4f2", Description: "waits for review", Exclusive: true},
	{Name: "kind/bug", Color: "d73a4a", Description: "a bug", Exclusive: true},
	{Name: "kind/feature", Color: "0052cc", Description: "a feature", Exclusive: true},
	{Name: "type::bug", Color: "d73a4a", Description: "the bug flow"},
}

// TestExclusiveLabels: labels sync marks the status labels exclusive and a
// second sync changes nothing; on the forge, exclusivity follows the name up
// to its last '/' (Forgejo's and Gitea's Label.ExclusiveScope), so two
// exclusive "status::" labels stay on an issue together while "kind/feature"
// takes "kind/bug" off. The same test runs against the real Gitea and the
// real Forgejo (TestExclusiveLabelsRealForges), which is what the fake's
// behaviour is checked on.
func TestExclusiveLabels(t *testing.T) {
	srv, f, p, ctx := newForge(t)
	srv.AddIssue(forges.Issue{Number: 1, Title: "t", Author: "alice"})
	testExclusiveLabels(ctx, t, f, p, 1)
}

func TestExclusiveLabelsRealForges(t *testing.T) { giteatest.Each(t, testExclusiveLabelsReal) }

func testExclusiveLabelsReal(t *testing.T, in *giteatest.Instance) {
	t.Parallel()
	repo := in.NewBotRepo(t)
	f := botClient(t, in)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := repo.CreateIssue(t, forges.Issue{Title: "t", Author: in.User.Login})
	testExclusiveLabels(ctx, t, f, forges.Project{Forge: in.Kind, Owner: repo.Owner, Name: repo.Name}, n)
}

func testExclusiveLabels(ctx context.Context, t *testing.T, f *forgejo.Forge, p forges.Project, issue int64) {
	t.Helper()
	plain := exclusiveCatalogue[0]
	plain.Exclusive = false
	if err := f.CreateLabel(ctx, p, plain); err != nil { // as an older Alfred made it
		t.Fatalf("CreateLabel: %v", err)
	}
	created, updated, err := forges.SyncLabels(ctx, f, p, exclusiveCatalogue)
	if err != nil {
		t.Fatalf("SyncLabels: %v", err)
	}
	if len(created) != len(exclusiveCatalogue)-1 || !slices.Equal(updated, []string{"status::in_ci"}) {
		t.Errorf("first SyncLabels created %q, updated %q; want the rest created, status::in_ci updated", created, updated)
	}
	if created, updated, err := forges.SyncLabels(ctx, f, p, exclusiveCatalogue); err != nil || len(created)+len(updated) != 0 {
		t.Errorf("second SyncLabels = %q, %q, %v; want nothing to do", created, updated, err)
	}
	got, err := f.Labels(ctx, p)
	if err != nil {
		t.Fatalf("Labels: %v", err)
	}
	for _, w := range exclusiveCatalogue {
		i := slices.IndexFunc(got, func(l forges.Label) bool { return l.Name == w.Name })
		if i < 0 || got[i].Exclusive != w.Exclusive {
			t.Errorf("label %s read back as %+v, want exclusive %v", w.Name, got, w.Exclusive)
		}
	}

	tg := forges.Target{Project: p, Kind: forges.TargetIssue, Number: issue}
	for _, n := range []string{"status::in_ci", "kind/bug", "status::in_review", "kind/feature"} {
		if err := f.AddLabels(ctx, tg, n); err != nil {
			t.Fatalf("AddLabels(%s): %v", n, err)
		}
	}
	is, err := f.Issue(ctx, p, issue)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"kind/feature", "status::in_ci", "status::in_review"}; !slices.Equal(sorted(is.Labels), want) {
		t.Errorf("issue labels = %q, want %q: only a '/' scope is exclusive on the forge", is.Labels, want)
	}

	for name, want := range map[string]string{"status::in_ci": "", "kind/bug": "kind", "a/b/c": "a/b", "/x": "", "x/": "", "plain": ""} {
		if got := f.ExclusiveScope(name); got != want {
			t.Errorf("ExclusiveScope(%q) = %q, want %q", name, got, want)
		}
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// scopedStatus is a part of the bot's catalogue in the scoped form
// (lifecycle.LabelsWith(forges.ScopedStatusPrefix)): status labels named
// "status/x", exclusive, formerly "status::x".
var scopedStatus = []forges.Label{
	{Name: "status/in_ci", Color: "c5def5", Description: "waits for CI", Exclusive: true, Formerly: []string{"status::in_ci"}},
	{Name: "status/in_review", Color: "bfd4f2", Description: "waits for review", Exclusive: true, Formerly: []string{"status::in_review"}},
}

// TestScopedStatusLabels: on the fake, the real Gitea and the real Forgejo,
// a sync renames the status labels of the old form in place (the issue that
// carries one keeps it, under its new name; no second label is made), and
// then the forge itself keeps one status: adding a second status label
// takes the first off, without the bot acting.
func TestScopedStatusLabels(t *testing.T) {
	t.Run("fake", func(t *testing.T) {
		srv, f, p, ctx := newForge(t)
		srv.AddIssue(forges.Issue{Number: 1, Title: "t", Author: "alice"})
		testScopedStatus(ctx, t, f, p, 1)
	})
	giteatest.Each(t, func(t *testing.T, in *giteatest.Instance) {
		t.Parallel()
		repo := in.NewBotRepo(t)
		f := botClient(t, in)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		n := repo.CreateIssue(t, forges.Issue{Title: "t", Author: in.User.Login})
		testScopedStatus(ctx, t, f, forges.Project{Forge: in.Kind, Owner: repo.Owner, Name: repo.Name}, n)
	})
}

func testScopedStatus(ctx context.Context, t *testing.T, f *forgejo.Forge, p forges.Project, issue int64) {
	t.Helper()
	old := forges.Label{Name: "status::in_ci", Color: "c5def5", Description: "waits for CI", Exclusive: true}
	if err := f.CreateLabel(ctx, p, old); err != nil { // as an older Alfred made it
		t.Fatalf("CreateLabel: %v", err)
	}
	tg := forges.Target{Project: p, Kind: forges.TargetIssue, Number: issue}
	if err := f.AddLabels(ctx, tg, old.Name); err != nil {
		t.Fatalf("AddLabels: %v", err)
	}
	created, updated, err := forges.SyncLabels(ctx, f, p, scopedStatus)
	if err != nil {
		t.Fatalf("SyncLabels: %v", err)
	}
	if !slices.Equal(created, []string{"status/in_review"}) || !slices.Equal(updated, []string{"status/in_ci"}) {
		t.Errorf("SyncLabels created %q, updated %q; want status/in_review made, status/in_ci renamed", created, updated)
	}
	if created, updated, err := forges.SyncLabels(ctx, f, p, scopedStatus); err != nil || len(created)+len(updated) != 0 {
		t.Errorf("second SyncLabels = %q, %q, %v; want nothing to do", created, updated, err)
	}
	defined, err := f.Labels(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range defined {
		names = append(names, l.Name)
	}
	if want := []string{"status/in_ci", "status/in_review"}; !slices.Equal(sorted(names), want) {
		t.Errorf("labels defined = %q, want %q: the old one renamed, not doubled", names, want)
	}
	labels := func() []string {
		is, err := f.Issue(ctx, p, issue)
		if err != nil {
			t.Fatal(err)
		}
		return sorted(is.Labels)
	}
	if got := labels(); !slices.Equal(got, []string{"status/in_ci"}) {
		t.Fatalf("issue labels after the rename = %q, want the renamed label kept", got)
	}
	if err := f.AddLabels(ctx, tg, "status/in_review"); err != nil {
		t.Fatalf("AddLabels: %v", err)
	}
	if got := labels(); !slices.Equal(got, []string{"status/in_review"}) {
		t.Errorf("issue labels after a second status = %q, want the forge to have taken the first off", got)
	}
}

// botClient is the Forge of the real server in, as the bot.
func botClient(t *testing.T, in *giteatest.Instance) *forgejo.Forge {
	t.Helper()
	f, err := forgejo.New(forgejo.Options{BaseURL: in.URL, Token: in.Bot.Token, Retry: forges.RetryPolicy{AttemptTimeout: 10 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	return f
}
