// Package fake owns the fake adapter for engine tests, and is the worked
// example of a CLI package built on the shared local-agent flow
// (agents.NewLocal): the CLI type below implements agents.CLI exactly as a
// real CLI package does (a descriptor, argv per mode, output parser, failure
// classifier); only the process is simulated in-process instead of being a
// real binary.
//
// The simulated "alfred-fake-agent" prints one JSON object on stdout,
//
//	{"session_id":"<id>","result":"<text>","is_error":false,"usage":{"input_tokens":N,"output_tokens":M},"total_cost_usd":C}
//
// and on a resume it cannot serve it exits 1 with nothing on stdout and one of
// these lines on stderr (the classifier table maps them):
//
//	fake: no session found with id <id>         -> state_missing
//	fake: resume refused for <id>               -> refused
//	fake: resume is not supported by this build -> unsupported_version
package fake

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/gateway"
	"github.com/alchemic-studio/alfred/sandbox"
)

// ID is the fake adapter's id.
const ID = "fake"

// Executable is argv[0] of the simulated CLI.
const Executable = "alfred-fake-agent"

// SessionStatePath is where the fake CLI would keep its sessions.
const SessionStatePath = agents.AgentHome + "/.fake/sessions"

// Version is what the simulated CLI reports; VerifiedRange contains it.
const Version = "1.0.0"

// CLI implements agents.CLI for the simulated agent. It is stateless: a real
// CLI package's type usually is an empty struct or holds only options.
type CLI struct {
	resumable bool
	sealed    bool
}

var _ agents.CLI = CLI{}

// Descriptor implements agents.CLI: the version is the first x.y.z of
// `alfred-fake-agent --version`, the prompt is the last argv element, and
// the fake accepts a caller-chosen id, so a fresh session gets a random UUID.
func (c CLI) Descriptor() agents.Descriptor {
	d := agents.Descriptor{
		ID: ID, Executable: Executable, VerifiedRange: ">=1.0.0, <2.0.0",
		EnvAllowlist:   []string{"FAKE_API_KEY"},
		FixedEnv:       map[string]string{"FAKE_NO_UPDATE": "1"},
		TakesSessionID: true,
	}
	if c.resumable {
		d.SessionStatePath = SessionStatePath
	}
	if c.sealed {
		d.Sealed = Sealed // the variables it sets are among its Credentials
	}
	return d
}

// Argv implements agents.CLI. The headless flags and the prompt are the same
// in every mode; only the session flags differ.
func (CLI) Argv(inv agents.Invocation) []string {
	argv := []string{Executable, "--print", "--output-format", "json"}
	if inv.Model != "" {
		argv = append(argv, "--model", inv.Model)
	}
	switch inv.Mode {
	case agents.ModeFresh:
		argv = append(argv, "--session-id", inv.SessionID, "--name", inv.SessionName)
	case agents.ModeResume:
		argv = append(argv, "--resume", inv.SessionID)
	}
	return append(argv, "--", inv.Prompt)
}

type output struct {
	SessionID string `json:"session_id"`
	Result    string `json:"result"`
	IsError   bool   `json:"is_error"`
	Usage     struct {
		InputTokens  int64 `json:"input_tokens"`
		OutputTokens int64 `json:"output_tokens"`
	} `json:"usage"`
	CostUSD float64 `json:"total_cost_usd"`
}

// Parse implements agents.CLI.
func (CLI) Parse(res *sandbox.Result) agents.Output {
	var o output
	if err := json.Unmarshal(res.Stdout, &o); err != nil {
		return agents.Output{Text: strings.TrimSpace(string(res.Stderr))}
	}
	return agents.Output{
		Succeeded:       res.ExitCode == 0 && !o.IsError,
		Text:            o.Result,
		NativeSessionID: o.SessionID,
		InputTokens:     o.Usage.InputTokens,
		OutputTokens:    o.Usage.OutputTokens,
		CostUSD:         o.CostUSD,
	}
}

// Classify implements agents.CLI: only an exit 1 with an empty stdout and a
// known stderr line is a recognised resume failure.
func (CLI) Classify(res *sandbox.Result) agents.FallbackReason {
	if res.ExitCode != 1 || len(strings.TrimSpace(string(res.Stdout))) != 0 {
		return agents.FallbackNone
	}
	errText := string(res.Stderr)
	switch {
	case strings.Contains(errText, "fake: no session found with id"):
		return agents.FallbackStateMissing
	case strings.Contains(errText, "fake: resume refused for"):
		return agents.FallbackRefused
	case strings.Contains(errText, "fake: resume is not supported"):
		return agents.FallbackUnsupportedVersion
	}
	return agents.FallbackNone
}

// Sealed is how the fake runs behind the model gateway (Options.Sealed):
// as if it called Anthropic, at FAKE_BASE_URL with the run's token as
// FAKE_API_KEY, which the gateway takes over.
var Sealed = &agents.Sealed{
	Provider: gateway.NameAnthropic, BaseURLVar: "FAKE_BASE_URL", KeyVar: "FAKE_API_KEY",
	Credentials: []string{"FAKE_API_KEY", "FAKE_BASE_URL"},
}

// Options configure the fake adapter.
type Options struct {
	// ResumableSessions makes the adapter declare resumable sessions.
	ResumableSessions bool
	// Reply is the answer text; "ok" when empty.
	Reply string
	// Exec, when set, is run through the request's Runner before the
	// simulated answer (e.g. []string{"true"}), so engine benchmarks measure
	// a real agent start. Its outcome (timeout, canceled) is kept; its output
	// is replaced by the simulated one in the Result, while the Spec's Stdout
	// and Stderr receive both: the process's as it comes, then the simulated
	// one (so a test can make the agent print lines, then wait).
	Exec []string
	// Sealed makes the fake declare that it can run sealed (see Sealed).
	Sealed bool
}

// Adapter is the fake adapter. Safe for concurrent use.
type Adapter struct {
	*agents.Local
	opts Options

	mu       sync.Mutex
	requests []agents.Request
	specs    []sandbox.Spec
	next     []string // queued stderr lines for the next resume attempts
	failNext []string // queued ambiguous failures for the next attempts
}

// New returns a fake adapter.
func New(opts Options) (*Adapter, error) {
	l, err := agents.NewLocal(CLI{resumable: opts.ResumableSessions, sealed: opts.Sealed})
	if err != nil {
		return nil, err
	}
	if opts.Reply == "" {
		opts.Reply = "ok"
	}
	return &Adapter{Local: l, opts: opts}, nil
}

// Run implements agents.Adapter: it records the request and runs the shared
// flow against the simulated process. The request's Runner may be nil unless
// Options.Exec is set.
func (a *Adapter) Run(ctx context.Context, req agents.Request) (*agents.Result, error) {
	a.mu.Lock()
	a.requests = append(a.requests, req)
	a.mu.Unlock()
	req.Runner = &process{a: a, inner: req.Runner}
	return a.Local.Run(ctx, req)
}

// RefuseNextResume makes the next resume attempt fail with "refused".
func (a *Adapter) RefuseNextResume() { a.queue("fake: resume refused for %s") }

// MissNextResume makes the next resume attempt fail with "state_missing".
func (a *Adapter) MissNextResume() { a.queue("fake: no session found with id %s") }

// FailNext makes the next attempt (any mode) fail ambiguously with msg, the
// way an auth or network error does (not retried fresh).
func (a *Adapter) FailNext(msg string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.failNext = append(a.failNext, msg)
}

func (a *Adapter) queue(format string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.next = append(a.next, format)
}

// Requests returns the requests received so far, as received.
func (a *Adapter) Requests() []agents.Request {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.requests)
}

// Specs returns the sandbox specs of every attempt so far, in order.
func (a *Adapter) Specs() []sandbox.Spec {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.specs)
}

// process simulates alfred-fake-agent as a sandbox.Runner.
type process struct {
	a     *Adapter
	inner sandbox.Runner
}

func (p *process) Name() string {
	if p.inner != nil {
		return p.inner.Name()
	}
	return "fake"
}

func (p *process) Run(ctx context.Context, spec sandbox.Spec) (*sandbox.Result, error) {
	a := p.a
	a.mu.Lock()
	a.specs = append(a.specs, spec)
	a.mu.Unlock()

	res := &sandbox.Result{Outcome: sandbox.OutcomeExited, Started: time.Now()}
	if len(a.opts.Exec) > 0 {
		if p.inner == nil {
			return nil, fmt.Errorf("fake: Options.Exec set but the request has no runner")
		}
		s := spec
		s.Argv = a.opts.Exec
		r, err := p.inner.Run(ctx, s)
		if err != nil {
			return nil, fmt.Errorf("fake: exec %v: %w", a.opts.Exec, err)
		}
		if r.Outcome != sandbox.OutcomeExited {
			return r, nil
		}
		res.Started, res.Duration = r.Started, r.Duration
	} else if err := ctx.Err(); err != nil {
		res.Outcome = sandbox.OutcomeCanceled
		return res, nil
	}

	id, resume := flagValue(spec.Argv, "--resume")
	if !resume {
		id, _ = flagValue(spec.Argv, "--session-id")
	}
	a.mu.Lock()
	var refusal, failure string
	if resume && len(a.next) > 0 {
		refusal, a.next = a.next[0], a.next[1:]
	} else if len(a.failNext) > 0 {
		failure, a.failNext = a.failNext[0], a.failNext[1:]
	}
	a.mu.Unlock()

	switch {
	case refusal != "":
		res.ExitCode = 1
		res.Stderr = []byte(fmt.Sprintf(refusal, id) + "\n")
	case failure != "":
		res.ExitCode = 1
		res.Stdout = mustJSON(map[string]any{"session_id": id, "result": failure, "is_error": true})
	default:
		var o output
		o.SessionID, o.Result = id, a.opts.Reply
		o.Usage.InputTokens, o.Usage.OutputTokens = int64(len(spec.Argv[len(spec.Argv)-1])), int64(len(a.opts.Reply))
		res.Stdout = mustJSON(o)
	}
	// The simulated output reaches the Spec's writers too, as a real
	// process's does (after Exec's own, which its runner sent there).
	forward(spec.Stdout, res.Stdout)
	forward(spec.Stderr, res.Stderr)
	return res, nil
}

// forward writes b to w, when both are set. A failing writer is the
// caller's: the Result keeps the output either way.
func forward(w io.Writer, b []byte) {
	if w != nil && len(b) > 0 {
		_, _ = w.Write(b)
	}
}

func flagValue(argv []string, flag string) (string, bool) {
	for i, s := range argv {
		if s == "--" {
			break
		}
		if s == flag && i+1 < len(argv) {
			return argv[i+1], true
		}
	}
	return "", false
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return append(b, '\n')
}
