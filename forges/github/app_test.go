package github

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/forges/forgetest"
	"github.com/alchemic-studio/alfred/forges/github/githubtest"
)

const testAppID = 1234

// appKey is the App's key pair, made once: RSA key generation is slow.
var appKey = sync.OnceValue(func() *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return k
})

// writeFile writes data to a file of its own in t's temporary directory.
func writeFile(t testing.TB, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "app.pem")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func pemKey(k *rsa.PrivateKey) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
}

// newAppForge is a forge authenticating as the fake's App (installation
// given when fixed) with the key at keyPath.
func newAppForge(t testing.TB, srv *githubtest.Server, keyPath string, fixed int64) *Forge {
	t.Helper()
	f, err := New(Options{
		BaseURL: srv.URL(), AppID: testAppID, PrivateKeyPath: keyPath, InstallationID: fixed,
		Retry:  forges.RetryPolicy{AttemptTimeout: 10 * time.Second, MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, Budget: 2 * time.Second},
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// appCase is one scenario of App mode: prepare runs first (its requests are
// not counted), then call, whose result, error, requests and minted tokens
// are checked.
type appCase struct {
	name    string
	fixed   bool // give the installation id instead of finding it
	prepare func(t *testing.T, srv *githubtest.Server, f *Forge)
	call    func(ctx context.Context, srv *githubtest.Server, f *Forge) (string, error)
	want    func(srv *githubtest.Server) string // the result, when no error is wanted

	wantErr      string // a part of the error's text
	wantIs       error  // the sentinel the error wraps
	wantRequests int    // requests of call
	wantMinted   int    // tokens minted in all
}

func TestAppMode(t *testing.T) {
	for _, tc := range appCases {
		t.Run(tc.name, func(t *testing.T) {
			srv := githubtest.NewServer(t)
			inst := srv.EnableApp(testAppID, &appKey().PublicKey)
			if err := srv.AddIssue(forges.Issue{Number: 1, Title: "t", Author: "alice"}); err != nil {
				t.Fatal(err)
			}
			var fixed int64
			if tc.fixed {
				fixed = inst
			}
			f := newAppForge(t, srv, writeFile(t, pemKey(appKey())), fixed)
			if tc.prepare != nil {
				tc.prepare(t, srv, f)
			}
			before := srv.Requests()
			got, err := tc.call(t.Context(), srv, f)
			checkAppCase(t, tc, srv, got, err, srv.Requests()-before)
		})
	}
}

func checkAppCase(t *testing.T, tc appCase, srv *githubtest.Server, got string, err error, requests int) {
	t.Helper()
	switch {
	case tc.wantErr == "" && err != nil:
		t.Fatalf("error: %v", err)
	case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
		t.Fatalf("error = %v; want one saying %q", err, tc.wantErr)
	case tc.wantIs != nil && !errors.Is(err, tc.wantIs):
		t.Errorf("error = %v; want it to wrap %v", err, tc.wantIs)
	case err != nil && errors.Is(err, forges.ErrNotFound):
		t.Errorf("error = %v wraps ErrNotFound: the engine would read a missing issue or branch", err)
	}
	if tc.want != nil && got != tc.want(srv) {
		t.Errorf("got %q, want %q", got, tc.want(srv))
	}
	if err != nil && strings.Contains(err.Error(), "PRIVATE KEY") {
		t.Errorf("the error shows the key: %v", err)
	}
	if requests != tc.wantRequests {
		t.Errorf("%d requests, want %d", requests, tc.wantRequests)
	}
	if n := srv.TokensMinted(); n != tc.wantMinted {
		t.Errorf("%d tokens minted, want %d", n, tc.wantMinted)
	}
}

func comment(ctx context.Context, srv *githubtest.Server, f *Forge) (string, error) {
	c, err := f.CreateComment(ctx, forges.Target{Project: srv.Project(), Kind: forges.TargetIssue, Number: 1}, "hello")
	if err != nil {
		return "", err
	}
	return c.Author, nil
}

func credentials(ctx context.Context, srv *githubtest.Server, f *Forge) (string, error) {
	user, pass, err := f.GitCredentials(ctx, srv.Project())
	return user + ":" + pass, err
}

func me(ctx context.Context, _ *githubtest.Server, f *Forge) (string, error) {
	u, err := f.Me(ctx)
	return u.Login, err
}

func warm(t *testing.T, srv *githubtest.Server, f *Forge) {
	if _, err := comment(t.Context(), srv, f); err != nil {
		t.Fatal(err)
	}
}

const (
	notInstalled = "GitHub App 1234 is not installed on acme/demo (or the installation was revoked): install it on the repository"
	jwtRefused   = "GitHub refused the JWT of GitHub App 1234 (401 "
)

var appCases = []appCase{
	{name: "Me is the App's bot user", call: me, want: func(*githubtest.Server) string { return githubtest.AppSlug + "[bot]" },
		wantRequests: 1},
	{name: "a comment is posted with the installation token, as the bot user", call: comment,
		want:         func(srv *githubtest.Server) string { return srv.AppBotLogin() },
		wantRequests: 3, wantMinted: 1}, // installation of acme/demo, token, comment
	{name: "with the installation given, none is looked for", fixed: true, call: comment,
		want:         func(srv *githubtest.Server) string { return srv.AppBotLogin() },
		wantRequests: 2, wantMinted: 1},
	{name: "git credentials are x-access-token and the cached installation token", prepare: warm, call: credentials,
		want:         func(srv *githubtest.Server) string { return "x-access-token:" + srv.InstallationToken() },
		wantRequests: 0, wantMinted: 1},
	{name: "a token expiring within a minute is minted again, a fresh one is cached", call: refresh,
		want: func(*githubtest.Server) string { return "minted again; cached" }, wantRequests: 4, wantMinted: 3}, // lookup, 3 tokens
	{name: "a failing mint is retried by the retry policy only", fixed: true,
		prepare: func(t *testing.T, srv *githubtest.Server, _ *Forge) { srv.FailNext(http.StatusServiceUnavailable, 1) },
		call:    comment, want: func(srv *githubtest.Server) string { return srv.AppBotLogin() }, wantRequests: 3, wantMinted: 1},
	{name: "expired JWT (GitHub's clock 5 minutes ahead): Me", prepare: skew(5 * time.Minute), call: me,
		wantErr: jwtRefused + "'Expiration time' claim", wantIs: forges.ErrUnauthorized, wantRequests: 1},
	{name: "JWT from the future (GitHub's clock 5 minutes behind): installation lookup", prepare: skew(-5 * time.Minute), call: comment,
		wantErr: jwtRefused + "'Issued at' claim", wantIs: forges.ErrUnauthorized, wantRequests: 1},
	{name: "expired JWT while minting a token", fixed: true, prepare: skew(5 * time.Minute), call: credentials,
		wantErr: "this host's clock is right", wantIs: forges.ErrUnauthorized, wantRequests: 1},
	{name: "a key of another App", prepare: otherKey, call: me,
		wantErr: jwtRefused + "A JSON web token could not be decoded): check that the App id and the private key belong to the same App",
		wantIs:  forges.ErrUnauthorized, wantRequests: 1},
	{name: "revoked before first use", prepare: revoke, call: comment,
		wantErr: notInstalled, wantIs: forges.ErrForbidden, wantRequests: 1},
	{name: "revoked, installation given: the mint is refused", fixed: true, prepare: revoke, call: comment,
		wantErr: notInstalled, wantIs: forges.ErrForbidden, wantRequests: 1},
	{name: "revoked after a token was cached: the 401, then the lookup", prepare: warmThenRevoke, call: comment,
		wantErr: "comment on issue #1 of acme/demo: " + notInstalled, wantIs: forges.ErrForbidden, wantRequests: 2, wantMinted: 1},
	{name: "revoked: Permission is an error, not PermissionNone", prepare: warmThenRevoke, call: permission,
		wantErr: notInstalled, wantIs: forges.ErrForbidden, wantRequests: 2, wantMinted: 1},
	{name: "revoked: git credentials", prepare: revoke, call: credentials,
		wantErr: notInstalled, wantIs: forges.ErrForbidden, wantRequests: 1},
	{name: "git credentials need the repository", call: func(ctx context.Context, _ *githubtest.Server, f *Forge) (string, error) {
		_, _, err := f.GitCredentials(ctx, forges.Project{})
		return "", err
	}, wantErr: "no repository named"},
}

func skew(d time.Duration) func(*testing.T, *githubtest.Server, *Forge) {
	return func(_ *testing.T, srv *githubtest.Server, _ *Forge) { srv.SetClockSkew(d) }
}

func revoke(_ *testing.T, srv *githubtest.Server, _ *Forge) { srv.RevokeInstallation() }

func warmThenRevoke(t *testing.T, srv *githubtest.Server, f *Forge) {
	warm(t, srv, f)
	srv.RevokeInstallation()
}

func otherKey(t *testing.T, srv *githubtest.Server, _ *Forge) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	srv.EnableApp(testAppID, &k.PublicKey)
}

func permission(ctx context.Context, srv *githubtest.Server, f *Forge) (string, error) {
	p, err := f.Permission(ctx, srv.Project(), "alice")
	return p.String(), err
}

// refresh asks for git credentials twice while GitHub mints tokens that
// expire within the minute of margin (each is minted again), then twice
// with hour-long tokens (the second comes from the cache).
func refresh(ctx context.Context, srv *githubtest.Server, f *Forge) (string, error) {
	srv.SetTokenTTL(30 * time.Second)
	var got []string
	for i := range 4 {
		if i == 2 {
			srv.SetTokenTTL(time.Hour)
		}
		s, err := credentials(ctx, srv, f)
		if err != nil {
			return "", err
		}
		got = append(got, s)
	}
	switch {
	case got[0] == got[1] || got[1] == got[2]:
		return "not minted again", nil
	case got[2] != got[3]:
		return "not cached", nil
	}
	return "minted again; cached", nil
}

func TestAppNewRefusesBadKeys(t *testing.T) {
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ecDER, _ := x509.MarshalPKCS8PrivateKey(ec)
	const secret = "c2VjcmV0LWtleS1tYXRlcmlhbA"
	tests := []struct {
		name string
		opts func(t *testing.T) Options
		want string
	}{
		{"missing file", func(t *testing.T) Options {
			return Options{AppID: testAppID, PrivateKeyPath: filepath.Join(t.TempDir(), "none.pem")}
		}, "read the GitHub App's private key: open "},
		{"not PEM", func(t *testing.T) Options {
			return Options{AppID: testAppID, PrivateKeyPath: writeFile(t, []byte(secret))}
		}, "is not a PEM-encoded RSA private key"},
		{"PEM but garbled", func(t *testing.T) Options {
			return Options{AppID: testAppID, PrivateKeyPath: writeFile(t, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: []byte(secret)}))}
		}, "is not a PEM-encoded RSA private key"},
		{"not RSA", func(t *testing.T) Options {
			return Options{AppID: testAppID, PrivateKeyPath: writeFile(t, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: ecDER}))}
		}, "is not a PEM-encoded RSA private key"},
		{"no key file", func(*testing.T) Options { return Options{AppID: testAppID} }, "set the path of its .pem file"},
		{"a key without the App id", func(*testing.T) Options { return Options{PrivateKeyPath: "k.pem"} }, "set the App id too"},
		{"a token and an App", func(*testing.T) Options { return Options{AppID: testAppID, Token: "t", PrivateKeyPath: "k.pem"} }, "keep only one"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.opts(t))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New = %v; want an error saying %q", err, tc.want)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("the error shows the key file's content: %v", err)
			}
		})
	}
}

// TestContractApp runs the contract suite with the forge authenticating as
// the App. The installation and its token are had once before the case, so
// that FailNext and Hang meet the requests the case makes.
func TestContractApp(t *testing.T) {
	keyPath := writeFile(t, pemKey(appKey()))
	forgetest.Run(t, func(t *testing.T) forgetest.Harness {
		srv := githubtest.NewServer(t)
		srv.EnableApp(testAppID, &appKey().PublicKey)
		f := newAppForge(t, srv, keyPath, 0)
		if _, _, err := f.GitCredentials(t.Context(), srv.Project()); err != nil {
			t.Fatal(err)
		}
		return &appHarness{harness{srv: srv, forge: f}}
	})
}

type appHarness struct{ harness }

func (h *appHarness) Want() forgetest.Want {
	w := h.harness.Want()
	w.BotLogin, w.GitPassword = h.srv.AppBotLogin(), h.srv.InstallationToken()
	return w
}

// TestAppTokensPerRepository: each installation token is minted for the
// repository of the call alone ({"repositories": [name]}) and cached per
// repository: a call about another repository of the same installation gets
// another token, and the first repository's token is used again from the
// cache. A token so narrowed does not see the other repository.
func TestAppTokensPerRepository(t *testing.T) {
	for _, fixed := range []bool{false, true} {
		t.Run(map[bool]string{false: "installation found", true: "installation given"}[fixed], func(t *testing.T) {
			srv := githubtest.NewServer(t)
			inst := srv.EnableApp(testAppID, &appKey().PublicKey)
			srv.InstallAlsoOn("rocket")
			if err := srv.AddIssue(forges.Issue{Number: 1, Title: "t", Author: "alice"}); err != nil {
				t.Fatal(err)
			}
			var id int64
			if fixed {
				id = inst
			}
			f := newAppForge(t, srv, writeFile(t, pemKey(appKey())), id)
			demo, rocket := srv.Project(), forges.Project{Owner: srv.Project().Owner, Name: "rocket"}
			steps := []struct {
				p      forges.Project
				minted int
			}{{demo, 1}, {rocket, 2}, {demo, 2}, {rocket, 2}}
			tokens := map[string]string{}
			for i, s := range steps {
				_, tok, err := f.GitCredentials(t.Context(), s.p)
				if err != nil {
					t.Fatalf("step %d, %s: %v", i, s.p.FullName(), err)
				}
				if n := srv.TokensMinted(); n != s.minted {
					t.Errorf("step %d, %s: %d tokens minted, want %d", i, s.p.FullName(), n, s.minted)
				}
				if prev, ok := tokens[s.p.Name]; ok && prev != tok {
					t.Errorf("step %d: %s's cached token was not used", i, s.p.FullName())
				}
				tokens[s.p.Name] = tok
			}
			if tokens["demo"] == tokens["rocket"] {
				t.Error("two repositories share one token")
			}
			want := [][]string{{"demo"}, {"rocket"}}
			if got := srv.MintedFor(); !slices.EqualFunc(got, want, slices.Equal[[]string]) {
				t.Errorf("the mints asked for %q, want %q", got, want)
			}
			// rocket's token does not see demo: GitHub's 404.
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL()+"repos/acme/demo/issues", nil)
			req.Header.Set("Authorization", "Bearer "+tokens["rocket"])
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusNotFound {
				t.Errorf("rocket's token on demo: %d, want 404", resp.StatusCode)
			}
			// The forge's own calls about demo use demo's token.
			if _, err := comment(t.Context(), srv, f); err != nil {
				t.Fatalf("comment on demo: %v", err)
			}
		})
	}
}

// A repository the given installation does not cover: the mint, which
// names it, is refused (422), and the answer says to install the App there.
func TestAppMintForAnUncoveredRepository(t *testing.T) {
	srv := githubtest.NewServer(t)
	inst := srv.EnableApp(testAppID, &appKey().PublicKey)
	f := newAppForge(t, srv, writeFile(t, pemKey(appKey())), inst)
	_, _, err := f.GitCredentials(t.Context(), forges.Project{Owner: "acme", Name: "elsewhere"})
	if err == nil || !errors.Is(err, forges.ErrForbidden) ||
		!strings.Contains(err.Error(), "GitHub App 1234 is not installed on acme/elsewhere") {
		t.Fatalf("error = %v; want the App not installed on acme/elsewhere (ErrForbidden)", err)
	}
	if n := srv.TokensMinted(); n != 0 {
		t.Errorf("%d tokens minted", n)
	}
}
