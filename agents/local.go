package agents

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/alchemic-studio/alfred/sandbox"
)

// Mode is how a local CLI is invoked for one attempt.
type Mode string

// Modes.
const (
	// ModeNone: no SessionRef. The argv must be exactly what the adapter
	// runs when the session feature does not apply (no session flags, and
	// nothing that disables the CLI's own persistence either).
	ModeNone Mode = "none"
	// ModeFresh: start a new session, labelled with the session name where
	// the CLI has a label, with a random id where the CLI accepts one
	// (Descriptor.TakesSessionID).
	ModeFresh Mode = "fresh"
	// ModeResume: continue the session Invocation.SessionID.
	ModeResume Mode = "resume"
)

// Invocation is everything a CLI needs to build one attempt's argv.
type Invocation struct {
	Mode     Mode
	Prompt   string // identical in every mode; one argv element, verbatim, unless Descriptor.PromptOnStdin
	Phase    Phase
	Provider string
	Model    string // empty: the CLI's default, add no model flag
	Workdir  string // the sandbox working directory (Request.Sandbox.Workdir)
	// SessionName is the session label (fresh and resume; empty in ModeNone).
	SessionName string
	// SessionID is, in ModeFresh, a random UUID when Descriptor.TakesSessionID
	// (empty when the CLI picks its own), and in ModeResume the native id to resume.
	SessionID string
	// Env is the environment the attempt runs with (the allowlisted offer
	// plus FixedEnv), for a CLI that takes a setting only as a flag (codex
	// reads no OPENAI_BASE_URL). Read only; nil when argv is built without
	// running (golden tests). Never copy a secret from it into argv, which
	// shows in process lists, logs and docker inspect.
	Env map[string]string
}

// Output is what a CLI read from one finished process.
type Output struct {
	// Succeeded is true when the CLI did its job: it exited normally and
	// reported no error (check the JSON too: some CLIs exit 0 on API errors).
	Succeeded bool
	// Text is the final answer, or the error the CLI reported.
	Text string
	// NativeSessionID is the session id the CLI reported (JSON field or
	// event), empty when it printed none.
	NativeSessionID string
	InputTokens     int64
	OutputTokens    int64
	CostUSD         float64
}

// CLI is what a per-CLI package supplies; NewLocal turns it into an Adapter
// that runs the shared local-agent flow. Methods must be pure functions of
// their arguments (no I/O): the flow does all running through the Runner.
// Everything the CLIs share is data in the Descriptor; the methods are only
// what differs from one CLI to the next.
//
// To add a CLI, write a package agents/<name> with a type implementing CLI
// (see agents/fake for a complete worked example, agents/claudecode and
// agents/codex for real ones) and a constructor New() (*agents.Local, error)
// that calls agents.NewLocal. Then add, with agents/internal/clitest:
//   - golden argv for none/fresh/resume per phase kind, with the verified
//     range and state path (clitest.GoldenJSON, testdata/golden/argv.json);
//   - recorded real outputs in testdata/ (<name>.stdout/.stderr/.rc and a
//     README saying which CLI version and command produced each) read with
//     clitest.Recorded, for Parse and for the classifier table (plus the
//     messages quoted in agents-cli-facts.md, via clitest.Result), checked
//     by clitest.CheckParse and clitest.CheckClassify;
//   - a row of the table in agents/clis_test.go: the version its version
//     command prints, a session id that does not exist, and the provider
//     and model of a sealed run. The shared tests then check the
//     descriptor, detect the real binary's version (agents.Detect on
//     clitest.Host), classify a real missing session, and run the CLI
//     sealed (clitest.Sealed, with its Descriptor.Sealed);
//   - its stream decoder (agents.StreamDecoder: each stdout line into the
//     steps the live page shows; ProgressReporter when the CLI prints only
//     at its end), checked on the recorded outputs (clitest.CheckStream,
//     testdata/stream/<name>.golden.json) and on malformed lines
//     (clitest.CheckBadLines); Parse reads the final result from the same
//     stream, and says why when there is none (agents.NoResult);
//   - real-binary tests from clitest.Real (ALFRED_AGENT_CLIS_BIN; fails, or
//     skips under -short, when missing), pointed at agents/mockllm:
//     clitest.RoundTrip (fresh, resume with the earlier messages, silent
//     fallback after the state folder is emptied) and clitest.CleanWorktree
//     (after real runs in a git working copy, git status holds only the
//     asked change, and every pattern of Capabilities.WorktreeFiles, what
//     the CLI writes there on its own, was really written). clitest.Host
//     plays /home/agent in a temporary folder emptied before each run, like
//     the container's tmpfs; HomeRunner.Setup writes configuration there
//     (as a mount would).
type CLI interface {
	// Descriptor is the CLI's declaration (see Descriptor). NewLocal reads
	// it once and validates it.
	Descriptor() Descriptor
	// Argv builds the command for one attempt. The prompt must appear the
	// same in every mode (or not at all, with Descriptor.PromptOnStdin).
	// Flags the CLI needs to run headless and non-interactively (output
	// format, approvals, trust) are the same in every mode too; ModeFresh
	// and ModeResume only add session flags.
	Argv(inv Invocation) []string
	// Parse reads a finished process (Outcome exited). It must not fail:
	// unreadable output is Output{Succeeded: false, Text: <what it could get>}.
	Parse(res *sandbox.Result) Output
	// Classify is called for a resume attempt that exited without
	// succeeding. It returns FallbackStateMissing, FallbackUnsupportedVersion
	// or FallbackRefused when the output proves the session could not be
	// resumed (e.g. "No conversation found with session ID"), and
	// FallbackNone for anything ambiguous (auth, network, crash, unknown):
	// an ambiguous failure keeps its outcome and is never retried fresh.
	Classify(res *sandbox.Result) FallbackReason
}

// BaseEnv names the variables every local CLI receives from
// Request.Sandbox.Env when the engine offers them.
var BaseEnv = []string{
	"HOME", "PATH", "USER", "LANG", "LC_ALL", "TERM", "TZ", "TMPDIR",
	"NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "SSL_CERT_DIR",
	"HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY", "https_proxy", "http_proxy", "no_proxy",
}

// Local is the Adapter for a local CLI: it runs the shared flow.
type Local struct {
	cli  CLI
	desc Descriptor
	caps Capabilities
	now  func() time.Time
}

// NewLocal checks the CLI's descriptor (Descriptor.Validate) and returns its
// adapter.
func NewLocal(cli CLI) (*Local, error) {
	d := cli.Descriptor()
	if err := d.Validate(); err != nil {
		return nil, err
	}
	return &Local{cli: cli, desc: d, caps: d.Capabilities(), now: time.Now}, nil
}

// ID implements Adapter.
func (l *Local) ID() string { return l.desc.ID }

// Capabilities implements Adapter.
func (l *Local) Capabilities() Capabilities { return l.caps }

// CLI returns the CLI the adapter runs (for detection).
func (l *Local) CLI() CLI { return l.cli }

// Descriptor returns the CLI's descriptor, as read at construction.
func (l *Local) Descriptor() Descriptor { return l.desc }

// Run implements Adapter with the shared flow:
//
//   - no SessionRef: one ModeNone attempt, no session mount, and the session
//     fields of the Result stay empty;
//   - SessionRef without ResumeID: one ModeFresh attempt; ResumeFallback is
//     the SessionRef's FreshReason;
//   - SessionRef with ResumeID: a ModeResume attempt. If it exits without
//     succeeding and Classify recognises why, one ModeFresh attempt follows
//     under the same name, with only what is left of Request.Timeout (none
//     left: Outcome timeout), and ResumeFallback is the reason. An
//     unrecognised failure keeps its outcome. A resume whose reported id is
//     not the one asked for did not resume (Resumed false,
//     ResumeFallback state_missing: the CLI started a new session itself).
//
// Every attempt runs with Spec.Timeout set to the time left, so the CLI's own
// retry loops end with our wall-clock budget.
func (l *Local) Run(ctx context.Context, req Request) (*Result, error) {
	if req.Runner == nil {
		return nil, fmt.Errorf("adapter %s: request has no runner", l.ID())
	}
	if req.Session != nil {
		if !l.caps.ResumableSessions {
			return nil, fmt.Errorf("adapter %s: got a session reference but does not resume sessions", l.ID())
		}
		if req.Session.Name == "" {
			return nil, fmt.Errorf("adapter %s: session reference without a name", l.ID())
		}
	}
	start := l.now()
	budget := func() (time.Duration, bool) {
		if req.Timeout <= 0 {
			return 0, true
		}
		left := req.Timeout - l.now().Sub(start)
		return left, left > 0
	}
	run := func(inv Invocation) (Attempt, Output, error) {
		left, ok := budget()
		if !ok {
			return Attempt{Mode: inv.Mode, Outcome: OutcomeTimeout}, Output{}, nil
		}
		return l.attempt(ctx, req, inv, left)
	}
	inv := Invocation{
		Mode: ModeNone, Prompt: req.Prompt, Phase: req.Phase,
		Provider: req.Provider, Model: req.Model, Workdir: req.Sandbox.Workdir,
	}

	if req.Session == nil {
		a, out, err := run(inv)
		if err != nil {
			return nil, err
		}
		return l.result([]Attempt{a}, out, start), nil
	}

	inv.SessionName = req.Session.Name
	fresh := func() (Attempt, Output, error) {
		f := inv
		f.Mode = ModeFresh
		f.SessionID = l.desc.NewSessionID()
		return run(f)
	}

	if req.Session.ResumeID == "" {
		a, out, err := fresh()
		if err != nil {
			return nil, err
		}
		res := l.result([]Attempt{a}, out, start)
		res.NativeSessionID = out.NativeSessionID
		res.ResumeFallback = req.Session.FreshReason
		return res, nil
	}

	r := inv
	r.Mode = ModeResume
	r.SessionID = req.Session.ResumeID
	a, out, err := run(r)
	if err != nil {
		return nil, err
	}
	if a.Fallback == FallbackNone {
		res := l.result([]Attempt{a}, out, start)
		res.NativeSessionID = out.NativeSessionID
		switch {
		case out.NativeSessionID == req.Session.ResumeID:
			res.Resumed = true
		case out.NativeSessionID != "":
			// The CLI silently started another session.
			res.ResumeFallback = FallbackStateMissing
		}
		return res, nil
	}

	attempts := []Attempt{a}
	b, out, err := fresh()
	if err != nil {
		return nil, err
	}
	attempts = append(attempts, b)
	res := l.result(attempts, out, start)
	res.NativeSessionID = out.NativeSessionID
	res.ResumeFallback = a.Fallback
	return res, nil
}

// attempt runs one process with the given time budget (0: none).
func (l *Local) attempt(ctx context.Context, req Request, inv Invocation, timeout time.Duration) (Attempt, Output, error) {
	spec := req.Sandbox
	spec.Env = l.desc.env(req.Sandbox.Env)
	inv.Env = spec.Env
	spec.Argv = l.cli.Argv(inv)
	spec.Timeout = timeout
	spec.Stdin = nil
	if l.desc.PromptOnStdin {
		spec.Stdin = strings.NewReader(inv.Prompt)
	}
	spec.Session = nil
	if inv.Mode != ModeNone && req.Session.HostStateDir != "" {
		spec.Session = &sandbox.Mount{Host: req.Session.HostStateDir, Container: l.caps.SessionStatePath}
	}
	raw, err := req.Runner.Run(ctx, spec)
	if err != nil {
		return Attempt{}, Output{}, fmt.Errorf("adapter %s: run %s attempt: %w", l.ID(), inv.Mode, err)
	}
	a := Attempt{
		Mode: inv.Mode, ExitCode: raw.ExitCode,
		Stdout: raw.Stdout, Stderr: raw.Stderr, Duration: raw.Duration,
	}
	var out Output
	switch raw.Outcome {
	case sandbox.OutcomeTimeout:
		a.Outcome = OutcomeTimeout
	case sandbox.OutcomeCanceled:
		a.Outcome = OutcomeCanceled
	case sandbox.OutcomeExited:
		out = l.cli.Parse(raw)
		a.Outcome = OutcomeFailed
		if out.Succeeded {
			a.Outcome = OutcomeSucceeded
		} else if inv.Mode == ModeResume {
			a.Fallback = l.cli.Classify(raw)
		}
	default:
		return Attempt{}, Output{}, fmt.Errorf("adapter %s: runner returned unknown outcome %q", l.ID(), raw.Outcome)
	}
	return a, out, nil
}

// result builds the Result from the attempts and the last one's output.
func (l *Local) result(attempts []Attempt, out Output, start time.Time) *Result {
	last := attempts[len(attempts)-1]
	return &Result{
		Outcome: last.Outcome, Text: out.Text,
		InputTokens: out.InputTokens, OutputTokens: out.OutputTokens, CostUSD: out.CostUSD,
		Stdout: last.Stdout, Stderr: last.Stderr, ExitCode: last.ExitCode,
		Attempts: attempts, Duration: l.now().Sub(start),
	}
}

// ErrNoVersion is returned by version parsers that found no version.
var ErrNoVersion = errors.New("no version in output")
