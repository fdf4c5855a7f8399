// Package codex owns the OpenAI Codex CLI adapter (npm @openai/codex,
// executable `codex`), verified against 0.171.0 run here and the facts in
// agents-cli-facts.md (bisected down to 0.117.0).
//
// Command lines (headless, JSONL events on stdout):
//
//	none:   codex exec --json --skip-git-repo-check <sandbox flags> [-m M] -
//	fresh:  the same (codex exec can neither take an id nor set a name)
//	resume: codex exec --json --skip-git-repo-check <sandbox flags> [-m M] resume <thread id> -
//
// "-" reads the prompt from standard input, in every mode (verified with a
// 200 KB prompt, beyond the 128 KiB limit of one argv element).
//
// Every flag sits before `resume`: exec-only flags (-s, -C, …) are refused
// after it, and the rest are accepted on both sides (verified: -m before
// `resume` still selects the model).
//
// The native id is `thread_id` of the first event, {"type":"thread.started"};
// a resume echoes the resumed id. Sessions are rollout files in
// $CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl plus SQLite
// indexes in $CODEX_HOME; on 0.171.0 the rollout files alone are enough to
// resume (verified: with every *.sqlite deleted the resume loaded the
// history), so the session state path is /home/agent/.codex/sessions and
// auth.json / config.toml stay outside it.
//
// A missing thread is rc 1, no event on stdout and `no rollout found for
// thread id <id>` on stderr. Auth and network errors come as `error` and
// `turn.failed` events after thread.started: ambiguous. Before 0.117.0 an
// unknown id silently started a new thread: the echo check catches that.
//
// Token counts are those of turn.completed; on a resumed thread codex 0.171
// reports the thread's running totals there (10, 20, 30 input tokens over
// three runs against a mock answering 10 per request), not the run's own.
package codex

import (
	"strings"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/sandbox"
)

// ID is the adapter id.
const ID = "codex"

// Executable is the CLI's command name.
const Executable = "codex"

// SessionStatePath holds the rollout files and nothing else.
const SessionStatePath = agents.AgentHome + "/.codex/sessions"

// VerifiedRange: a hard error for an unknown resume id only from 0.117.0;
// verified up to 0.171.0.
const VerifiedRange = ">=0.117.0, <=0.171.0"

// CLI implements agents.CLI for Codex.
type CLI struct{}

// New returns the Codex adapter.
func New() (*agents.Local, error) { return agents.NewLocal(CLI{}) }

// Descriptor implements agents.CLI. The version is the first x.y.z of
// `codex --version` ("codex-cli 0.171.0"); the prompt goes to stdin; codex
// picks its own thread id. No WorktreeFiles: real runs in a git working copy
// (TestRealWorktreeHoldsOnlyTheChange) leave nothing there but the change
// asked for. CODEX_HOME is left out of the allowlist on purpose: it would
// move the session store away from SessionStatePath.
func (CLI) Descriptor() agents.Descriptor {
	return agents.Descriptor{
		ID: ID, Executable: Executable, VerifiedRange: VerifiedRange,
		SessionStatePath: SessionStatePath,
		PromptOnStdin:    true,
		EnvAllowlist: []string{
			"OPENAI_API_KEY", "CODEX_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORGANIZATION", "OPENAI_PROJECT",
			"AZURE_OPENAI_API_KEY", "RUST_LOG",
		},
	}
}

// Argv implements agents.CLI. Phases that change the worktree bypass
// codex's own sandbox and approvals (the container is the sandbox, and
// codex's Landlock sandbox is not available inside it); text-only phases run
// its read-only sandbox.
func (CLI) Argv(inv agents.Invocation) []string {
	argv := []string{Executable, "exec", "--json", "--skip-git-repo-check"}
	if inv.Phase.TextOnly() {
		argv = append(argv, "--sandbox", "read-only")
	} else {
		argv = append(argv, "--dangerously-bypass-approvals-and-sandbox")
	}
	if inv.Model != "" {
		argv = append(argv, "--model", inv.Model)
	}
	if inv.Mode == agents.ModeResume {
		argv = append(argv, "resume", inv.SessionID)
	}
	return append(argv, "-")
}

type event struct {
	Type     string `json:"type"`
	ThreadID string `json:"thread_id"`
	Message  string `json:"message"`
	Item     struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"item"`
	Error struct {
		Message string `json:"message"`
	} `json:"error"`
	Usage struct {
		InputTokens       int64 `json:"input_tokens"`
		CachedInputTokens int64 `json:"cached_input_tokens"`
		OutputTokens      int64 `json:"output_tokens"`
	} `json:"usage"`
}

// Parse implements agents.CLI: success is rc 0 with a turn.completed and no
// turn.failed; the text is the last agent_message.
func (CLI) Parse(res *sandbox.Result) agents.Output {
	var out agents.Output
	var completed, failed bool
	var errText string
	agents.JSONLines(res.Stdout, func(e event) bool {
		switch e.Type {
		case "thread.started":
			if out.NativeSessionID == "" {
				out.NativeSessionID = e.ThreadID
			}
		case "item.completed":
			if e.Item.Type == "agent_message" {
				out.Text = e.Item.Text
			}
		case "turn.completed":
			completed = true
			out.InputTokens, out.OutputTokens = e.Usage.InputTokens, e.Usage.OutputTokens
		case "turn.failed":
			failed, errText = true, e.Error.Message
		case "error":
			errText = e.Message
		}
		return true
	})
	out.Succeeded = res.ExitCode == 0 && completed && !failed
	if !out.Succeeded {
		switch {
		case errText != "":
			out.Text = errText
		case out.Text == "":
			out.Text = lastErrorLine(res.Stderr)
		}
	}
	return out
}

// Classify implements agents.CLI: only a run that printed no thread.started
// (the thread was never opened) is looked at. Versions that silently start a
// new thread instead (before 0.117.0) are outside VerifiedRange, and the echo
// check catches them anyway.
func (CLI) Classify(res *sandbox.Result) agents.FallbackReason {
	started := false
	agents.JSONLines(res.Stdout, func(e event) bool {
		started = started || e.Type == "thread.started"
		return !started
	})
	if started {
		return agents.FallbackNone
	}
	if strings.Contains(string(res.Stderr), "no rollout found for thread id") {
		return agents.FallbackStateMissing
	}
	return agents.FallbackNone
}

// lastErrorLine is the last stderr line that is not a codex warning.
func lastErrorLine(stderr []byte) string {
	lines := strings.Split(strings.TrimSpace(string(stderr)), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" && !strings.HasPrefix(l, "WARNING:") {
			return l
		}
	}
	return ""
}
