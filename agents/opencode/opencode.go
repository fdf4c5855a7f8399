// Package opencode owns the adapter for the OpenCode CLI (npm opencode-ai):
// its argv per session mode, the output parser (JSON events of
// `opencode run --format json`), the resume-failure classifier and where its
// sessions live.
//
// Facts this package relies on, checked against opencode-ai 1.18.33:
//
//   - No session: `opencode run --format json --dangerously-skip-permissions [--model provider/model]`,
//     the prompt on stdin. `opencode run` reads stdin when it is not a
//     terminal; a prompt passed as argv is not verbatim (OpenCode wraps every
//     argument holding a space in quotes and escapes its quotes).
//     --dangerously-skip-permissions auto-approves tool permissions on every
//     verified version: 1.15.0 has only this spelling (its yargs rejects the
//     later --auto), 1.18.33 keeps it as a hidden alias of --auto.
//   - Fresh: the same plus `--title <name>`. OpenCode picks the id itself
//     (ses_…); it cannot be chosen, so NewSessionID returns "".
//   - Resume: the same plus `--session <ses_id>`. The history is loaded.
//   - Every JSON event carries the top-level "sessionID".
//   - Sessions live in one SQLite database. By default it sits beside the
//     credentials (~/.local/share/opencode/{opencode.db,auth.json}), so the
//     adapter moves it with OPENCODE_DB to ~/.local/state/opencode/opencode.db.
//     OPENCODE_DB is relative to the data folder, hence "../../state/…"; the
//     state folder is created by OpenCode at every start (so a run without a
//     session mount works too) and holds no credentials. That folder is the
//     SessionStatePath.
//   - Sessions are bound to their directory: resuming from another cwd
//     hangs. The worktree is always mounted at /workspace, so the cwd is
//     stable.
//   - A missing session: exit 1, empty stdout, stderr "Error: Session not
//     found" (ANSI-coloured). 1.1–1.14 exit 0 with a NotFoundError stack,
//     1.0.98 hangs: the verified range starts at 1.15.0.
package opencode

import (
	"encoding/json"
	"strings"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/gateway"
	"github.com/alchemic-studio/alfred/sandbox"
)

// ID is the adapter id.
const ID = "opencode"

// Executable is argv[0].
const Executable = "opencode"

// DBEnv is the OPENCODE_DB value the adapter always sets: relative to
// OpenCode's data folder (~/.local/share/opencode), it names
// SessionStatePath/opencode.db.
const DBEnv = "../../state/opencode/opencode.db"

// CLI implements agents.CLI for OpenCode.
type CLI struct{}

// New returns the OpenCode adapter.
func New() (*agents.Local, error) { return agents.NewLocal(CLI{}) }

// Descriptor implements agents.CLI. The version is the first x.y.z of
// `opencode --version` ("1.18.33"); the prompt goes to stdin, verbatim (see
// the package doc); OpenCode assigns its own session ids. No WorktreeFiles:
// real runs in a git working copy (TestRealWorktreeHoldsOnlyTheChange) leave
// nothing there but the change asked for; OpenCode's project id cache goes
// to .git/opencode, inside .git, which git never stages.
//
// The allowlist is OpenCode's own configuration and the API keys of the
// providers it reads from the environment. The fixed environment sets the
// relocated database (every mode, so a run is the same with or without the
// session feature) and turns self-update off.
//
// Sealed, OpenCode's openai provider (the Responses API, through the AI
// SDK, which reads OPENAI_BASE_URL and OPENAI_API_KEY) calls the forwarder
// with the run's token: a sealed run names an openai/<model>.
func (CLI) Descriptor() agents.Descriptor {
	return agents.Descriptor{
		ID: ID, Executable: Executable,
		// From 1.15.0 a missing session exits 1 with "Session not found";
		// 1.18.33 is the pinned version the tests run.
		VerifiedRange: ">=1.15.0, <=1.18.33",
		// The folder holding the relocated session database.
		SessionStatePath: agents.AgentHome + "/.local/state/opencode",
		// OPENCODE_DB finds the database where the session folder put it.
		Takeover: &agents.Takeover{Argv: []string{"OPENCODE_DB=" + DBEnv, Executable, "--session", agents.TakeoverID},
			Note: "OpenCode binds a session to the folder it ran in, /workspace in the sandbox (from another folder its resume hangs): resume it from a checkout at /workspace"},
		PromptOnStdin: true,
		EnvAllowlist: []string{
			"OPENCODE_CONFIG", "OPENCODE_CONFIG_CONTENT", "OPENCODE_CONFIG_DIR", "OPENCODE_DISABLE_MODELS_FETCH",
			"OPENCODE_MODELS_PATH", "OPENCODE_MODELS_URL",
			"ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL",
			"OPENROUTER_API_KEY", "GOOGLE_GENERATIVE_AI_API_KEY", "GEMINI_API_KEY", "XAI_API_KEY",
			"GROQ_API_KEY", "MISTRAL_API_KEY", "DEEPSEEK_API_KEY",
			"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION", "AWS_PROFILE",
			"AZURE_API_KEY", "AZURE_RESOURCE_NAME",
		},
		FixedEnv: map[string]string{"OPENCODE_DB": DBEnv, "OPENCODE_DISABLE_AUTOUPDATE": "1"},
		Sealed: &agents.Sealed{
			Provider: gateway.NameOpenAI, BaseURLVar: "OPENAI_BASE_URL", BaseURLPath: "/v1", KeyVar: "OPENAI_API_KEY",
			Credentials: []string{"OPENAI_API_KEY", "OPENAI_BASE_URL"},
		},
	}
}

// Argv implements agents.CLI. The model is "provider/model"; a bare model
// gets the request's provider as prefix. The prompt is on stdin.
func (CLI) Argv(inv agents.Invocation) []string {
	argv := []string{Executable, "run", "--format", "json", "--dangerously-skip-permissions"}
	if m := model(inv.Provider, inv.Model); m != "" {
		argv = append(argv, "--model", m)
	}
	switch inv.Mode {
	case agents.ModeFresh:
		argv = append(argv, "--title", inv.SessionName)
	case agents.ModeResume:
		argv = append(argv, "--session", inv.SessionID)
	}
	return argv
}

func model(provider, m string) string {
	if m == "" || strings.Contains(m, "/") || provider == "" {
		return m
	}
	return provider + "/" + m
}

// event is one line of `opencode run --format json`.
type event struct {
	Type      string `json:"type"`
	SessionID string `json:"sessionID"`
	Part      struct {
		Type   string  `json:"type"`
		Text   string  `json:"text"`
		Cost   float64 `json:"cost"`
		Tokens struct {
			Input  int64 `json:"input"`
			Output int64 `json:"output"`
		} `json:"tokens"`
	} `json:"part"`
	Error *apiError `json:"error"`
}

// apiError is the error of an error event.
type apiError struct {
	Name string `json:"name"`
	Data struct {
		Message string `json:"message"`
	} `json:"data"`
}

// text is the error as one line: its name and message.
func (e *apiError) text() string { return strings.TrimSpace(e.Name + ": " + e.Data.Message) }

// Parse implements agents.CLI. A run succeeded when it exited 0, printed at
// least one event with a session id and no error event. The text is the last
// text part; tokens and cost add up over the steps.
func (CLI) Parse(res *sandbox.Result) agents.Output {
	var out agents.Output
	var events int
	var errText string
	agents.JSONLines(res.Stdout, func(e event) bool {
		if e.SessionID == "" {
			return true
		}
		events++
		out.NativeSessionID = e.SessionID
		switch e.Type {
		case "text":
			out.Text = e.Part.Text
		case "step_finish":
			out.InputTokens += e.Part.Tokens.Input
			out.OutputTokens += e.Part.Tokens.Output
			out.CostUSD += e.Part.Cost
		case "error":
			errText = "opencode error"
			if e.Error != nil {
				errText = e.Error.text()
			}
		}
		return true
	})
	switch {
	case errText != "":
		out.Text = errText
	case res.ExitCode == 0 && events > 0:
		out.Succeeded = true
	default:
		if s := agents.ErrorText(res.Stderr); s != "" {
			out.Text = s
		} else if out.Text == "" {
			out.Text = agents.NoResult(res)
		}
	}
	return out
}

// Classify implements agents.CLI. Only "Session not found" (1.15+) or the
// NotFoundError of older builds on stderr, with no event on stdout, is a
// missing session; anything else (API errors arrive as events) is ambiguous.
func (CLI) Classify(res *sandbox.Result) agents.FallbackReason {
	if agents.AnyJSONLine(res.Stdout, func(json.RawMessage) bool { return true }) {
		return agents.FallbackNone
	}
	errText := agents.ErrorText(res.Stderr)
	if strings.Contains(errText, "Session not found") || strings.Contains(errText, "NotFoundError") {
		return agents.FallbackStateMissing
	}
	return agents.FallbackNone
}
