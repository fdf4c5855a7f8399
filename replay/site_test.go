package replay

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"code.gitea.io/sdk/gitea"

	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/forges/forgejo/giteatest"
	"github.com/alchemic-studio/alfred/sandbox"
)

// adminGit is the admin's git access, standing for the bot's in the check.
type adminGit struct{ in *giteatest.Instance }

func (g adminGit) CloneURL(_ context.Context, p forges.Project) (string, error) {
	return g.in.URL + "/" + p.FullName() + ".git", nil
}

func (g adminGit) GitCredentials(context.Context, forges.Project) (string, string, error) {
	return g.in.Admin.Login, g.in.Admin.Token, nil
}

// TestSiteAndCheck, on the real Gitea and the real Docker daemon: a case's
// repository is made from its snapshot (one commit of the person on main,
// the bot an admin collaborator, the webhook, the bot's labels synced), its
// issue opened with its labels and thread and assigned to the bot; the
// check then runs on a fresh clone in a container: it passes, fails, or is
// stopped at its limit, and it has no network.
func TestSiteAndCheck(t *testing.T) {
	in := giteatest.FromEnv(t, giteatest.Gitea)
	docker := os.Getenv("ALFRED_TEST_DOCKER_HOST")
	image := os.Getenv("ALFRED_TEST_IMAGE")
	if docker == "" || image == "" {
		t.Fatal("ALFRED_TEST_DOCKER_HOST and ALFRED_TEST_IMAGE are not set: run make test (scripts/dockerd.sh)")
	}
	ctx := t.Context()
	if _, err := NewSite(ctx, SiteOptions{URL: in.URL, Token: in.User.Token}); err == nil || !strings.Contains(err.Error(), "not an admin") {
		t.Fatalf("a person's token: %v", err)
	}
	site, err := NewSite(ctx, SiteOptions{URL: in.URL, Token: in.Admin.Token, Person: in.User.Login})
	if err != nil {
		t.Fatal(err)
	}
	cases, err := Load("testdata/corpus")
	if err != nil {
		t.Fatal(err)
	}
	c := cases[1] // fix-add: a thread of both roles
	suffix, _ := randomHex(3)
	synced := false
	p, err := site.Repository(ctx, c, repoName(c.Name, "test", suffix), in.Bot.Login, Hook{URL: "http://127.0.0.1:9/hook", Secret: "s"},
		func(context.Context, forges.Project) error { synced = true; return nil })
	if p.Name != "" {
		defer func() {
			if _, err := in.Client(t, "").DeleteRepo(p.Owner, p.Name); err != nil {
				t.Errorf("delete %s: %v", p.FullName(), err)
			}
		}()
	}
	if err != nil || !synced {
		t.Fatalf("repository: %v (labels synced %v)", err, synced)
	}
	opened, err := site.Issue(ctx, c, p, in.Bot.Login)
	if err != nil {
		t.Fatal(err)
	}
	checkOpened(t, in, c, p, opened)

	runner, err := sandbox.NewImageRunner(ctx, sandbox.ImageOptions{Host: docker, Instance: "replay-test-" + suffix})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Git: adminGit{in}, Runner: runner, WorkDir: t.TempDir(),
		CheckSpec: sandbox.Spec{Image: image, UID: 1000, GID: 1000, Env: map[string]string{"HOME": "/home/agent", "PATH": "/bin:/usr/bin"}}}
	for _, tc := range []struct {
		name    string
		check   []string
		outcome sandbox.Outcome
		passed  bool
		output  string
	}{
		{"the bug is there", c.Check, sandbox.OutcomeExited, false, ""},
		{"the snapshot's files", []string{"sh", "-c", "grep -c 'return a - b' calc.go && test -f calc_test.go && touch built"}, sandbox.OutcomeExited, true, "1"},
		{"no network", []string{"sh", "-c", "wget -q -T 2 -O- http://" + strings.TrimPrefix(in.URL, "http://") + "/ && echo reached"}, sandbox.OutcomeExited, false, ""},
		{"time limit", []string{"sleep", "30"}, sandbox.OutcomeTimeout, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cc := c
			cc.Check, cc.CheckLimit = tc.check, Duration(2*time.Second)
			res, err := check(ctx, cfg, cc, p, "main")
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome != tc.outcome || res.Passed() != tc.passed || len(res.Commit) != 40 || !strings.Contains(res.Output, tc.output) || strings.Contains(res.Output, "reached") {
				t.Errorf("%+v", res)
			}
		})
	}
}

// checkOpened reads back what the site opened: the snapshot's files on
// main, the bot's permission, the issue's labels, thread and assignee.
func checkOpened(t *testing.T, in *giteatest.Instance, c Case, p forges.Project, opened Opened) {
	t.Helper()
	cl := in.Client(t, "")
	f, _, err := cl.GetFile(p.Owner, p.Name, "main", "calc.go")
	if err != nil || !strings.Contains(string(f), "return a - b") {
		t.Errorf("calc.go on main: %q %v", f, err)
	}
	perm, _, err := cl.CollaboratorPermission(p.Owner, p.Name, in.Bot.Login)
	if err != nil || perm.Permission != "admin" {
		t.Errorf("the bot's permission: %+v %v", perm, err)
	}
	is, _, err := cl.GetIssue(p.Owner, p.Name, opened.Issue)
	if err != nil {
		t.Fatal(err)
	}
	if is.Title != c.Title || is.Poster.UserName != in.User.Login || len(is.Assignees) != 1 || is.Assignees[0].UserName != in.Bot.Login ||
		len(is.Labels) != 1 || is.Labels[0].Name != "type::task" {
		t.Errorf("the issue: %+v", is)
	}
	comments, _, err := cl.ListIssueComments(p.Owner, p.Name, opened.Issue, giteaCommentOpts)
	if err != nil || len(comments) != 2 || comments[0].Poster.UserName != in.User.Login || comments[1].Poster.UserName != "alfred-replay-outsider" ||
		comments[1].Body != c.Thread[1].Body {
		t.Errorf("the thread: %d comments, %v", len(comments), err)
	}
}

var giteaCommentOpts = gitea.ListIssueCommentOptions{}
