package forgejo_test

import (
	"context"
	"testing"
	"time"

	"code.gitea.io/sdk/gitea"

	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/forges/forgejo/giteatest"
)

// TestInspectRealForges runs what alfred doctor asks of Forgejo against the
// real Gitea and the real Forgejo: the webhook a person made is listed with its events, the
// probes reach every area for an admin bot, and a bot with write access only
// is told it cannot read webhooks.
func TestInspectRealForges(t *testing.T) { giteatest.Each(t, testInspect) }

func testInspect(t *testing.T, in *giteatest.Instance) {
	t.Parallel()
	repo := in.NewBotRepo(t)
	f := botClient(t, in)
	const url = "http://127.0.0.1:9/webhooks/forgejo"
	_, _, err := in.Client(t, in.User.Login).CreateRepoHook(repo.Owner, repo.Name, gitea.CreateHookOption{
		Type: in.HookType(), Active: true, Events: f.WebhookEvents(),
		Config: map[string]string{"url": url, "content_type": "json", "secret": "s3cret"},
	})
	if err != nil {
		t.Fatalf("create the webhook: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := forges.Project{Forge: "forgejo", Owner: repo.Owner, Name: repo.Name}

	hooks, err := f.Webhooks(ctx, p)
	if err != nil {
		t.Fatalf("Webhooks: %v", err)
	}
	if len(hooks) != 1 || hooks[0].URL != url || !hooks[0].Active || hooks[0].SecretKnown {
		t.Fatalf("Webhooks = %+v, want the one hook to %s, active, secret unknown", hooks, url)
	}
	if missing := hooks[0].MissingEvents(f.WebhookEvents()); len(missing) != 0 {
		t.Errorf("%s lists the hook without %q (it lists %q)", in.Title(), missing, hooks[0].Events)
	}
	access, err := f.TokenAccess(ctx, p)
	if err != nil {
		t.Fatalf("TokenAccess: %v", err)
	}
	for _, a := range access {
		if !a.OK || !a.Known {
			t.Errorf("admin bot, %s: %+v; want reached", a.Area, a)
		}
	}

	repo.SetPermission(t, in.Bot.Login, forges.PermissionWrite)
	access, err = f.TokenAccess(ctx, p)
	if err != nil {
		t.Fatalf("TokenAccess as a writer: %v", err)
	}
	for _, a := range access {
		if want := a.Area != forges.AreaWebhooksRead; a.OK != want {
			t.Errorf("write-only bot, %s: %+v; want reached %v", a.Area, a, want)
		}
	}
}
