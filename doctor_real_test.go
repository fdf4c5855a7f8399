package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"code.gitea.io/sdk/gitea"

	"github.com/alchemic-studio/alfred/bot/lifecycle"
	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/forges/forgejo"
	"github.com/alchemic-studio/alfred/forges/forgejo/giteatest"
)

// TestDoctorRealForges runs the built alfred doctor against the real Gitea
// and the real Forgejo: green on a correct setup (the bot an admin of the
// project, the webhook of the forge's own type to the bot's address, the
// labels synced), and each failure provoked once on a fresh project: a
// wrong token, a token without the repository write scope, no webhook, a
// webhook to another address, no labels.
func TestDoctorRealForges(t *testing.T) {
	giteatest.Each(t, func(t *testing.T, in *giteatest.Instance) {
		hook := doctorPublic + "/webhooks/forgejo"
		tests := []struct {
			name   string
			token  string // "wrong", "scoped", or "" for the bot's
			hook   string // "" for none
			labels bool
			want   []string
		}{
			{name: "correct setup", hook: hook, labels: true},
			{name: "wrong token", token: "wrong", hook: hook, labels: true, want: []string{"forge"}},
			{name: "missing scope", token: "scoped", hook: hook, labels: true, want: []string{"token repository write"}},
			{name: "webhook missing", labels: true, want: []string{"webhook"}},
			{name: "webhook elsewhere", hook: "https://old.example.com/webhooks/forgejo", labels: true, want: []string{"webhook"}},
			{name: "labels missing", hook: hook, want: []string{"labels"}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				repo := in.NewBotRepo(t)
				p := forges.Project{Forge: "forgejo", Owner: repo.Owner, Name: repo.Name}
				f := botForge(t, in)
				if tt.hook != "" {
					_, _, err := in.Client(t, in.User.Login).CreateRepoHook(repo.Owner, repo.Name, gitea.CreateHookOption{
						Type: in.HookType(), Active: true, Events: f.WebhookEvents(),
						Config: map[string]string{"url": tt.hook, "content_type": "json", "secret": "s3cret"},
					})
					if err != nil {
						t.Fatalf("create the webhook: %v", err)
					}
				}
				if tt.labels {
					ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
					defer cancel()
					if _, _, err := forges.SyncLabels(ctx, f, p, lifecycle.LabelsWith(forges.ScopedStatusPrefix)); err != nil {
						t.Fatal(err)
					}
				}
				env := doctorEnv(t)
				env["ALFRED_FORGE"], env["ALFRED_FORGE_URL"], env["ALFRED_FORGE_TOKEN"] = "forgejo", in.URL, in.Bot.Token
				switch tt.token {
				case "wrong":
					env["ALFRED_FORGE_TOKEN"] = "0123456789abcdef0123456789abcdef01234567"
				case "scoped":
					env["ALFRED_FORGE_TOKEN"] = in.NewToken(t, in.Bot.Login, "read:user", "write:issue", "read:repository")
				}
				code, out, failed := doctorLines(t, env, "-project", repo.FullName())
				var want []string
				for _, w := range tt.want {
					if w != "forge" {
						w += " " + repo.FullName()
						if strings.HasPrefix(w, "token ") {
							w = strings.TrimSuffix(w, " "+repo.FullName()) + " (" + repo.FullName() + ")"
						}
					}
					want = append(want, w)
				}
				checkDoctor(t, code, out, failed, want)
				if strings.Contains(out, env["ALFRED_FORGE_TOKEN"]) {
					t.Errorf("the output shows the token:\n%s", out)
				}
				t.Logf("alfred doctor on %s, %s:\n%s", in.Title(), tt.name, out)
			})
		}
	})
}

// TestDoctorSecretMismatchRealForges: the webhook of the project points at
// the running bot with a secret that is none of its ALFRED_WEBHOOK_SECRETS;
// the forge's test delivery is refused, and alfred doctor, asking the bot,
// says so as the one failure (the forge does not show a webhook's secret).
func TestDoctorSecretMismatchRealForges(t *testing.T) {
	bin := buildBinary(t)
	giteatest.Each(t, func(t *testing.T, in *giteatest.Instance) { // not parallel: doctorLines sets the environment
		repo := in.NewBotRepo(t)
		p := forges.Project{Forge: "forgejo", Owner: repo.Owner, Name: repo.Name}
		f := botForge(t, in)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, _, err := forges.SyncLabels(ctx, f, p, lifecycle.LabelsWith(forges.ScopedStatusPrefix)); err != nil {
			t.Fatal(err)
		}
		env := doctorEnv(t)
		env["ALFRED_FORGE"], env["ALFRED_FORGE_URL"], env["ALFRED_FORGE_TOKEN"] = "forgejo", in.URL, in.Bot.Token
		env["ALFRED_DATA_DIR"] = t.TempDir()
		s := serveAlfred(t, bin, env)
		env["ALFRED_LISTEN"], env["ALFRED_PUBLIC_URL"] = s.addr, "http://"+s.addr
		hook, _, err := in.Client(t, in.User.Login).CreateRepoHook(repo.Owner, repo.Name, gitea.CreateHookOption{
			Type: in.HookType(), Active: true, Events: f.WebhookEvents(),
			Config: map[string]string{"url": "http://" + s.addr + "/webhooks/forgejo", "content_type": "json", "secret": "not-the-bots-secret"},
		})
		if err != nil {
			t.Fatalf("create the webhook: %v", err)
		}
		if _, err := in.Client(t, in.User.Login).TestWebhook(repo.Owner, repo.Name, hook.ID, ""); err != nil {
			t.Fatalf("the forge's test delivery: %v", err)
		}
		waitUntil(t, 30*time.Second, "the test delivery refused", func() bool {
			_, body := s.get("/readyz")
			return strings.Contains(body, "webhook deliveries refused")
		})
		code, out, failed := doctorLines(t, env, "-project", repo.FullName())
		checkDoctor(t, code, out, failed, []string{"webhook secret forgejo"})
		if strings.Contains(out, "not-the-bots-secret") || strings.Contains(out, "s3cret") {
			t.Errorf("the output shows a secret:\n%s", out)
		}
		t.Logf("alfred doctor on %s, secret mismatch:\n%s", in.Title(), out)
	})
}

// botForge is the Forge of the real server in, as the bot.
func botForge(t *testing.T, in *giteatest.Instance) *forgejo.Forge {
	t.Helper()
	f, err := forgejo.New(forgejo.Options{BaseURL: in.URL, Token: in.Bot.Token, Retry: forges.RetryPolicy{AttemptTimeout: 10 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	return f
}
