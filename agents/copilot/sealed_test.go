package copilot

import (
	"context"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/agents/internal/clitest"
	"github.com/alchemic-studio/alfred/agents/mockllm"
	"github.com/alchemic-studio/alfred/gateway"
	"github.com/alchemic-studio/alfred/sandbox"
)

// realGitHubToken is the GitHub token the gateway holds in the sealed
// sign-in test: it must reach the server playing GitHub, and nothing the
// CLI sees, writes or prints.
const realGitHubToken = "github_pat_11REALTOKEN0_sealedSignInTest0123456789"

// TestRealSealedSignIn runs the real CLI sealed with its GitHub sign-in:
// the forwarder in front of it, HTTPS_PROXY the gateway, which terminates
// TLS with its own authority (trusted through NODE_EXTRA_CA_CERTS) and
// holds the GitHub token. The run answers with the mock's text; the server
// playing GitHub got the real token on every request, the run's never; the
// CLI's environment, home and output never hold the real token; no session
// token was fetched; nothing was refused; the model requests were metered.
func TestRealSealedSignIn(t *testing.T) {
	bin := clitest.Bin(t, Executable)
	fwd := clitest.Forwarder(t)
	mock := mockllm.Start(mockllm.Options{Reply: clitest.SealedReply})
	t.Cleanup(mock.Close)
	player := mockllm.StartGitHub(mock)
	t.Cleanup(player.Close)
	sess, served := openSignIn(t, player)

	d := CLI{}.Descriptor()
	offered := clitest.Env(bin, nil)
	for _, k := range d.Sealed.Credentials {
		offered[k] = realGitHubToken
	}
	sd := d.Sealed.For(served)
	if sd.Provider != gateway.NameCopilot {
		t.Fatalf("with a GitHub token served, Copilot runs sealed to %s", sd.Provider)
	}
	port := clitest.FreePort(t)
	env := sd.Environment(offered, sd.BaseURL(port), sess.Token())
	env[sd.CAVar] = sess.CAPath() // on the host, the mount's source is the file
	runner := &clitest.Prefixed{Inner: clitest.Host(t)}
	a, err := agents.NewLocal(CLI{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Run(context.Background(), agents.Request{
		Prompt: "Say hello.", Phase: agents.PhaseDevelopment, Model: mockllm.CopilotModel, Timeout: 3 * time.Minute, Runner: runner,
		Sandbox: sandbox.Spec{Workdir: t.TempDir(), Env: env,
			Prefix: []string{fwd, "-port", strconv.Itoa(port), "-socket", sess.SocketPath(), "--"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := sess.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("sealed sign-in: outcome %s, GitHub saw %d requests, gateway %+v, refused %v", res.Outcome, len(player.Requests()), sess.Usage(), sess.Refused())
	if res.Outcome != agents.OutcomeSucceeded || res.Text != clitest.SealedReply {
		t.Fatalf("outcome %s text %q, want %q\nstdout: %s\nstderr: %s", res.Outcome, res.Text, clitest.SealedReply, res.Stdout, res.Stderr)
	}
	checkUpstream(t, player.Requests(), mock, sess.Token())
	if n := sess.RefusedTotal(); n != 0 {
		t.Errorf("the gateway refused %d requests: %v", n, sess.Refused())
	}
	n := int64(len(mock.Requests()))
	if u := sess.Usage(); u.Requests != int64(len(player.Requests())) || u.InputTokens != 10*n || u.OutputTokens != n {
		t.Errorf("metered %+v: want %d requests, and the mock's 10 input and 1 output tokens for each of its %d", u, len(player.Requests()), n)
	}
	checkNoToken(t, runner, res)
}

// openSignIn starts a gateway serving Copilot's sign-in at the player
// (trusted by the gateway's transport), with the real token, and opens a
// session.
func openSignIn(t *testing.T, player *mockllm.GitHub) (*gateway.Session, []gateway.Provider) {
	t.Helper()
	dir, err := os.MkdirTemp("", "gw") // short: a socket path is at most 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	g, err := gateway.New(gateway.Options{Providers: []gateway.Provider{gateway.Copilot(player.URL, realGitHubToken)},
		Transport: player.Client().Transport.(*http.Transport).Clone(), Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	s, err := g.Open("sealed-sign-in")
	if err != nil {
		t.Fatal(err)
	}
	return s, g.Served()
}

// checkUpstream: the sign-in came first and every request carried the
// real token, never the run's; no session token was asked for; the model
// requests reached the mock with the real token.
func checkUpstream(t *testing.T, seen []string, mock *mockllm.Server, token string) {
	t.Helper()
	if len(seen) == 0 || !strings.HasPrefix(seen[0], "GET /copilot_internal/user ") {
		t.Fatalf("GitHub got %q, want the sign-in first", seen)
	}
	for _, s := range seen {
		if !strings.HasSuffix(s, " "+realGitHubToken) || strings.Contains(s, token) {
			t.Errorf("GitHub got %q: want the real token", s)
		}
		if strings.Contains(s, "/copilot_internal/v2/token") {
			t.Errorf("the CLI asked for a session token: %q", s)
		}
	}
	reqs := mock.Requests()
	if len(reqs) == 0 {
		t.Fatal("the mock model got no request")
	}
	for _, q := range reqs {
		if q.Key != realGitHubToken {
			t.Errorf("the mock got %s %s with key %q, want the real token", q.Method, q.Path, q.Key)
		}
	}
}

// checkNoToken: the real token is in no environment the CLI got (the run's
// token is, behind github_pat_), no file of its home, no output.
func checkNoToken(t *testing.T, r *clitest.Prefixed, res *agents.Result) {
	t.Helper()
	envs := r.Envs()
	if len(envs) == 0 {
		t.Fatal("the CLI never ran")
	}
	for i, env := range envs {
		for k, v := range env {
			if strings.Contains(v, realGitHubToken) {
				t.Errorf("attempt %d: the CLI's environment holds the real token in %s", i, k)
			}
		}
		if !gateway.IsRunToken(env["COPILOT_GITHUB_TOKEN"]) || !strings.HasPrefix(env["COPILOT_GITHUB_TOKEN"], gateway.GitHubTokenPrefix) {
			t.Errorf("attempt %d: COPILOT_GITHUB_TOKEN is not the run's token behind github_pat_", i)
		}
	}
	files := 0
	err := filepath.WalkDir(r.Inner.Home, func(path string, e fs.DirEntry, err error) error {
		if err != nil || !e.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		if strings.Contains(string(b), realGitHubToken) {
			t.Errorf("the CLI's home holds the real token in %s", path)
		}
		return nil
	})
	if err != nil || files == 0 {
		t.Errorf("reading the CLI's home (%d files): %v", files, err)
	}
	for _, a := range res.Attempts {
		if strings.Contains(string(a.Stdout)+string(a.Stderr), realGitHubToken) {
			t.Error("the CLI printed the real token")
		}
	}
}
