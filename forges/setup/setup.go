// Package setup is where each forge kind is set up, the one place beside
// the forges' own packages that names a kind: how its client and webhook
// parser are built, where its OAuth2 endpoints and
// its commit pages are, and the host and user name git uses with the bot's
// token there. Adding a forge is a package of its own under forges/ and a
// row here; nothing outside forges/ switches on a kind (a test of the root
// package fails when something does).
package setup

import (
	"net/http"
	"net/url"
	"slices"
	"strings"

	"golang.org/x/oauth2"

	"github.com/alchemic-studio/alfred/config"
	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/forges/forgejo"
	"github.com/alchemic-studio/alfred/forges/github"
	"github.com/alchemic-studio/alfred/forges/gitlab"
)

// Options are what a forge's client is built from.
type Options struct {
	URL        string // the forge's base URL (GitHub: empty for github.com)
	Token      string
	HTTPClient *http.Client
	Retry      forges.RetryPolicy
	// The GitHub App (GitHub only): its id, the file of its key, and an
	// installation for every repository (0: looked up per repository).
	AppID           int64
	AppKeyFile      string
	AppInstallation int64
}

// OAuth are a forge's OAuth2 endpoints for the sign-in to the pages, its
// "current user" endpoint, the JSON field of the login there and the scopes
// to ask for.
type OAuth struct {
	AuthURL, TokenURL, UserURL, LoginField string
	Scopes                                 []string
}

// Kind is one forge kind's registration.
type Kind struct {
	Name string // ALFRED_FORGE's value
	// New builds the client and the webhook parser.
	New func(Options) (forges.Forge, forges.Hooks, error)
	// OAuth are the endpoints of the forge at base (ALFRED_FORGE_URL).
	OAuth func(base string) OAuth
	// CommitPath goes between a project's address and a commit's sha.
	CommitPath string
	// GitHost is the host the forge at base serves git from, and the user
	// name git gives with the bot's token there.
	GitHost func(base string) (host, user string)
	// URLOptional: the kind has a default address (ALFRED_FORGE_URL may be
	// empty); App: it has an App mode (ALFRED_GITHUB_APP_*).
	URLOptional, App bool
}

var kinds = []Kind{
	{
		Name: string(forges.Forgejo), // Forgejo and Gitea
		New: func(o Options) (forges.Forge, forges.Hooks, error) {
			f, err := forgejo.New(forgejo.Options{BaseURL: o.URL, Token: o.Token, HTTPClient: o.HTTPClient, Retry: o.Retry})
			return f, forgejo.Hooks{}, err
		},
		OAuth: func(base string) OAuth {
			web := strings.TrimRight(base, "/")
			return OAuth{AuthURL: web + "/login/oauth/authorize", TokenURL: web + "/login/oauth/access_token",
				UserURL: web + "/api/v1/user", LoginField: "login"}
		},
		CommitPath: "/commit/",
		GitHost:    func(base string) (string, string) { return hostOf(base), forgejo.GitUser },
	},
	{
		Name: string(forges.GitHub),
		New: func(o Options) (forges.Forge, forges.Hooks, error) {
			f, err := github.New(github.Options{BaseURL: o.URL, Token: o.Token, HTTPClient: o.HTTPClient, Retry: o.Retry,
				AppID: o.AppID, PrivateKeyPath: o.AppKeyFile, InstallationID: o.AppInstallation})
			return f, github.Hooks{}, err
		},
		OAuth: func(base string) OAuth {
			web, user := strings.TrimRight(base, "/"), ""
			if web == "" || web == "https://api.github.com" {
				web, user = "https://github.com", "https://api.github.com/user"
			} else { // GitHub Enterprise: the API is under /api/v3
				web = strings.TrimSuffix(web, "/api/v3")
				user = web + "/api/v3/user"
			}
			return OAuth{AuthURL: web + "/login/oauth/authorize", TokenURL: web + "/login/oauth/access_token", UserURL: user, LoginField: "login"}
		},
		CommitPath: "/commit/",
		GitHost: func(base string) (string, string) {
			host := hostOf(base)
			if host == "" || host == "api.github.com" {
				host = "github.com"
			}
			return host, github.GitUser
		},
		URLOptional: true,
		App:         true,
	},
	{
		Name: string(forges.GitLab),
		New: func(o Options) (forges.Forge, forges.Hooks, error) {
			f, err := gitlab.New(gitlab.Options{BaseURL: o.URL, Token: o.Token, HTTPClient: o.HTTPClient, Retry: o.Retry})
			return f, gitlab.Hooks{}, err
		},
		OAuth: func(base string) OAuth {
			web := strings.TrimRight(base, "/")
			return OAuth{AuthURL: web + "/oauth/authorize", TokenURL: web + "/oauth/token",
				UserURL: web + "/api/v4/user", LoginField: "username", Scopes: []string{"read_user"}}
		},
		CommitPath: "/-/commit/",
		GitHost:    func(base string) (string, string) { return hostOf(base), gitlab.GitUser },
	},
}

// OAuth2 is the OAuth2 application of the forge at base (ALFRED_FORGE_URL)
// for the sign-in to the pages, with its client and the callback
// redirectURL, the forge's "current user" endpoint and the JSON field of the
// login there.
func (k Kind) OAuth2(base, clientID, clientSecret, redirectURL string) (o *oauth2.Config, userURL, loginField string) {
	e := k.OAuth(base)
	o = &oauth2.Config{Endpoint: oauth2.Endpoint{AuthURL: e.AuthURL, TokenURL: e.TokenURL},
		ClientID: clientID, ClientSecret: clientSecret, RedirectURL: redirectURL, Scopes: e.Scopes}
	return o, e.UserURL, e.LoginField
}

// Of is the registration of the kind named name.
func Of(name string) (Kind, bool) {
	i := slices.IndexFunc(kinds, func(k Kind) bool { return k.Name == name })
	if i < 0 {
		return Kind{}, false
	}
	return kinds[i], true
}

// ConfigKinds are the kinds as the configuration checks them (config.Load).
func ConfigKinds() []config.ForgeKind {
	out := make([]config.ForgeKind, len(kinds))
	for i, k := range kinds {
		out[i] = config.ForgeKind{Name: k.Name, URLOptional: k.URLOptional, App: k.App}
	}
	return out
}

func hostOf(base string) string {
	u, err := url.Parse(base)
	if err != nil {
		return ""
	}
	return u.Hostname()
}
