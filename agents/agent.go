package agents

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/alchemic-studio/alfred/sandbox"
)

// AgentHome is HOME inside the sandbox. A resumable adapter's session state
// path sits under it, so that the engine can bind-mount one per-mailbox folder
// there without touching anything else in the (tmpfs) home.
const AgentHome = "/home/agent"

// Adapter is one way to talk to a model: a local agent CLI run in a sandbox,
// the HTTP API adapter, or the fake adapter for tests.
//
// Run performs one invocation (one llm_session record). It returns an error
// only when the invocation could not be attempted at all (invalid request,
// sandbox set-up failure); a model or CLI failure, a timeout or a
// cancellation is a Result with the matching Outcome.
type Adapter interface {
	// ID is the adapter_id stored in llm_session records and used as the
	// key of credential mounts and session state folders ("claude-code",
	// "codex", "opencode", "copilot", "gemini", "grok", "api", "fake").
	ID() string
	Capabilities() Capabilities
	Run(ctx context.Context, req Request) (*Result, error)
}

// Kind says where an adapter's model runs.
type Kind string

// Kinds.
const (
	KindLocal Kind = "local" // a CLI run in a sandbox; can edit the worktree
	KindAPI   Kind = "api"   // an HTTP LLM API; text only (analysis, answer)
)

// Capabilities is what an adapter declares about itself at construction.
type Capabilities struct {
	Kind Kind
	// ResumableSessions says the adapter can continue a named session
	// across runs. The engine also requires the detected CLI version to be
	// inside the adapter's verified range before it passes a SessionRef.
	ResumableSessions bool
	// SessionStatePath is the absolute path inside the sandbox where the CLI
	// keeps its session state (e.g. /home/agent/.claude/projects). The engine
	// bind-mounts the mailbox's state folder there. It must be under
	// AgentHome when ResumableSessions is set, must not be AgentHome itself,
	// and must not contain credentials (choose the narrowest subpath).
	// Empty when not resumable.
	SessionStatePath string
	// WorktreeFiles are gitignore patterns (relative to the worktree root) of
	// the files the CLI writes into its working directory that are not the
	// change it was asked for: its own configuration, session or cache
	// files. The engine adds them to the working copy's .git/info/exclude
	// before the run, so committing the change (git add --all) leaves them
	// out; the project's .gitignore is not touched. Only paths a real run
	// was seen writing belong here.
	WorktreeFiles []string
}

// Validate reports whether the capabilities are coherent. Constructors of
// adapters call it and fail with its error.
func (c Capabilities) Validate() error {
	switch c.Kind {
	case KindLocal, KindAPI:
	default:
		return fmt.Errorf("capabilities: unknown kind %q", c.Kind)
	}
	if err := c.validateWorktreeFiles(); err != nil {
		return err
	}
	if !c.ResumableSessions {
		if c.SessionStatePath != "" {
			return fmt.Errorf("capabilities: session state path %q set on a non-resumable adapter", c.SessionStatePath)
		}
		return nil
	}
	if c.Kind != KindLocal {
		return errors.New("capabilities: only local adapters can resume sessions")
	}
	p := c.SessionStatePath
	if p == "" || !path.IsAbs(p) || path.Clean(p) != p {
		return fmt.Errorf("capabilities: session state path %q must be a clean absolute path", p)
	}
	if !strings.HasPrefix(p, AgentHome+"/") {
		return fmt.Errorf("capabilities: session state path %q must sit under %s", p, AgentHome)
	}
	return nil
}

// validateWorktreeFiles: only a local CLI runs in the worktree, and each
// pattern is one plain exclude line (not empty, no line break, no leading or
// trailing space, not a comment or a negation).
func (c Capabilities) validateWorktreeFiles() error {
	if len(c.WorktreeFiles) > 0 && c.Kind != KindLocal {
		return errors.New("capabilities: only local adapters write worktree files")
	}
	for _, p := range c.WorktreeFiles {
		if p == "" || strings.TrimSpace(p) != p || strings.ContainsAny(p, "\r\n") ||
			strings.HasPrefix(p, "#") || strings.HasPrefix(p, "!") {
			return fmt.Errorf("capabilities: worktree file pattern %q is not one plain exclude line", p)
		}
	}
	return nil
}

// Phase is the kind of work a run does.
type Phase string

// Phases.
const (
	PhaseAnalysis           Phase = "analysis"
	PhaseDevelopment        Phase = "development"
	PhaseCIFix              Phase = "ci_fix"
	PhaseReviewFix          Phase = "review_fix"
	PhaseConflictResolution Phase = "conflict_resolution"
	PhaseAnswer             Phase = "answer"
)

// Phases lists every phase, in the order an issue usually meets them.
func Phases() []Phase {
	return []Phase{PhaseAnalysis, PhaseDevelopment, PhaseCIFix, PhaseReviewFix, PhaseConflictResolution, PhaseAnswer}
}

// TextOnly reports whether the phase only produces text (the API adapter can
// serve it; a local agent runs with a read-only worktree).
func (p Phase) TextOnly() bool { return p == PhaseAnalysis || p == PhaseAnswer }

// FallbackReason says why a session-enabled run did not resume.
type FallbackReason string

// Fallback reasons. no_prior_session, adapter_changed and resume_failed are
// set by the engine's session resolver (in SessionRef.FreshReason); the
// other three by the adapter when a resume attempt failed in a way it
// recognises.
const (
	FallbackNone               FallbackReason = ""
	FallbackNoPriorSession     FallbackReason = "no_prior_session"    // no earlier native id for this mailbox
	FallbackAdapterChanged     FallbackReason = "adapter_changed"     // earlier id belongs to another adapter
	FallbackStateMissing       FallbackReason = "state_missing"       // the CLI found no state for the id
	FallbackUnsupportedVersion FallbackReason = "unsupported_version" // the CLI cannot resume this way
	FallbackRefused            FallbackReason = "refused"             // the CLI refused (id in use, invalid, …)
	// FallbackResumeFailed is the resolver's: the last resumes of the prior
	// id failed in ways the adapter did not recognise, twice in a row.
	FallbackResumeFailed FallbackReason = "resume_failed"
)

// SessionRef asks for a named session. Nil in a Request means the feature
// does not apply, and the run is exactly the run without it.
type SessionRef struct {
	// Name is the session name: the issue branch name. Set as the CLI's
	// session label where it has one. Never used to derive ids.
	Name string
	// ResumeID is the native session id of the previous run of the same
	// mailbox and adapter; empty means start fresh.
	ResumeID string
	// HostStateDir is the host folder holding this mailbox's state for this
	// adapter, bind-mounted read-write at Capabilities.SessionStatePath.
	HostStateDir string
	// FreshReason is why ResumeID is empty (no_prior_session or
	// adapter_changed); it is copied to Result.ResumeFallback.
	FreshReason FallbackReason
}

// Request is one adapter invocation.
type Request struct {
	// Prompt is the full phase context. The adapter passes it unchanged
	// whether it runs without a session, fresh or resumed.
	Prompt   string
	Phase    Phase
	Provider string // e.g. "anthropic", "openai"; informative for most CLIs
	Model    string // empty means the CLI's default
	// Timeout is the wall-clock budget of the whole invocation, a fallback
	// attempt included. Zero means no limit other than ctx.
	Timeout time.Duration
	// Sandbox is the base spec the engine prepared: image, uid/gid, workdir,
	// worktree and credential mounts, network, limits, and the environment
	// offered to the agent (HOME, PATH, API keys, base URLs…). A local
	// adapter copies it and sets Argv, Env (filtered through its allowlist),
	// Session and Timeout. Ignored by the API adapter.
	Sandbox sandbox.Spec
	// Runner runs the spec (image or host). Required by local adapters.
	Runner sandbox.Runner
	// Session is the named session, or nil.
	Session *SessionRef
}

// Outcome is how an invocation ended.
type Outcome string

// Outcomes.
const (
	OutcomeSucceeded Outcome = "succeeded"
	OutcomeFailed    Outcome = "failed"   // the CLI or API reported an error (auth, network, crash, …)
	OutcomeTimeout   Outcome = "timeout"  // the wall-clock budget ran out
	OutcomeCanceled  Outcome = "canceled" // ctx was canceled
)

// Result is what an invocation left. It maps one-to-one onto an llm_session
// record plus the run log.
type Result struct {
	Outcome Outcome
	// Text is the final answer (the CLI's result text, or an error message
	// the CLI reported when Outcome is failed).
	Text string
	// Token counts and cost, where reported; zero otherwise.
	InputTokens  int64
	OutputTokens int64
	CostUSD      float64

	// NativeSessionID is the CLI's own id for the session this run wrote to,
	// as reported by the CLI. Empty without a SessionRef (even if the CLI
	// printed one) and when the CLI reported none.
	NativeSessionID string
	// Resumed is true only when the run continued SessionRef.ResumeID and
	// the CLI echoed that same id.
	Resumed bool
	// ResumeFallback says why a session-enabled run is not Resumed:
	// SessionRef.FreshReason for a fresh start, or the adapter's reason after
	// a failed resume. Empty when Resumed or without a SessionRef.
	ResumeFallback FallbackReason

	// Stdout and Stderr of the attempt that produced this result, for the
	// run log. Attempts lists every attempt in order (two after a fallback).
	Stdout   []byte
	Stderr   []byte
	ExitCode int
	Attempts []Attempt
	Duration time.Duration
}

// Attempt is one process run inside an invocation.
type Attempt struct {
	Mode     Mode
	Outcome  Outcome
	ExitCode int
	Stdout   []byte
	Stderr   []byte
	Duration time.Duration
	// Fallback is set on a failed resume attempt the adapter recognised.
	Fallback FallbackReason
}
