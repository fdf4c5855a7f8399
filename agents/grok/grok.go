// Package grok owns the adapter for the community Grok CLI (npm
// @vibe-kit/grok-cli, the only `grok` installable from the npm registry):
// its argv and its output parser. It declares no resumable sessions.
//
// Why not resumable: @vibe-kit/grok-cli 0.0.34 (its `grok --version` prints
// 1.0.1) has no sessions at all. Its headless path (processPromptHeadless in
// dist/index.js) builds a new GrokAgent per run, sends the one prompt and
// prints the resulting messages; it has no session id, no resume or continue
// flag, and persists nothing but ~/.grok/user-settings.json and its
// "project settings" .grok/settings.json in the working directory. xAI's official
// "Grok Build" CLI has -s/--session-id and -r/--resume, but it is installed
// by a curl|bash installer outside the npm registry, so none of its session
// behaviour can be verified here; it stays non-resumable until it can be.
//
// Facts this package relies on, checked against @vibe-kit/grok-cli 0.0.34:
//
//   - Headless: `grok --prompt=<prompt> [--model=m]` in the worktree, with
//     GROK_API_KEY and GROK_BASE_URL from the environment.
//   - stdout is one OpenAI-style message per line: {"role":"user",…}, then
//     assistant and tool messages; the last assistant content is the answer.
//     They are printed only once the run has ended: grok has no streaming
//     format (`grok --help` lists no output option), so the live page shows
//     its steps at the end (stream.go) and it reports no progress.
//   - An API error still exits 0, with the assistant content "Sorry, I
//     encountered an error: …"; a thrown error exits 1 with "Error: …"; a
//     missing key exits 1 with "❌ Error: API key required…" on stderr.
//   - Every run creates .grok/settings.json ({"model": …}) in its working
//     directory when it is missing (SettingsManager.loadProjectSettings, also
//     with --model or GROK_MODEL set): WorktreeFiles keeps it out of the
//     commit. Only that file: .grok/GROK.md is the project's instructions,
//     which grok reads and never writes.
package grok

import (
	"strings"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/gateway"
	"github.com/alchemic-studio/alfred/sandbox"
)

// ID is the adapter id.
const ID = "grok"

// Executable is argv[0].
const Executable = "grok"

// CLI implements agents.CLI for the community Grok CLI.
type CLI struct{}

// New returns the Grok adapter.
func New() (*agents.Local, error) { return agents.NewLocal(CLI{}) }

// Descriptor implements agents.CLI: local, never resumable, the prompt in
// argv, and the project settings file every run creates kept out of the
// commit (see the package doc).
//
// Sealed, grok calls xAI's chat completions at GROK_BASE_URL (the
// forwarder) with the run's token as GROK_API_KEY (a Bearer token).
// MORPH_API_KEY is withheld too: Morph's service is no gateway provider, and
// a sealed container holds no key.
func (CLI) Descriptor() agents.Descriptor {
	return agents.Descriptor{
		ID: ID, Executable: Executable,
		// The version `grok --version` prints for the verified package,
		// @vibe-kit/grok-cli 0.0.34. Sessions are not resumable whatever the
		// version.
		VerifiedRange: "1.0.1",
		WorktreeFiles: []string{"/.grok/settings.json"},
		EnvAllowlist:  []string{"GROK_MODEL"},
		Sealed: &agents.Sealed{
			Provider: gateway.NameXAI, BaseURLVar: "GROK_BASE_URL", BaseURLPath: "/v1", KeyVar: "GROK_API_KEY",
			Credentials: []string{"GROK_API_KEY", "GROK_BASE_URL", "MORPH_API_KEY"},
		},
	}
}

// Argv implements agents.CLI. Only ModeNone ever runs (the adapter takes no
// session reference), so the mode adds nothing.
func (CLI) Argv(inv agents.Invocation) []string {
	argv := []string{Executable, "--prompt=" + inv.Prompt}
	if inv.Model != "" {
		argv = append(argv, "--model="+inv.Model)
	}
	return argv
}

type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// apiErrorPrefix starts the assistant content of a failed API call, which
// exits 0.
const apiErrorPrefix = "Sorry, I encountered an error:"

// Parse implements agents.CLI. A run succeeded when it exited 0 with an
// answer that is not an error: grok exits 0 on an API error (a 401
// included), its answer then "Sorry, I encountered an error: …", which is
// the text; a thrown error exits 1 with "Error: …"; without an answer the
// text is what it said on stderr (agents.NoResult).
func (CLI) Parse(res *sandbox.Result) agents.Output {
	var out agents.Output
	answered := false
	agents.JSONLines(res.Stdout, func(m message) bool {
		if m.Role == "assistant" && m.Content != "" {
			out.Text, answered = m.Content, true
		}
		return true
	})
	switch {
	case !answered:
		out.Text = agents.NoResult(res)
	case res.ExitCode == 0 && !isError(out.Text):
		out.Succeeded = true
	}
	return out
}

// isError tells whether an answer is grok's report of an error.
func isError(text string) bool {
	return strings.HasPrefix(text, apiErrorPrefix) || strings.HasPrefix(text, "Error: ")
}

// Classify implements agents.CLI. Never called: the adapter never resumes.
func (CLI) Classify(*sandbox.Result) agents.FallbackReason { return agents.FallbackNone }
