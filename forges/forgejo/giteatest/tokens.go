package giteatest

import (
	"context"
	"net/http"
	"testing"

	"code.gitea.io/sdk/gitea"
)

// NewToken makes an access token of login with only the scopes given (e.g.
// read:user, write:issue). The forge makes tokens only for a user who signs
// in with a password: SetPassword first (login's other tokens stay valid).
func (in *Instance) NewToken(t testing.TB, login string, scopes ...string) string {
	t.Helper()
	password := in.SetPassword(t, login)
	c, err := gitea.NewClient(in.URL, gitea.SetBasicAuth(login, password), gitea.SetContext(t.Context()),
		gitea.SetHTTPClient(&http.Client{Timeout: callTimeout}), gitea.SetGiteaVersion(in.SDKVersion()))
	check(t, err, "client of %s", login)
	var sc []gitea.AccessTokenScope
	for _, s := range scopes {
		sc = append(sc, gitea.AccessTokenScope(s))
	}
	tok, _, err := c.CreateAccessToken(gitea.CreateAccessTokenOption{Name: "alfred-test-" + randomHex(t, 4), Scopes: sc})
	check(t, err, "create a token of %s with scopes %v", login, scopes)
	return tok.Token
}

// SetPassword gives login (created when missing) a new random password,
// set by the admin, and returns it: to sign in on the forge's own form.
func (in *Instance) SetPassword(t testing.TB, login string) string {
	t.Helper()
	in.EnsureUser(t, login)
	password := "Pw-" + randomHex(t, 16)
	mustChange := false
	_, err := in.Client(t, "").AdminEditUser(login, gitea.EditUserOption{
		LoginName: login, Password: password, MustChangePassword: &mustChange,
	})
	check(t, err, "set a password of %s", login)
	return password
}

// NewOAuthApp registers a confidential OAuth2 application of the admin
// whose one redirect URI is redirect, and returns its client id and secret.
// It is deleted when the test ends.
func (in *Instance) NewOAuthApp(t testing.TB, redirect string) (id, secret string) {
	t.Helper()
	c := in.Client(t, "")
	app, _, err := c.CreateOauth2(gitea.CreateOauth2Option{
		Name: "alfred-test-" + randomHex(t, 4), ConfidentialClient: true, RedirectURIs: []string{redirect},
	})
	check(t, err, "create an OAuth2 application")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		defer cancel()
		c, err := in.client(ctx, "")
		if err == nil {
			_, err = c.DeleteOauth2(app.ID)
		}
		if err != nil {
			t.Errorf("delete the OAuth2 application %d: %v", app.ID, err)
		}
	})
	return app.ClientID, app.ClientSecret
}
