// Package giteatest drives the real Gitea and the real Forgejo started by
// scripts/gitea.sh and scripts/forgejo.sh, for tests that run against the
// real servers rather than a fake: the forge contract suite (forges/forgejo's
// TestContractRealForges) and end-to-end tests. Each runs a test on both.
//
// The scripts' start prints the ALFRED_TEST_GITEA_* and ALFRED_TEST_FORGEJO_*
// variables FromEnv reads:
//
//	env=$(bash scripts/gitea.sh start) && eval "$env" && go test ./forges/...
//
// Everything goes through Gitea's API with the admin's token, as the admin or,
// with Gitea's sudo, as any other user; users are created on first use. Each
// test makes its own repository with NewRepo, so tests never share state on
// the server. Failures end the test (t.Fatal) with the call that failed.
package giteatest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"code.gitea.io/sdk/gitea"
)

// Account is a user of the instance and an access token of it (scope all).
type Account struct {
	Login string
	Token string // a secret: never logged
}

// The forges of the Gitea family the suite starts, each by its script
// (scripts/gitea.sh, scripts/forgejo.sh).
const (
	Gitea   = "gitea"
	Forgejo = "forgejo"
)

// Kinds are the forges Each runs a test on, in order.
var Kinds = []string{Gitea, Forgejo}

// Instance is a running Gitea or Forgejo and the accounts its script made
// on it.
type Instance struct {
	Kind       string // Gitea or Forgejo
	URL        string // base URL, without a trailing slash
	Version    string // the forge's own version, e.g. 1.27.3 or 15.0.3
	APIVersion string // what /api/v1/version says, e.g. 15.0.3+gitea-1.22.0
	Admin      Account
	Bot        Account // the bot's account (alfred-bot)
	User       Account // a person (alice), owner of the repositories NewRepo makes

	mu    sync.Mutex
	users map[string]bool // logins known to exist
}

// The variables FromEnv reads, after the prefix of the forge
// (ALFRED_TEST_GITEA_, ALFRED_TEST_FORGEJO_), as its script prints them.
var envKeys = []string{"URL", "VERSION", "API_VERSION", "ADMIN", "ADMIN_TOKEN", "BOT", "BOT_TOKEN", "USER", "USER_TOKEN"}

// EnvPrefix is the prefix of the variables that describe the forge kind.
func EnvPrefix(kind string) string { return "ALFRED_TEST_" + strings.ToUpper(kind) + "_" }

// callTimeout bounds each API call of the helpers.
const callTimeout = 30 * time.Second

// Each runs fn as a subtest on every real forge of the family (named by
// its kind), each the one FromEnv gives. The servers share nothing: fn may
// call t.Parallel.
func Each(t *testing.T, fn func(t *testing.T, in *Instance)) {
	t.Helper()
	for _, kind := range Kinds {
		t.Run(kind, func(t *testing.T) { fn(t, FromEnv(t, kind)) })
	}
}

// FromEnv is the forge of kind (Gitea, Forgejo) its script's variables
// describe. It fails the test when one is missing or the server does not
// answer; under `go test -short` a missing variable skips the test instead.
func FromEnv(t testing.TB, kind string) *Instance {
	t.Helper()
	prefix := EnvPrefix(kind)
	vals := map[string]string{}
	for _, k := range envKeys {
		v := os.Getenv(prefix + k)
		if v == "" {
			how := fmt.Sprintf(`start one with: env=$(bash scripts/%s.sh start) && eval "$env"`, kind)
			if testing.Short() {
				t.Skipf("%s%s is not set: this test needs a real %s (skipped under -short); %s", prefix, k, Title(kind), how)
			}
			t.Fatalf("%s%s is not set: this test needs a real %s; %s", prefix, k, Title(kind), how)
		}
		vals[k] = v
	}
	in := &Instance{
		Kind:       kind,
		URL:        strings.TrimSuffix(vals["URL"], "/"),
		Version:    vals["VERSION"],
		APIVersion: vals["API_VERSION"],
		Admin:      Account{Login: vals["ADMIN"], Token: vals["ADMIN_TOKEN"]},
		Bot:        Account{Login: vals["BOT"], Token: vals["BOT_TOKEN"]},
		User:       Account{Login: vals["USER"], Token: vals["USER_TOKEN"]},
		users:      map[string]bool{},
	}
	for _, a := range []Account{in.Admin, in.Bot, in.User} {
		in.users[a.Login] = true
	}
	c := in.Client(t, "")
	if _, _, err := c.ServerVersion(); err != nil {
		t.Fatalf("the %s at %s (%sURL) does not answer: %v; is scripts/%s.sh's %s running?", in.Title(), in.URL, prefix, err, kind, in.Title())
	}
	return in
}

// Title is how a kind is written in prose: Gitea, Forgejo.
func Title(kind string) string {
	if kind == "" {
		return ""
	}
	return strings.ToUpper(kind[:1]) + kind[1:]
}

// Title is how the instance's kind is written in prose.
func (in *Instance) Title() string { return Title(in.Kind) }

// SDKVersion is the Gitea version the SDK is to assume: Forgejo says the
// Gitea version it is compatible with after "+gitea-".
func (in *Instance) SDKVersion() string {
	if _, compat, ok := strings.Cut(in.APIVersion, "+gitea-"); ok {
		return compat
	}
	return in.Version
}

// HookType is the webhook type a person picks on the forge: its own.
func (in *Instance) HookType() gitea.HookType {
	if in.Kind == Forgejo {
		return "forgejo"
	}
	return gitea.HookTypeGitea
}

// Client is an SDK client authenticated as the admin, acting as login with
// sudo (as the admin itself when login is empty or the admin's). Its calls
// are bounded by the test's context.
func (in *Instance) Client(t testing.TB, login string) *gitea.Client {
	t.Helper()
	c, err := in.client(t.Context(), login)
	if err != nil {
		t.Fatalf("gitea client as %q: %v", login, err)
	}
	return c
}

func (in *Instance) client(ctx context.Context, login string) (*gitea.Client, error) {
	opts := []gitea.ClientOption{
		gitea.SetToken(in.Admin.Token),
		gitea.SetContext(ctx),
		gitea.SetHTTPClient(&http.Client{Timeout: callTimeout}),
		gitea.SetGiteaVersion(in.SDKVersion()), // no /version request per client
		gitea.SetUserAgent("alfred-giteatest"),
	}
	if login != "" && login != in.Admin.Login {
		opts = append(opts, gitea.SetSudo(login))
	}
	return gitea.NewClient(in.URL, opts...)
}

// EnsureUser creates the user login (a plain user, password unknown) unless it exists.
func (in *Instance) EnsureUser(t testing.TB, login string) {
	t.Helper()
	in.mu.Lock()
	known := in.users[login]
	in.mu.Unlock()
	if known {
		return
	}
	c := in.Client(t, "")
	_, resp, err := c.GetUserInfo(login)
	switch {
	case err == nil:
	case resp != nil && resp.StatusCode == http.StatusNotFound:
		mustChange := false
		_, _, err = c.AdminCreateUser(gitea.CreateUserOption{
			Username: login, Email: login + "@alfred.invalid", Password: randomHex(t, 16), MustChangePassword: &mustChange,
		})
		if err != nil {
			t.Fatalf("create user %s: %v", login, err)
		}
	default:
		t.Fatalf("read user %s: %v", login, err)
	}
	in.mu.Lock()
	in.users[login] = true
	in.mu.Unlock()
}

func randomHex(t testing.TB, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatalf("random bytes: %v", err)
	}
	return hex.EncodeToString(b)
}

// check ends the test when err is set, naming what was done.
func check(t testing.TB, err error, format string, args ...any) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", fmt.Sprintf(format, args...), err)
	}
}
