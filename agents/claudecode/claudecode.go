// Package claudecode owns the Claude Code adapter (npm @anthropic-ai/claude-code,
// executable `claude`), verified against 2.1.197 run here and the facts in
// agents-cli-facts.md (2.1.197 and 2.1.332).
//
// Command lines (headless, a stream of JSON events, stream.go):
//
//	none:   claude -p --output-format stream-json --verbose [--model M] [--permission-mode bypassPermissions]
//	fresh:  the same plus --session-id <random uuid> --name <session name>
//	resume: the same plus --resume <uuid>
//
// The prompt goes to standard input in every mode (verified with a 200 KB
// prompt, beyond the 128 KiB limit of one argv element).
//
// stream-json needs --verbose with -p. The native id is the `session_id`
// field of the stream's last event, the result (also of its first, the
// init); a resume keeps the id (no fork). Sessions live in ~/.claude/projects/<cwd slug>/<uuid>.jsonl,
// so the session state path is /home/agent/.claude/projects: credentials
// (~/.claude/.credentials.json, ~/.claude.json) stay outside it. Sessions are
// bound to the working directory on 2.1.197: keep Workdir the same across runs.
//
// A missing session is rc 1, `No conversation found with session ID: <id>`
// on stderr and, under stream-json, a lone result event of subtype
// error_during_execution carrying the same message in `errors`. Auth and
// network errors are rc 1 with an init, a synthetic assistant message and a
// result (`is_error: true`, subtype success) on stdout: ambiguous, never
// classified.
package claudecode

import (
	"strings"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/gateway"
	"github.com/alchemic-studio/alfred/sandbox"
)

// ID is the adapter id.
const ID = "claude-code"

// Executable is the CLI's command name.
const Executable = "claude"

// CLI implements agents.CLI for Claude Code.
type CLI struct{}

// New returns the Claude Code adapter.
func New() (*agents.Local, error) { return agents.NewLocal(CLI{}) }

// Descriptor implements agents.CLI. The version is the first x.y.z of
// `claude --version` ("2.1.197 (Claude Code)"); the prompt goes to stdin;
// Claude takes a caller-chosen UUID. No WorktreeFiles: real runs in a git
// working copy (TestRealWorktreeHoldsOnlyTheChange) leave nothing there but
// the change asked for.
//
// CLAUDE_CONFIG_DIR is left out of the allowlist on purpose: it would move
// the session store away from SessionStatePath. The fixed environment turns
// off self-update and telemetry, and tells the process it runs in a sandbox.
//
// Sealed, Claude Code calls Anthropic at ANTHROPIC_BASE_URL (the forwarder)
// with the run's token as ANTHROPIC_API_KEY (sent in x-api-key). The
// Anthropic credentials and endpoint of the offered environment stay with
// the gateway; Bedrock, Vertex and OAuth logins are not sealed.
func (CLI) Descriptor() agents.Descriptor {
	return agents.Descriptor{
		ID: ID, Executable: Executable,
		// --session-id/--resume <uuid> since 1.0.53, --name since 2.1.76,
		// -p --resume <title> since 2.1.101; verified up to 2.1.332.
		VerifiedRange: ">=2.1.101, <=2.1.332",
		// The session transcripts and nothing else.
		SessionStatePath: agents.AgentHome + "/.claude/projects",
		// Sessions are filed under the slug of the working directory: every
		// character but a letter or a digit becomes "-" (/workspace:
		// -workspace).
		Takeover: &agents.Takeover{Argv: []string{Executable, "--resume", agents.TakeoverID},
			PerDirectory: `$(pwd | sed 's/[^A-Za-z0-9]/-/g')`},
		PromptOnStdin: true, TakesSessionID: true,
		EnvAllowlist: []string{
			"ANTHROPIC_MODEL", "ANTHROPIC_SMALL_FAST_MODEL", "ANTHROPIC_DEFAULT_OPUS_MODEL",
			"ANTHROPIC_DEFAULT_SONNET_MODEL", "ANTHROPIC_DEFAULT_HAIKU_MODEL", "ANTHROPIC_CUSTOM_HEADERS",
			"CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "AWS_REGION", "AWS_ACCESS_KEY_ID",
			"AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_BEARER_TOKEN_BEDROCK",
			"ANTHROPIC_VERTEX_PROJECT_ID", "CLOUD_ML_REGION", "GOOGLE_APPLICATION_CREDENTIALS",
			"CLAUDE_CODE_MAX_RETRIES", "API_TIMEOUT_MS", "CLAUDE_CODE_MAX_OUTPUT_TOKENS",
		},
		FixedEnv: map[string]string{
			"DISABLE_AUTOUPDATER":                      "1",
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
			"IS_SANDBOX":                               "1",
		},
		Sealed: &agents.Sealed{
			Provider: gateway.NameAnthropic, BaseURLVar: "ANTHROPIC_BASE_URL", KeyVar: "ANTHROPIC_API_KEY",
			Credentials: []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "CLAUDE_CODE_OAUTH_TOKEN"},
		},
	}
}

// Argv implements agents.CLI. Phases that change the worktree run with
// bypassPermissions (the sandbox is the boundary; IS_SANDBOX=1 lets it run
// as root on a host runner); text-only phases keep the default permissions,
// under which -p denies every tool needing approval.
func (CLI) Argv(inv agents.Invocation) []string {
	argv := []string{Executable, "-p", "--output-format", "stream-json", "--verbose"}
	if inv.Model != "" {
		argv = append(argv, "--model", inv.Model)
	}
	if !inv.Phase.TextOnly() {
		argv = append(argv, "--permission-mode", "bypassPermissions")
	}
	switch inv.Mode {
	case agents.ModeFresh:
		argv = append(argv, "--session-id", inv.SessionID, "--name", inv.SessionName)
	case agents.ModeResume:
		argv = append(argv, "--resume", inv.SessionID)
	}
	return argv
}

// result is the stream's result event, its last.
type result struct {
	Type      string   `json:"type"`
	Subtype   string   `json:"subtype"`
	IsError   bool     `json:"is_error"`
	Result    string   `json:"result"`
	SessionID string   `json:"session_id"`
	CostUSD   float64  `json:"total_cost_usd"`
	Errors    []string `json:"errors"`
	Usage     struct {
		InputTokens              int64 `json:"input_tokens"`
		CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
		OutputTokens             int64 `json:"output_tokens"`
	} `json:"usage"`
}

// findResult returns the last object of type "result" on stdout.
func findResult(stdout []byte) (result, bool) {
	return agents.LastJSONLine(stdout, func(r result) bool { return r.Type == "result" })
}

// Parse implements agents.CLI from the stream's result event; without one
// (a crash, a refused flag), the text says why (agents.NoResult).
func (CLI) Parse(res *sandbox.Result) agents.Output {
	r, ok := findResult(res.Stdout)
	if !ok {
		return agents.Output{Text: agents.NoResult(res)}
	}
	text := r.Result
	if text == "" && len(r.Errors) > 0 {
		text = strings.Join(r.Errors, "\n")
	}
	if text == "" && r.IsError {
		text = "claude reported an error (" + r.Subtype + ") without a message"
	}
	return agents.Output{
		Succeeded:       res.ExitCode == 0 && !r.IsError,
		Text:            text,
		NativeSessionID: r.SessionID,
		InputTokens:     r.Usage.InputTokens + r.Usage.CacheCreationInputTokens + r.Usage.CacheReadInputTokens,
		OutputTokens:    r.Usage.OutputTokens,
		CostUSD:         r.CostUSD,
	}
}

// Classify implements agents.CLI. Only an answer with no model turn (an
// empty stdout, or a lone error_during_execution result) whose message says
// the session is missing is recognised. No unsupported_version
// case: versions without --resume/--session-id are outside VerifiedRange, so
// the engine never asks them to resume.
func (CLI) Classify(res *sandbox.Result) agents.FallbackReason {
	msg := string(res.Stderr)
	if r, ok := findResult(res.Stdout); ok {
		if !r.IsError || r.Subtype != "error_during_execution" {
			return agents.FallbackNone // the CLI got as far as the model: ambiguous
		}
		msg += "\n" + strings.Join(r.Errors, "\n")
	} else if len(strings.TrimSpace(string(res.Stdout))) != 0 {
		return agents.FallbackNone // output we cannot read: ambiguous
	}
	switch {
	case strings.Contains(msg, "No conversation found with session ID"):
		return agents.FallbackStateMissing
	case strings.Contains(msg, "--resume requires a valid session ID or session title"):
		return agents.FallbackStateMissing
	}
	return agents.FallbackNone
}
