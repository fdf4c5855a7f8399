// Package giteatest drives a real Gitea started by scripts/gitea.sh, for tests
// that run against the real server rather than a fake: the forge contract
// suite (forges/forgejo's TestContractRealGitea) and end-to-end tests.
//
// scripts/gitea.sh start prints the ALFRED_TEST_GITEA_* variables FromEnv reads:
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

// Instance is a running Gitea and the accounts scripts/gitea.sh made on it.
type Instance struct {
	URL     string // base URL, without a trailing slash
	Version string // Gitea's version, e.g. 1.26.0
	Admin   Account
	Bot     Account // the bot's account (alfred-bot)
	User    Account // a person (alice), owner of the repositories NewRepo makes

	mu    sync.Mutex
	users map[string]bool // logins known to exist
}

// The variables FromEnv reads, as scripts/gitea.sh prints them.
const (
	EnvURL        = "ALFRED_TEST_GITEA_URL"
	EnvVersion    = "ALFRED_TEST_GITEA_VERSION"
	EnvAdmin      = "ALFRED_TEST_GITEA_ADMIN"
	EnvAdminToken = "ALFRED_TEST_GITEA_ADMIN_TOKEN"
	EnvBot        = "ALFRED_TEST_GITEA_BOT"
	EnvBotToken   = "ALFRED_TEST_GITEA_BOT_TOKEN"
	EnvUser       = "ALFRED_TEST_GITEA_USER"
	EnvUserToken  = "ALFRED_TEST_GITEA_USER_TOKEN"
)

// callTimeout bounds each API call of the helpers.
const callTimeout = 30 * time.Second

// FromEnv is the Gitea the ALFRED_TEST_GITEA_* variables describe. It fails
// the test when one is missing or the server does not answer; under
// `go test -short` a missing variable skips the test instead.
func FromEnv(t testing.TB) *Instance {
	t.Helper()
	vals := map[string]string{}
	for _, k := range []string{EnvURL, EnvVersion, EnvAdmin, EnvAdminToken, EnvBot, EnvBotToken, EnvUser, EnvUserToken} {
		v := os.Getenv(k)
		if v == "" {
			const how = `start one with: env=$(bash scripts/gitea.sh start) && eval "$env"`
			if testing.Short() {
				t.Skipf("%s is not set: this test needs a real Gitea (skipped under -short); %s", k, how)
			}
			t.Fatalf("%s is not set: this test needs a real Gitea; %s", k, how)
		}
		vals[k] = v
	}
	in := &Instance{
		URL:     strings.TrimSuffix(vals[EnvURL], "/"),
		Version: vals[EnvVersion],
		Admin:   Account{Login: vals[EnvAdmin], Token: vals[EnvAdminToken]},
		Bot:     Account{Login: vals[EnvBot], Token: vals[EnvBotToken]},
		User:    Account{Login: vals[EnvUser], Token: vals[EnvUserToken]},
		users:   map[string]bool{},
	}
	for _, a := range []Account{in.Admin, in.Bot, in.User} {
		in.users[a.Login] = true
	}
	c := in.Client(t, "")
	if _, _, err := c.ServerVersion(); err != nil {
		t.Fatalf("the Gitea at %s (%s) does not answer: %v; is scripts/gitea.sh's Gitea running?", in.URL, EnvURL, err)
	}
	return in
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
		gitea.SetGiteaVersion(in.Version), // no /version request per client
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
