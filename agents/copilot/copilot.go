// Package copilot owns the adapter for the GitHub Copilot CLI (npm
// @github/copilot): its argv per session mode, the output parser (JSONL
// events of `--output-format json`), the resume-failure classifier and where
// its sessions live.
//
// Facts this package relies on, checked against @github/copilot 1.0.102:
//
//   - No session: `copilot --allow-all-tools --output-format json [--model=m]`,
//     the prompt on stdin (read verbatim when stdin is not a terminal; no
//     128 KiB argv limit).
//   - Fresh: the same plus `--session-id=<uuid> --name=<name>`; the id is a
//     random UUID chosen by the adapter. --session-id is "create or
//     resume", so it is used only for fresh starts with a new UUID.
//   - Resume: the same plus `--resume=<uuid>`, which fails on an unknown id
//     from 1.0.49 on (up to 1.0.48 it silently created a session with that
//     id, which the echo check cannot catch). --session-id exists from
//     1.0.51: the verified range starts there.
//   - The last JSONL line is {"type":"result","sessionId":…,"exitCode":…}.
//   - Sessions live in ~/.copilot/session-state/<uuid>/ (no credentials:
//     those are in the keychain, ~/.copilot/config.json or the
//     environment). That folder is the SessionStatePath; a session resumes
//     from it alone (checked with the rest of ~/.copilot deleted).
//   - A missing session: exit 1, empty stdout, stderr "Error: No session,
//     task, or name matched '<id>'.", before any authentication.
//
// The real round trip (agents/internal/clitest) also passes with this argv
// on 1.0.55, the oldest build at or above 1.0.51 whose native binary the npm
// registry here serves (1.0.51–1.0.54 have none).
package copilot

import (
	"fmt"
	"strings"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/gateway"
	"github.com/alchemic-studio/alfred/sandbox"
)

// ID is the adapter id.
const ID = "copilot"

// Executable is argv[0].
const Executable = "copilot"

// CLI implements agents.CLI for the Copilot CLI.
type CLI struct{}

// New returns the Copilot adapter.
func New() (*agents.Local, error) { return agents.NewLocal(CLI{}) }

// Descriptor implements agents.CLI. The version is the first x.y.z of
// `copilot --version` ("GitHub Copilot CLI 1.0.102."); the prompt goes to
// stdin; a fresh session gets a random UUID for --session-id. No
// WorktreeFiles: real runs in a git working copy
// (TestRealWorktreeHoldsOnlyTheChange) leave nothing there but the change
// asked for. The allowlist is GitHub authentication and BYOK provider
// settings; the fixed environment never downloads and runs another version.
//
// Sealed, Copilot runs one of two ways (agents.Sealed), its GitHub sign-in
// first when the gateway holds a GitHub token (COPILOT_GITHUB_TOKEN,
// GH_TOKEN or GITHUB_TOKEN offered), else a BYOK provider when it holds an
// OpenAI key; with both, the sign-in wins (an OpenAI key is usually there
// for Codex or OpenCode, a GitHub token only for Copilot):
//
//   - Its GitHub sign-in: the gateway is its HTTPS_PROXY (the run's token
//     as the proxy password) and terminates the TLS of api.github.com and
//     the Copilot API hosts with its own certificate authority, which the
//     CLI trusts through NODE_EXTRA_CA_CERTS (mounted read-only; its key
//     stays in the bot). COPILOT_GITHUB_TOKEN is the run's token behind
//     github_pat_ (the CLI refuses a key of another shape); the gateway
//     swaps in the real token. Watched with 1.0.102 against a TLS server
//     playing GitHub: GET /copilot_internal/user (Bearer), whose
//     endpoints.api names the Copilot API host; the organisation's
//     managed settings and customizations; GET /models and POST
//     /responses there, with the GitHub token itself as Bearer (no
//     session token is fetched: /copilot_internal/v2/token is never
//     called, and the gateway would refuse it). Behind the gateway the
//     adapter adds --disable-builtin-mcps (the GitHub MCP server at the
//     Copilot API host's /mcp/readonly would reach GitHub's API with the
//     real token) and --disable-client-telemetry (its telemetry host is
//     none of the provider's); the second is of 1.0.100 and later.
//   - BYOK: offline, a provider of type openai (chat completions) at the
//     forwarder, the run's token as its API key: a sealed run names its
//     model (--model).
//
// Neither passes on a GitHub token or a BYOK key: a sealed container holds
// no secret.
func (CLI) Descriptor() agents.Descriptor {
	return agents.Descriptor{
		ID: ID, Executable: Executable,
		// --session-id from 1.0.51 (a strict --resume from 1.0.49); 1.0.102
		// is the pinned version the tests run.
		VerifiedRange: ">=1.0.51, <=1.0.102",
		// Copilot's sessions, and no credentials.
		SessionStatePath: agents.AgentHome + "/.copilot/session-state",
		Takeover:         &agents.Takeover{Argv: []string{Executable, "--resume=" + agents.TakeoverID}},
		PromptOnStdin:    true, TakesSessionID: true,
		EnvAllowlist: []string{
			"GH_HOST", "COPILOT_GH_HOST", "COPILOT_MODEL", "COPILOT_OFFLINE", "COPILOT_PROVIDER_TYPE",
			"COPILOT_PROVIDER_WIRE_API", "COPILOT_PROVIDER_AZURE_API_VERSION", "COPILOT_PROVIDER_MODEL_ID",
			"COPILOT_PROVIDER_WIRE_MODEL", "COPILOT_PROVIDER_MAX_PROMPT_TOKENS", "COPILOT_PROVIDER_MAX_OUTPUT_TOKENS",
		},
		FixedEnv: map[string]string{"COPILOT_AUTO_UPDATE": "false", "NO_COLOR": "1"},
		Sealed: &agents.Sealed{
			Provider: gateway.NameOpenAI, BaseURLVar: "COPILOT_PROVIDER_BASE_URL", BaseURLPath: "/v1", KeyVar: "COPILOT_PROVIDER_API_KEY",
			Set:         map[string]string{"COPILOT_OFFLINE": "true", "COPILOT_PROVIDER_TYPE": "openai"},
			Note:        "for Copilot's BYOK provider",
			Credentials: credentials,
			Preferred: &agents.Sealed{
				Provider: gateway.NameCopilot, Proxy: true, BaseURLVar: "HTTPS_PROXY", CAVar: "NODE_EXTRA_CA_CERTS",
				KeyVar: "COPILOT_GITHUB_TOKEN", TokenPrefix: gateway.GitHubTokenPrefix,
				Set:         map[string]string{"NO_PROXY": "127.0.0.1,localhost"},
				Note:        "for Copilot's GitHub sign-in: a fine-grained PAT or an OAuth token, not a classic ghp_ one",
				Credentials: credentials,
			},
		},
	}
}

// credentials are the variables of Copilot's credentials and endpoint,
// which the gateway takes over in either sealed way.
var credentials = []string{"COPILOT_PROVIDER_BASE_URL", "COPILOT_PROVIDER_API_KEY", "COPILOT_PROVIDER_BEARER_TOKEN",
	"COPILOT_PROVIDER_HEADERS", "COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN"}

// Argv implements agents.CLI. Values are joined with "=" so that a name
// starting with a dash stays a value. The prompt is on stdin. Signed in
// behind the gateway (its GitHub token is a run's token), the built-in MCP
// servers and the client telemetry are off.
func (CLI) Argv(inv agents.Invocation) []string {
	argv := []string{Executable, "--allow-all-tools", "--output-format", "json"}
	if gateway.IsRunToken(inv.Env["COPILOT_GITHUB_TOKEN"]) {
		argv = append(argv, "--disable-builtin-mcps", "--disable-client-telemetry")
	}
	if inv.Model != "" {
		argv = append(argv, "--model="+inv.Model)
	}
	switch inv.Mode {
	case agents.ModeFresh:
		argv = append(argv, "--session-id="+inv.SessionID, "--name="+inv.SessionName)
	case agents.ModeResume:
		argv = append(argv, "--resume="+inv.SessionID)
	}
	return argv
}

type event struct {
	Type      string `json:"type"`
	SessionID string `json:"sessionId"`
	ExitCode  *int   `json:"exitCode"`
	Data      struct {
		Content      string `json:"content"`
		Message      string `json:"message"`
		OutputTokens int64  `json:"outputTokens"`
	} `json:"data"`
}

// Parse implements agents.CLI. A run succeeded when it exited 0 and its
// final result event says exitCode 0. The text is the last assistant
// message, or the last session error.
func (CLI) Parse(res *sandbox.Result) agents.Output {
	var out agents.Output
	var errText string
	resultOK := false
	var resultCode *int
	agents.JSONLines(res.Stdout, func(e event) bool {
		switch e.Type {
		case "assistant.message":
			if e.Data.Content != "" {
				out.Text = e.Data.Content
			}
			out.OutputTokens += e.Data.OutputTokens
		case "session.error":
			errText = e.Data.Message
		case "result":
			out.NativeSessionID = e.SessionID
			resultOK = e.ExitCode != nil && *e.ExitCode == 0
			resultCode = e.ExitCode
		}
		return true
	})
	switch {
	case res.ExitCode == 0 && resultOK && errText == "":
		out.Succeeded = true
	case errText != "":
		out.Text = errText
	default:
		if s := firstError(res.Stderr); s != "" {
			out.Text = s
		} else if out.Text == "" && resultCode != nil {
			out.Text = fmt.Sprintf("copilot ended with exit code %d and no error message", *resultCode)
		} else if out.Text == "" {
			out.Text = agents.NoResult(&sandbox.Result{ExitCode: res.ExitCode, Stdout: res.Stdout})
		}
	}
	return out
}

// Classify implements agents.CLI. Only a failure with no result event (the
// session lookup fails before any model call) and a first stderr line that
// --resume was seen printing is recognised. Messages only a fresh start can
// print (a non-UUID --session-id, --session-id unknown before 1.0.51) are
// never classified: Classify only sees resume attempts.
func (CLI) Classify(res *sandbox.Result) agents.FallbackReason {
	if agents.AnyJSONLine(res.Stdout, func(e event) bool { return e.Type == "result" }) {
		return agents.FallbackNone
	}
	switch line := firstError(res.Stderr); {
	case strings.HasPrefix(line, "Error: No session, task, or name matched"):
		return agents.FallbackStateMissing
	case strings.HasPrefix(line, "Error: Multiple sessions match the name"):
		return agents.FallbackRefused
	}
	return agents.FallbackNone
}

// extractionNotice starts the line a first run in a fresh home prints on
// stderr before anything else ("Package extraction took 5034ms"): the
// container's home is always fresh.
const extractionNotice = "Package extraction took "

// firstError is the first stderr line that is not the extraction notice.
func firstError(stderr []byte) string {
	lines := strings.Split(string(agents.StripANSI(stderr)), "\n")
	for i, l := range lines {
		if !strings.HasPrefix(strings.TrimSpace(l), extractionNotice) {
			return agents.FirstLine([]byte(strings.Join(lines[i:], "\n")))
		}
	}
	return ""
}
