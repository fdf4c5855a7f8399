package replay

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"code.gitea.io/sdk/gitea"

	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/internal/gitcmd"
)

// Site is the forge a replay opens its cases on, as an admin: Gitea or
// Forgejo, through an admin token (the bot's own token stays with the
// engine). It creates the people a case's thread needs, a repository per
// case and adapter, and opens the issue as a person would.
type Site struct {
	url    string
	token  string // the admin's: a secret, never logged
	admin  string // the admin's login
	person string // who opens the issues and owns the repositories
	// outsider comments as RoleOutsider: a user with no access to the
	// repositories (they are public: anyone may comment).
	outsider string
}

// SiteOptions configure a Site.
type SiteOptions struct {
	URL   string // the forge's base URL
	Token string // an admin's token
	// Person opens the issues and owns the repositories (created when
	// missing); default the admin itself. Outsider writes the thread's
	// outsider comments (created when missing); default "alfred-replay-outsider".
	Person, Outsider string
}

// callTimeout bounds each API call of the site.
const callTimeout = 30 * time.Second

// NewSite connects to the forge with an admin token and makes sure the
// person and the outsider exist.
func NewSite(ctx context.Context, o SiteOptions) (*Site, error) {
	if o.URL == "" || o.Token == "" {
		return nil, errors.New("replay: the forge's URL and an admin token are needed")
	}
	s := &Site{url: strings.TrimSuffix(o.URL, "/"), token: o.Token, person: o.Person, outsider: o.Outsider}
	if s.outsider == "" {
		s.outsider = "alfred-replay-outsider"
	}
	c, err := s.client(ctx, "")
	if err != nil {
		return nil, err
	}
	me, _, err := c.GetMyUserInfo()
	if err != nil {
		return nil, fmt.Errorf("replay: who the admin token is: %w", err)
	}
	if !me.IsAdmin {
		return nil, fmt.Errorf("replay: %s is not an admin of %s: the replay creates users and repositories", me.UserName, s.url)
	}
	s.admin = me.UserName
	if s.person == "" {
		s.person = s.admin
	}
	for _, login := range []string{s.person, s.outsider} {
		if err := s.ensureUser(ctx, login); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// client is an SDK client of the admin, acting as login with sudo (as the
// admin itself when login is empty or the admin's).
func (s *Site) client(ctx context.Context, login string) (*gitea.Client, error) {
	opts := []gitea.ClientOption{
		gitea.SetToken(s.token), gitea.SetContext(ctx), gitea.SetGiteaVersion(""),
		gitea.SetHTTPClient(&http.Client{Timeout: callTimeout}), gitea.SetUserAgent("alfred-replay"),
	}
	if login != "" && login != s.admin {
		opts = append(opts, gitea.SetSudo(login))
	}
	c, err := gitea.NewClient(s.url, opts...)
	if err != nil {
		return nil, fmt.Errorf("replay: forge client: %w", err)
	}
	return c, nil
}

// ensureUser creates the plain user login unless it exists.
func (s *Site) ensureUser(ctx context.Context, login string) error {
	c, err := s.client(ctx, "")
	if err != nil {
		return err
	}
	_, resp, err := c.GetUserInfo(login)
	switch {
	case err == nil:
		return nil
	case resp == nil || resp.StatusCode != http.StatusNotFound:
		return fmt.Errorf("replay: read user %s: %w", login, err)
	}
	no := false
	pw, err := randomHex(16)
	if err != nil {
		return err
	}
	if _, _, err := c.AdminCreateUser(gitea.CreateUserOption{Username: login, Email: login + "@alfred.invalid",
		Password: pw, MustChangePassword: &no}); err != nil {
		return fmt.Errorf("replay: create user %s: %w", login, err)
	}
	return nil
}

// Hook is where the forge sends the repository's events: the replay's
// engine.
type Hook struct {
	URL, Secret string
}

// Opened is a case opened on the forge: its repository and issue.
type Opened struct {
	Project forges.Project
	Issue   int64
	URL     string // the issue's page
}

// Repository creates the repository name of the person from the case's
// snapshot (one commit on main), makes bot an admin collaborator (the bot
// reads people's permission, which the forge lets only admins do), points
// its webhook at hook and has prepare ready it for the engine (the bot's
// labels, the project's settings).
func (s *Site) Repository(ctx context.Context, c Case, name, bot string, hook Hook, prepare func(context.Context, forges.Project) error) (forges.Project, error) {
	admin, err := s.client(ctx, "")
	if err != nil {
		return forges.Project{}, err
	}
	r, _, err := admin.AdminCreateRepo(s.person, gitea.CreateRepoOption{Name: name, DefaultBranch: "main",
		Description: "alfred replay of " + c.Name})
	if err != nil {
		return forges.Project{}, fmt.Errorf("replay %s: create the repository %s/%s: %w", c.Name, s.person, name, err)
	}
	p := forges.Project{Owner: s.person, Name: name}
	if err := s.push(ctx, c, r.CloneURL); err != nil {
		return p, err
	}
	if err := s.awaitPushed(ctx, admin, c, p); err != nil {
		return p, err
	}
	mode := gitea.AccessModeAdmin
	if _, err := admin.AddCollaborator(p.Owner, p.Name, bot, gitea.AddCollaboratorOption{Permission: &mode}); err != nil {
		return p, fmt.Errorf("replay %s: make %s a collaborator of %s: %w", c.Name, bot, p.FullName(), err)
	}
	_, _, err = admin.CreateRepoHook(p.Owner, p.Name, gitea.CreateHookOption{
		Type:   gitea.HookTypeGitea,
		Config: map[string]string{"url": hook.URL, "content_type": "json", "secret": hook.Secret},
		Events: []string{"create", "delete", "push", "issues", "issue_comment", "pull_request", "pull_request_review", "status"},
		Active: true,
	})
	if err != nil {
		return p, fmt.Errorf("replay %s: the webhook of %s: %w", c.Name, p.FullName(), err)
	}
	if err := prepare(ctx, p); err != nil {
		return p, fmt.Errorf("replay %s: prepare %s for the engine: %w", c.Name, p.FullName(), err)
	}
	return p, nil
}

// pushedWait bounds the wait for the forge to take a pushed snapshot in.
const pushedWait = time.Minute

// awaitPushed waits until the forge has taken the snapshot's push in: Gitea
// and Forgejo handle a push in a queue, and until then the repository is
// "empty" to their API (no file, no branch to start from), which the
// issue's engine would meet.
func (s *Site) awaitPushed(ctx context.Context, admin *gitea.Client, c Case, p forges.Project) error {
	ctx, cancel := context.WithTimeout(ctx, pushedWait)
	defer cancel()
	for {
		r, _, err := admin.GetRepo(p.Owner, p.Name)
		if err == nil && !r.Empty {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("replay %s: the forge did not take the snapshot's push into %s within %s (last: %v)", c.Name, p.FullName(), pushedWait, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// push commits the case's snapshot as the person and pushes it to main,
// with the bot's hardened git: the snapshot's files are read as data
// through a work tree, into a bare repository of the replay's own.
func (s *Site) push(ctx context.Context, c Case, cloneURL string) error {
	dir, err := os.MkdirTemp("", "alfred-replay-push-")
	if err != nil {
		return fmt.Errorf("replay %s: %w", c.Name, err)
	}
	defer os.RemoveAll(dir)
	auth, err := gitcmd.Credential(cloneURL, s.admin, s.token)
	if err != nil {
		return fmt.Errorf("replay %s: %w", c.Name, err)
	}
	who := []string{"GIT_AUTHOR_NAME=" + s.person, "GIT_AUTHOR_EMAIL=" + s.person + "@alfred.invalid",
		"GIT_COMMITTER_NAME=" + s.person, "GIT_COMMITTER_EMAIL=" + s.person + "@alfred.invalid"}
	if _, err := gitcmd.Run(ctx, gitcmd.Cmd{}, "init", "--quiet", "--bare", "--initial-branch=main", dir); err != nil {
		return fmt.Errorf("replay %s: %w", c.Name, err)
	}
	cmd := gitcmd.Cmd{GitDir: dir, WorkTree: c.Snapshot(), Index: dir + "/index", Env: who}
	for _, args := range [][]string{{"add", "--all", "."}, {"commit", "--quiet", "-m", "The snapshot of replay case " + c.Name}} {
		cmd.Dir = c.Snapshot()
		if _, err := gitcmd.Run(ctx, cmd, args...); err != nil {
			return fmt.Errorf("replay %s: commit the snapshot: %w", c.Name, err)
		}
	}
	push := gitcmd.Cmd{GitDir: dir, Config: auth, Protocols: []string{gitcmd.Protocol(cloneURL)}, Secrets: []string{s.token, gitcmd.Basic(s.admin, s.token)}}
	if _, err := gitcmd.Run(ctx, push, "push", "--quiet", cloneURL, "HEAD:refs/heads/main"); err != nil {
		return fmt.Errorf("replay %s: push the snapshot: %w", c.Name, err)
	}
	return nil
}

// Issue opens the case's issue on p as the person, with its labels (made
// when the repository lacks them), writes its thread (each comment as its
// role) and assigns it to bot.
func (s *Site) Issue(ctx context.Context, c Case, p forges.Project, bot string) (Opened, error) {
	ids, err := s.labels(ctx, p, c.Labels)
	if err != nil {
		return Opened{}, fmt.Errorf("replay %s: %w", c.Name, err)
	}
	person, err := s.client(ctx, s.person)
	if err != nil {
		return Opened{}, err
	}
	is, _, err := person.CreateIssue(p.Owner, p.Name, gitea.CreateIssueOption{Title: c.Title, Body: c.Body, Labels: ids})
	if err != nil {
		return Opened{}, fmt.Errorf("replay %s: open the issue on %s: %w", c.Name, p.FullName(), err)
	}
	for i, cm := range c.Thread {
		login := s.person
		if cm.Role == RoleOutsider {
			login = s.outsider
		}
		cl, err := s.client(ctx, login)
		if err != nil {
			return Opened{}, err
		}
		if _, _, err := cl.CreateIssueComment(p.Owner, p.Name, is.Index, gitea.CreateIssueCommentOption{Body: cm.Body}); err != nil {
			return Opened{}, fmt.Errorf("replay %s: comment %d of the thread: %w", c.Name, i, err)
		}
	}
	if _, _, err := person.EditIssue(p.Owner, p.Name, is.Index, gitea.EditIssueOption{Assignees: []string{bot}}); err != nil {
		return Opened{}, fmt.Errorf("replay %s: assign the issue to %s: %w", c.Name, bot, err)
	}
	return Opened{Project: p, Issue: is.Index, URL: is.HTMLURL}, nil
}

// labels are the ids of names on p, each created (grey) when missing.
func (s *Site) labels(ctx context.Context, p forges.Project, names []string) ([]int64, error) {
	if len(names) == 0 {
		return nil, nil
	}
	admin, err := s.client(ctx, "")
	if err != nil {
		return nil, err
	}
	have, _, err := admin.ListRepoLabels(p.Owner, p.Name, gitea.ListLabelsOptions{ListOptions: gitea.ListOptions{PageSize: 100}})
	if err != nil {
		return nil, fmt.Errorf("the labels of %s: %w", p.FullName(), err)
	}
	var ids []int64
	for _, n := range names {
		i := slices.IndexFunc(have, func(l *gitea.Label) bool { return l.Name == n })
		if i >= 0 {
			ids = append(ids, have[i].ID)
			continue
		}
		l, _, err := admin.CreateLabel(p.Owner, p.Name, gitea.CreateLabelOption{Name: n, Color: "#cccccc"})
		if err != nil {
			return nil, fmt.Errorf("create the label %q on %s: %w", n, p.FullName(), err)
		}
		ids = append(ids, l.ID)
	}
	return ids, nil
}

func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("replay: random bytes: %w", err)
	}
	return hex.EncodeToString(b), nil
}
