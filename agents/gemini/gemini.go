// Package gemini owns the adapter for the Gemini CLI (npm @google/gemini-cli):
// its argv per session mode, the stream decoder and output parser
// (`--output-format stream-json`), the
// resume-failure classifier and where its sessions live.
//
// Facts this package relies on, checked against @google/gemini-cli 0.61.0:
//
//   - No session: `gemini --output-format stream-json --approval-mode yolo [--model=m]`,
//     the prompt on stdin (read verbatim, headless, when stdin is not a
//     terminal; no 128 KiB argv limit), with GEMINI_CLI_TRUST_WORKSPACE=true (headless runs need a trusted
//     folder; the variable is ignored by versions without the check).
//   - Fresh: the same plus `--session-id=<uuid>`, a random UUID chosen by
//     the adapter. Gemini has no session label (a session's title is its
//     first prompt).
//   - Resume: the same plus `--resume=<uuid>`. The history is loaded.
//   - stdout is a stream of JSON events (stream.go): init (with the
//     session_id), messages (the user's prompt, the assistant's text in
//     deltas), tool_use and tool_result, and last a result (status, error,
//     stats with the tokens per model). An error before the stream starts
//     (no auth) is text on stderr; after a stack trace, a JSON object
//     {"session_id","error":{…}} may end stderr.
//   - Sessions live in ~/.gemini/tmp/<project>/chats/, one folder per
//     project (cwd); the project's short name is found again from the
//     .project_root marker inside ~/.gemini/tmp, so ~/.gemini/tmp alone is
//     enough to resume (checked with projects.json and history/ deleted).
//     Credentials sit beside it in ~/.gemini (oauth_creds.json,
//     settings.json), never inside tmp/, which is the SessionStatePath.
//     Sessions are bound to the cwd: the worktree is always /workspace.
//   - A missing session: exit 42, stdout empty, stderr "Error resuming
//     session: No previous sessions found for this project." or "…Invalid
//     session identifier "<id>".", before any authentication. Up to 0.42 a
//     missing session silently started a fresh one: the range starts at
//     0.43.0.
//
// The real round trip (agents/internal/clitest) also passes with this argv
// on 0.43.0, the lower bound.
package gemini

import (
	"slices"
	"strconv"
	"strings"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/gateway"
	"github.com/alchemic-studio/alfred/sandbox"
)

// ID is the adapter id.
const ID = "gemini"

// Executable is argv[0].
const Executable = "gemini"

// SettingsPath is the settings file of the CLI's home, where HomeFiles
// writes the choice of authentication.
const SettingsPath = agents.AgentHome + "/.gemini/settings.json"

// CLI implements agents.CLI for the Gemini CLI.
type CLI struct{}

// New returns the Gemini adapter.
func New() (*agents.Local, error) { return agents.NewLocal(CLI{}) }

// Descriptor implements agents.CLI. The version is the first x.y.z of
// `gemini --version` ("0.61.0"); the prompt goes to stdin; a fresh session
// gets a random UUID for --session-id (never a number: --resume 5 means the
// fifth session). No WorktreeFiles: real runs in a git working copy
// (TestRealWorktreeHoldsOnlyTheChange) leave nothing there but the change
// asked for. The allowlist is Gemini API, Vertex AI and gateway settings;
// the fixed environment trusts the worktree (headless runs refuse an
// untrusted folder) and turns colour off.
//
// Sealed, Gemini calls the Gemini API at GOOGLE_GEMINI_BASE_URL (the
// forwarder) with the run's token as GEMINI_API_KEY (sent in
// x-goog-api-key). GOOGLE_GEMINI_BASE_URL alone selects the auth type
// "gateway", which headless runs refuse (exit 41, "Invalid auth method
// selected."), and no variable selects another: HomeFiles writes the
// choice into ~/.gemini/settings.json.
func (CLI) Descriptor() agents.Descriptor {
	return agents.Descriptor{
		ID: ID, Executable: Executable,
		// A missing session fails (exit 42) from 0.43.0; 0.61.0 is the
		// pinned version the tests run.
		VerifiedRange: ">=0.43.0, <=0.61.0",
		// Gemini's per-project sessions, and no credentials.
		SessionStatePath: agents.AgentHome + "/.gemini/tmp",
		// A project's sessions are in tmp/<short name>/chats, found by the
		// folder its .project_root names: unpacked under a name of its own,
		// the marker names the person's checkout.
		Takeover: &agents.Takeover{Argv: []string{Executable, "--resume=" + agents.TakeoverID},
			PerDirectory: `alfred-$(basename "$PWD" | sed 's/[^A-Za-z0-9]/-/g')`,
			Adopt:        `printf '%s' "$PWD" > "$d/.project_root"`},
		PromptOnStdin: true, TakesSessionID: true,
		EnvAllowlist: []string{
			"GEMINI_MODEL", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_GCA", "GOOGLE_CLOUD_PROJECT",
			"GOOGLE_CLOUD_LOCATION", "GOOGLE_APPLICATION_CREDENTIALS",
		},
		FixedEnv: map[string]string{"GEMINI_CLI_TRUST_WORKSPACE": "true", "NO_COLOR": "1"},
		Sealed: &agents.Sealed{
			Provider: gateway.NameGemini, BaseURLVar: "GOOGLE_GEMINI_BASE_URL", KeyVar: "GEMINI_API_KEY",
			Credentials: []string{"GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL", "GOOGLE_VERTEX_BASE_URL"},
		},
	}
}

// HomeFiles implements agents.HomeConfigurer: Gemini reads its choice of
// authentication from ~/.gemini/settings.json only (security.auth.selectedType),
// never from a variable, and headless runs without one refuse to start
// (exit 41). The choice follows the environment: Vertex AI when
// GOOGLE_GENAI_USE_VERTEXAI is true, the Gemini API with a key or a base
// URL (a sealed run has both: the forwarder and the run's token), else
// nothing is written (a credential mount of the operator's may bring a
// choice, with an OAuth login beside it).
func (CLI) HomeFiles(env map[string]string) map[string]string {
	var auth string
	switch {
	case strings.EqualFold(env["GOOGLE_GENAI_USE_VERTEXAI"], "true"):
		auth = "vertex-ai"
	case env["GEMINI_API_KEY"] != "" || env["GOOGLE_GEMINI_BASE_URL"] != "":
		auth = "gemini-api-key"
	default:
		return nil
	}
	return map[string]string{SettingsPath: `{"security":{"auth":{"selectedType":"` + auth + `"}}}`}
}

// Argv implements agents.CLI. The prompt is on stdin.
func (CLI) Argv(inv agents.Invocation) []string {
	argv := []string{Executable, "--output-format", "stream-json", "--approval-mode", "yolo"}
	if inv.Model != "" {
		argv = append(argv, "--model="+inv.Model)
	}
	switch inv.Mode {
	case agents.ModeFresh:
		argv = append(argv, "--session-id="+inv.SessionID)
	case agents.ModeResume:
		argv = append(argv, "--resume="+inv.SessionID)
	}
	return argv
}

// errorObject is the error of a result event, or of the JSON object a
// failure prints on stderr ({"session_id","error":{…}}).
type errorObject struct {
	Type    string `json:"type"`
	Message string `json:"message"`
	Code    int    `json:"code"`
}

// Parse implements agents.CLI from the stream (stream.go): the session id
// of the init, the answer (the assistant text after the last tool call),
// the tokens and the status of the result. A run succeeded when it exited 0
// with a result of status success. Without a result, the text is the error
// on stderr: the error object's message, else its last line that is no
// notice (agents.NoResult).
func (CLI) Parse(res *sandbox.Result) agents.Output {
	var out agents.Output
	var answer strings.Builder
	var result *event
	agents.JSONLines(res.Stdout, func(e event) bool {
		switch e.Type {
		case "init":
			out.NativeSessionID = e.SessionID
		case "message":
			if e.Role == "assistant" {
				answer.WriteString(e.Content)
			}
		case "tool_use", "tool_result":
			answer.Reset() // the answer is what follows the last call
		case "result":
			result = &e
		}
		return true
	})
	out.Text = answer.String()
	if result == nil {
		out.Text = stderrError(res)
		return out
	}
	for _, m := range result.Stats.Models {
		out.InputTokens += m.InputTokens
		out.OutputTokens += m.OutputTokens
	}
	switch {
	case result.Error != nil && result.Error.Message != "":
		out.Text = result.Error.Message
	case result.Status != "success":
		out.Text = "gemini ended with status " + strconv.Quote(result.Status)
	default:
		out.Succeeded = res.ExitCode == 0
	}
	return out
}

// stderrError is why a run that printed no result failed: the message of
// the error object on stderr, else its last line that is not a notice.
func stderrError(res *sandbox.Result) string {
	var msg string
	agents.JSONLines(res.Stderr, func(o struct {
		Error *errorObject `json:"error"`
	}) bool {
		if o.Error != nil && o.Error.Message != "" {
			msg = o.Error.Message
		}
		return true
	})
	if msg != "" {
		return msg
	}
	lines := strings.Split(strings.TrimSpace(string(agents.StripANSI(res.Stderr))), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l != "" && !slices.ContainsFunc(notices, func(n string) bool { return strings.HasPrefix(l, n) }) {
			return agents.ErrorText([]byte(strings.Join(lines[firstErrorLine(lines, i):i+1], "\n")))
		}
	}
	return agents.NoResult(&sandbox.Result{ExitCode: res.ExitCode, Stdout: res.Stdout})
}

// firstErrorLine is where the error that ends at line last starts: the
// lines before it that are indented belong to it.
func firstErrorLine(lines []string, last int) int {
	i := last
	for i > 0 && strings.HasPrefix(lines[i], " ") {
		i--
	}
	return i
}

// notices are the lines Gemini prints on stderr on every run.
var notices = []string{"Warning: ", "YOLO mode is enabled", "Ripgrep is not available", "Loaded cached credentials"}

// Classify implements agents.CLI from the stderr of a run that printed no
// event. Every --resume failure seen is a missing session, whatever the
// id ("../evil" and "5" included); the other input errors (an invalid or
// existing --session-id, --session-id unknown before 0.41) only a fresh
// start can print, and Classify only sees resume attempts.
func (CLI) Classify(res *sandbox.Result) agents.FallbackReason {
	if agents.AnyJSONLine(res.Stdout, func(e event) bool { return e.Type != "" }) {
		return agents.FallbackNone // the stream began: the session was found
	}
	errText := string(agents.StripANSI(res.Stderr))
	switch {
	case strings.Contains(errText, "Error resuming session: No previous sessions found for this project."),
		strings.Contains(errText, "Error resuming session: Invalid session identifier"):
		return agents.FallbackStateMissing
	}
	return agents.FallbackNone
}
