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
// `resume` still selects the model). With OPENAI_BASE_URL in the
// environment (a sealed run's), two -c flags add a model provider at that
// URL (see Argv).
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
	"encoding/json"
	"strings"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/gateway"
	"github.com/alchemic-studio/alfred/sandbox"
)

// ID is the adapter id.
const ID = "codex"

// Executable is the CLI's command name.
const Executable = "codex"

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
//
// Sealed, codex calls OpenAI's Responses API at OPENAI_BASE_URL (the
// forwarder) with the run's token as OPENAI_API_KEY (a Bearer token): see
// Argv for how codex, which no longer reads OPENAI_BASE_URL, is given it.
func (CLI) Descriptor() agents.Descriptor {
	return agents.Descriptor{
		ID: ID, Executable: Executable,
		// A hard error for an unknown resume id only from 0.117.0; verified
		// up to 0.171.0.
		VerifiedRange: ">=0.117.0, <=0.171.0",
		// The rollout files and nothing else.
		SessionStatePath: agents.AgentHome + "/.codex/sessions",
		// The interactive `codex resume <id>` finds the rollout by its id.
		Takeover:      &agents.Takeover{Argv: []string{Executable, "resume", agents.TakeoverID}},
		PromptOnStdin: true,
		EnvAllowlist:  []string{"OPENAI_ORGANIZATION", "OPENAI_PROJECT", "RUST_LOG"},
		Sealed: &agents.Sealed{
			Provider: gateway.NameOpenAI, BaseURLVar: "OPENAI_BASE_URL", BaseURLPath: "/v1", KeyVar: "OPENAI_API_KEY",
			Credentials: []string{"OPENAI_API_KEY", "CODEX_API_KEY", "OPENAI_BASE_URL", "AZURE_OPENAI_API_KEY"},
		},
	}
}

// Argv implements agents.CLI. Phases that change the worktree bypass
// codex's own sandbox and approvals (the container is the sandbox, and
// codex's Landlock sandbox is not available inside it); text-only phases run
// its read-only sandbox.
//
// Codex 0.171 reads no OPENAI_BASE_URL (verified: it calls api.openai.com
// anyway). When the environment sets it, argv adds a model provider of its
// own at that URL, keyed by OPENAI_API_KEY, speaking Responses over HTTP
// (supports_websockets=false: the built-in provider first tries a
// WebSocket, whose frames the model gateway cannot meter).
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
	if u := inv.Env["OPENAI_BASE_URL"]; u != "" {
		argv = append(argv, "-c", "model_providers."+baseURLProvider+"={name=\"OPENAI_BASE_URL\",base_url="+tomlString(u)+
			",env_key=\"OPENAI_API_KEY\",wire_api=\"responses\",supports_websockets=false}",
			"-c", "model_provider=\""+baseURLProvider+"\"")
	}
	if inv.Mode == agents.ModeResume {
		argv = append(argv, "resume", inv.SessionID)
	}
	return append(argv, "-")
}

// baseURLProvider is the id of the model provider Argv adds for OPENAI_BASE_URL.
const baseURLProvider = "openai-base-url"

// tomlString quotes s as a TOML basic string (JSON's escapes are TOML's).
func tomlString(s string) string {
	b, _ := json.Marshal(s) // a string always encodes
	return string(b)
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
		if out.Text == "" { // nothing but warnings: say how it ended
			out.Text = agents.NoResult(&sandbox.Result{ExitCode: res.ExitCode, Stdout: res.Stdout})
		}
	}
	return out
}

// Classify implements agents.CLI: only a run that printed no thread.started
// (the thread was never opened) is looked at. Versions that silently start a
// new thread instead (before 0.117.0) are outside VerifiedRange, and the echo
// check catches them anyway.
func (CLI) Classify(res *sandbox.Result) agents.FallbackReason {
	if agents.AnyJSONLine(res.Stdout, func(e event) bool { return e.Type == "thread.started" }) {
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
