package clitest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/agents/mockllm"
	"github.com/alchemic-studio/alfred/gateway"
	"github.com/alchemic-studio/alfred/sandbox"
)

// RealKey is the provider key the gateway of a sealed test holds: it must
// reach the mock model, and nothing the CLI sees or prints.
const RealKey = "sk-real-provider-key-5e41ed0123456789"

// SealedReply is the mock model's answer in a sealed test.
const SealedReply = "hello through the model gateway"

// Forwarder builds cmd/alfred-forward (static, as the agent image has it)
// into a temporary folder and returns the binary: the tests run the
// forwarder of this tree.
func Forwarder(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "alfred-forward")
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, "github.com/alchemic-studio/alfred/cmd/alfred-forward")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build alfred-forward: %v\n%s", err, out)
	}
	return bin
}

// Sealed runs a real CLI as a sealed run does, minus the container: the
// environment of its Descriptor.Sealed (every offered credential set to
// RealKey, then withheld; the run's token in place of the key), the
// forwarder of cmd/alfred-forward in front of the CLI (Spec.Prefix, as the
// engine sets it), and a gateway session (package gateway) whose provider
// is the mock model, holding RealKey.
type Sealed struct {
	CLI agents.CLI
	// Forwarder is the alfred-forward binary (see Forwarder).
	Forwarder string
	// Provider and Model of the request (a sealed run names its model).
	Provider, Model string
	// Setup writes what a mount would bring into the home; may be nil.
	Setup func(home string) error
	// Env is offered besides the basics (see Env) and the credentials.
	Env map[string]string
	// Inject makes the model answer with a shell call running mockllm.ExfilCommand.
	Inject bool
	// Timeout of the run; three minutes when zero.
	Timeout time.Duration
}

// SealedRun is what a sealed run left, for the assertions.
type SealedRun struct {
	Result  *agents.Result
	Mock    *mockllm.Server
	Session *gateway.Session
	// Envs are the environments the CLI's processes got, one per attempt.
	Envs []map[string]string
}

// Check runs the CLI and fails t unless: the run succeeded with the mock's
// answer; every model request reached the mock with RealKey, through the
// gateway, which metered what the mock said (10 input and 1 output tokens a
// request); the CLI's environment held the run's token and never RealKey;
// no output shows RealKey. With Inject, also: the shell call ran, the
// gateway refused its request to exfil.example and recorded it.
func (s Sealed) Check(t *testing.T) {
	t.Helper()
	r := s.Run(t)
	r.checkAnswer(t)
	r.checkKey(t)
	r.checkMetered(t)
	if !s.Inject {
		if n := r.Session.RefusedTotal(); n != 0 {
			t.Errorf("the gateway refused %d requests: %v", n, r.Session.Refused())
		}
		return
	}
	r.checkRefused(t)
}

// Run runs the CLI once, sealed, in phase development, and closes the
// gateway session (its usage is final).
func (s Sealed) Run(t *testing.T) *SealedRun {
	t.Helper()
	d := s.CLI.Descriptor()
	if d.Sealed == nil {
		t.Fatalf("%s does not run sealed", d.ID)
	}
	bin := Bin(t, d.Executable)
	port := FreePort(t)
	opts := mockllm.Options{Reply: SealedReply}
	if s.Inject {
		opts.Shell = mockllm.ExfilCommand(port)
	}
	mock := mockllm.Start(opts)
	t.Cleanup(mock.Close)
	sess := openGateway(t, d.Sealed.Provider, mock.URL)
	offered := Env(bin, s.Env)
	for _, k := range d.Sealed.Credentials {
		offered[k] = RealKey
	}
	runner := &Prefixed{Inner: Host(t)}
	runner.Inner.Setup = s.Setup
	req := agents.Request{
		Prompt: "Say hello.", Phase: agents.PhaseDevelopment, Provider: s.Provider, Model: s.Model,
		Timeout: or(s.Timeout, 3*time.Minute), Runner: runner,
	}
	req.Sandbox = sandbox.Spec{Workdir: t.TempDir(), Env: d.Sealed.Environment(offered, d.Sealed.BaseURL(port), sess.Token()),
		Prefix: []string{s.Forwarder, "-port", strconv.Itoa(port), "-socket", sess.SocketPath(), "--"}}
	a, err := agents.NewLocal(s.CLI)
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Run(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if err := sess.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s sealed: outcome %s, %d model requests, gateway %+v, refused %v, text %q",
		d.ID, res.Outcome, len(mock.Requests()), sess.Usage(), sess.Refused(), res.Text)
	return &SealedRun{Result: res, Mock: mock, Session: sess, Envs: runner.Envs()}
}

func or[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// openGateway starts a gateway whose provider named provider is the mock,
// with RealKey, and opens a session.
func openGateway(t *testing.T, provider, mockURL string) *gateway.Session {
	t.Helper()
	p, ok := gateway.ProviderNamed(provider, mockURL, RealKey)
	if !ok {
		t.Fatalf("the gateway has no provider %q", provider)
	}
	dir, err := os.MkdirTemp("", "gw") // short: a socket path is at most 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil)) // the refusals are asserted, not logged
	g, err := gateway.New(gateway.Options{Providers: []gateway.Provider{p}, Dir: dir, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	s, err := g.Open("sealed-test-run")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// FreePort is a loopback port free a moment ago.
func FreePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// Prefixed runs Spec.Prefix + Spec.Argv on the host (which refuses a
// Prefix), as the image runner runs a sealed container's command, and keeps
// the environment of every run (Envs).
type Prefixed struct {
	Inner *HomeRunner
	mu    sync.Mutex
	seen  []map[string]string
}

func (p *Prefixed) Name() string { return p.Inner.Name() }

func (p *Prefixed) Run(ctx context.Context, spec sandbox.Spec) (*sandbox.Result, error) {
	p.mu.Lock()
	p.seen = append(p.seen, spec.Env)
	p.mu.Unlock()
	spec.Argv = append(append([]string(nil), spec.Prefix...), spec.Argv...)
	spec.Prefix = nil
	return p.Inner.Run(ctx, spec)
}

// Envs are the environments of the runs so far, in order.
func (p *Prefixed) Envs() []map[string]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]map[string]string(nil), p.seen...)
}

func (r *SealedRun) checkAnswer(t *testing.T) {
	t.Helper()
	res := r.Result
	if res.Outcome != agents.OutcomeSucceeded || res.Text != SealedReply {
		t.Fatalf("outcome %s text %q, want succeeded with %q\nstdout: %s\nstderr: %s\nmock unhandled: %v",
			res.Outcome, res.Text, SealedReply, res.Stdout, res.Stderr, r.Mock.Unhandled())
	}
}

// checkKey: the key reached the mock on every request, and never the CLI.
func (r *SealedRun) checkKey(t *testing.T) {
	t.Helper()
	reqs := r.Mock.Requests()
	if len(reqs) == 0 {
		t.Fatal("the mock model got no request")
	}
	for _, q := range reqs {
		if q.Key != RealKey {
			t.Errorf("the mock got %s %s with key %q, want the gateway's", q.Method, q.Path, q.Key)
		}
	}
	if len(r.Envs) == 0 {
		t.Fatal("the CLI never ran")
	}
	token := r.Session.Token()
	for i, env := range r.Envs {
		sawToken := false
		for k, v := range env {
			if strings.Contains(v, RealKey) {
				t.Errorf("attempt %d: the CLI's environment holds the key in %s", i, k)
			}
			sawToken = sawToken || v == token
		}
		if !sawToken {
			t.Errorf("attempt %d: the run's token is not in the CLI's environment", i)
		}
	}
	for _, a := range r.Result.Attempts {
		if out := string(a.Stdout) + string(a.Stderr); strings.Contains(out, RealKey) {
			t.Errorf("the CLI printed the key")
		}
	}
}

// checkMetered: the gateway forwarded every request the mock saw and
// nothing else, and counted the mock's usage.
func (r *SealedRun) checkMetered(t *testing.T) {
	t.Helper()
	n := int64(len(r.Mock.Requests()) + len(r.Mock.Unhandled()))
	want := gateway.Usage{Requests: n, InputTokens: 10 * n, OutputTokens: n}
	if u := r.Session.Usage(); u != want {
		t.Errorf("the gateway metered %+v, want %+v (the mock answers 10 input and 1 output tokens a request)", u, want)
	}
	if u := r.Mock.Unhandled(); len(u) != 0 {
		t.Errorf("the mock did not know %v", u)
	}
}

// checkRefused: the injected command ran, and its request to exfil.example
// was refused and recorded; the model saw the refusal, not the key.
func (r *SealedRun) checkRefused(t *testing.T) {
	t.Helper()
	refused := r.Session.Refused()
	out := ""
	for _, q := range r.Mock.Requests() {
		out += q.ToolOutput
	}
	if len(refused) == 0 || refused[0].Host != "exfil.example" || refused[0].Method != "POST" || refused[0].Path != "/steal" {
		t.Fatalf("refusals %v, want the POST to exfil.example/steal; the shell call's output: %q", refused, out)
	}
	if !strings.Contains(out, "403") || !strings.Contains(out, "exfil.example is not an allowed destination") {
		t.Errorf("the shell call's output the model saw: %q, want the gateway's 403", out)
	}
	if strings.Contains(out, RealKey) {
		t.Error("the shell call's output holds the key")
	}
	t.Logf("recorded on the run: %s", fmt.Sprint(refused))
}
