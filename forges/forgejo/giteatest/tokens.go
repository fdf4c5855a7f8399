package giteatest

import (
	"net/http"
	"testing"

	"code.gitea.io/sdk/gitea"
)

// NewToken makes an access token of login with only the scopes given (e.g.
// read:user, write:issue). The forge makes tokens only for a user who signs
// in with a password: the admin sets login's to a random one first (its
// other tokens stay valid).
func (in *Instance) NewToken(t testing.TB, login string, scopes ...string) string {
	t.Helper()
	in.EnsureUser(t, login)
	password := randomHex(t, 16)
	mustChange := false
	_, err := in.Client(t, "").AdminEditUser(login, gitea.EditUserOption{
		LoginName: login, Password: password, MustChangePassword: &mustChange,
	})
	check(t, err, "set a password of %s", login)
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
