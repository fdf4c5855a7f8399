package bot

import (
	"context"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/agents/copilot"
	"github.com/alchemic-studio/alfred/agents/mockllm"
	"github.com/alchemic-studio/alfred/gateway"
	"github.com/alchemic-studio/alfred/sandbox"
	"github.com/alchemic-studio/alfred/state"
)

// TestSealedCopilotSignInInDocker runs the Copilot CLI of the agent image
// sealed with its GitHub sign-in, as the engine seals it: no network, the
// forwarder in front, the gateway as its HTTPS proxy, the gateway's
// certificate authority mounted read-only, the run's token behind
// github_pat_. The server playing GitHub got the gateway's token on every
// request; the container's environment holds neither that token nor the
// one the bot offered; nothing was refused; the model requests were
// metered on the run.
func TestSealedCopilotSignInInDocker(t *testing.T) {
	t.Parallel()
	runner, image := agentImageRunner(t)
	fwd := buildForwarder(t)
	a, err := copilot.New()
	if err != nil {
		t.Fatal(err)
	}
	const reply = "hello from the signed-in container"
	mock := mockllm.Start(mockllm.Options{Reply: reply})
	t.Cleanup(mock.Close)
	gh := mockllm.StartGitHub(mock)
	t.Cleanup(gh.Close)
	dir, err := os.MkdirTemp("", "gw") // short, and seen by the Docker daemon at the same path
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	g, err := gateway.New(gateway.Options{Providers: []gateway.Provider{gateway.Copilot(gh.URL, dockerProviderKey)},
		Transport: gh.Client().Transport.(*http.Transport).Clone(), Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	e := engineSealedBy(t, g, runner, fwd)
	spec := sealedSpec(t, image, a.Descriptor(), nil)
	s, err := e.seal("run-copilot-sign-in", Scope{}, a, &spec)
	if err != nil || s == nil {
		t.Fatalf("seal: %v, %v", s, err)
	}
	if err := e.configure(t.TempDir(), a, &spec); err != nil {
		t.Fatal(err)
	}
	rec := &specRecorder{Runner: runner}
	res, err := a.Run(context.Background(), agents.Request{Prompt: "Say hello.", Phase: agents.PhaseDevelopment,
		Model: mockllm.CopilotModel, Timeout: 4 * time.Minute, Sandbox: spec, Runner: rec})
	run := &state.Run{ID: "run-copilot-sign-in"}
	e.unseal(s, run)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("copilot signed in, in docker: %s %q, GitHub saw %d requests, gateway %+v", res.Outcome, res.Text, len(gh.Requests()), run.Gateway)
	if res.Outcome != agents.OutcomeSucceeded || res.Text != reply {
		t.Fatalf("outcome %s %q\nstdout %s\nstderr %s", res.Outcome, res.Text, res.Stdout, res.Stderr)
	}
	checkSignedInContainer(t, rec.spec(), s)
	seen := gh.Requests()
	if len(seen) == 0 || !strings.HasPrefix(seen[0], "GET /copilot_internal/user ") {
		t.Errorf("GitHub got %q, want the sign-in first", seen)
	}
	for _, r := range seen {
		if !strings.HasSuffix(r, " "+dockerProviderKey) {
			t.Errorf("GitHub got %q, want the gateway's token", r)
		}
	}
	checkNoKey(t, res, mock)
	n := int64(len(mock.Requests()))
	rg := run.Gateway
	if n == 0 || rg == nil || rg.RefusedTotal != 0 || rg.Requests != int64(len(seen)) || rg.InputTokens != mockInputTokens*n || rg.OutputTokens != mockOutputTokens*n {
		t.Errorf("the run's gateway record %+v: want no refusal, %d requests, the mock's usage for its %d", rg, len(seen), n)
	}
	for _, q := range mock.Requests() {
		if q.Key != dockerProviderKey {
			t.Errorf("the mock saw %s with key %q", q.Path, q.Key)
		}
	}
}

// checkSignedInContainer: no network, the socket and the CA mounted (the
// CA read-only), the run's token behind github_pat_ and in the proxy URL,
// no key in the environment.
func checkSignedInContainer(t *testing.T, spec sandbox.Spec, s *gateway.Session) {
	t.Helper()
	ca := sandbox.Mount{Host: s.CAPath(), Container: gateway.ContainerCA, ReadOnly: true}
	if spec.Network != "none" || !slices.Contains(spec.Binds, ca) ||
		!slices.ContainsFunc(spec.Binds, func(m sandbox.Mount) bool { return m.Container == gateway.ContainerSocket }) {
		t.Errorf("network %q, mounts %+v", spec.Network, spec.Binds)
	}
	for k, v := range spec.Env {
		if strings.Contains(v, dockerProviderKey) || strings.Contains(v, dockerOfferedKey) {
			t.Errorf("the container's environment holds a key in %s", k)
		}
	}
	if spec.Env["COPILOT_GITHUB_TOKEN"] != gateway.GitHubTokenPrefix+s.Token() || !strings.Contains(spec.Env["HTTPS_PROXY"], ":"+s.Token()+"@127.0.0.1:") {
		t.Errorf("COPILOT_GITHUB_TOKEN and HTTPS_PROXY do not carry the run's token")
	}
}
