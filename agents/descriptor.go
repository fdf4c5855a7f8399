package agents

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/Masterminds/semver/v3"
	"github.com/google/uuid"
)

// Descriptor is what a local CLI declares about itself: the facts the shared
// code reads (the flow in Local.Run, Detect, ExcludeWorktreeFiles through the
// adapter's Capabilities, and agents/internal/clitest). A CLI package
// declares one Descriptor and writes only what really differs from one CLI
// to the next: Argv, Parse and Classify (see CLI).
type Descriptor struct {
	// ID is the adapter id (see Adapter.ID).
	ID string
	// Executable is the CLI's command name, argv[0] of its commands.
	Executable string
	// SessionStatePath is where the CLI keeps its sessions inside the
	// sandbox: the narrowest folder under AgentHome that holds them and no
	// credentials. Set, the CLI resumes sessions; empty, it does not (see
	// Capabilities).
	SessionStatePath string
	// WorktreeFiles are the files the CLI writes into its working directory
	// on its own (see Capabilities.WorktreeFiles).
	WorktreeFiles []string
	// VerifiedRange is the semver constraint (Masterminds syntax, e.g.
	// ">=2.1.101, <=2.1.332") of versions whose session behaviour was
	// verified. Detection reports resumable_sessions only inside it.
	VerifiedRange string
	// VersionArgv is the command that prints the version; nil means
	// `<Executable> --version`.
	VersionArgv []string
	// VersionParser reads that command's output; nil means the first x.y.z
	// on stdout (FindVersion). See ParseVersion.
	VersionParser func(stdout, stderr []byte) (*semver.Version, error)
	// EnvAllowlist names the variables, beyond BaseEnv, that the CLI may
	// receive from Request.Sandbox.Env (API keys, base URLs, provider
	// settings). Anything else the engine offers is dropped.
	EnvAllowlist []string
	// FixedEnv is set on top, whatever the engine offers (e.g. disabling
	// auto-update). May be nil. Read only: never modified by the shared code.
	FixedEnv map[string]string
	// PromptOnStdin makes the flow feed Invocation.Prompt to the process's
	// standard input on every attempt; Argv must then leave the prompt out
	// (or pass the CLI's "read the prompt from stdin" marker, like codex's
	// "-"). Prefer it where the CLI supports it: Linux limits one argv
	// element to 128 KiB, and a prompt with the full phase context can be
	// longer. False: the prompt is in argv, verbatim.
	PromptOnStdin bool
	// TakesSessionID says the CLI accepts a session id chosen by the caller:
	// a ModeFresh invocation then carries a fresh random UUID (never derived
	// from the session name). False: the CLI assigns its own id, and
	// Invocation.SessionID is empty in ModeFresh.
	TakesSessionID bool
	// Sealed says how the CLI reaches its model through Alfred's model
	// gateway (package gateway) in a container with no network; nil: the
	// CLI does not run sealed yet.
	Sealed *Sealed
}

// Sealed is how a CLI runs behind the model gateway: which provider it
// calls, the variables that point it at the forwarder with the run's token
// in place of its key, and the variables of the offered environment that
// carry that provider's credentials or endpoint, which a sealed run never
// passes on (the gateway holds them).
type Sealed struct {
	// Provider is the gateway provider's name (e.g. "anthropic").
	Provider string
	// Env returns the variables to set for a run: baseURL is
	// http://127.0.0.1:<port>/<Provider>, token the run's token.
	Env func(baseURL, token string) map[string]string
	// Credentials are the offered variables the gateway takes over.
	Credentials []string
}

// Capabilities are the adapter's: local, resumable exactly when the CLI
// has a SessionStatePath, and its WorktreeFiles.
func (d Descriptor) Capabilities() Capabilities {
	return Capabilities{
		Kind: KindLocal, ResumableSessions: d.SessionStatePath != "",
		SessionStatePath: d.SessionStatePath, WorktreeFiles: d.WorktreeFiles,
	}
}

// Validate reports whether the descriptor is one NewLocal accepts: an id, a
// version command, coherent capabilities, and a verified range that parses.
func (d Descriptor) Validate() error {
	if d.ID == "" {
		return errors.New("descriptor: no adapter id")
	}
	if len(d.versionArgv()) == 0 || d.versionArgv()[0] == "" {
		return fmt.Errorf("adapter %s: no executable and no version command", d.ID)
	}
	if err := d.Capabilities().Validate(); err != nil {
		return fmt.Errorf("adapter %s: %w", d.ID, err)
	}
	if _, err := semver.NewConstraint(d.VerifiedRange); err != nil {
		return fmt.Errorf("adapter %s: verified range %q: %w", d.ID, d.VerifiedRange, err)
	}
	return nil
}

// versionArgv is VersionArgv, or `<Executable> --version`.
func (d Descriptor) versionArgv() []string {
	if d.VersionArgv != nil {
		return slices.Clone(d.VersionArgv)
	}
	return []string{d.Executable, "--version"}
}

// ParseVersion reads the version command's output with VersionParser, or
// takes the first x.y.z on stdout.
func (d Descriptor) ParseVersion(stdout, stderr []byte) (*semver.Version, error) {
	if d.VersionParser != nil {
		return d.VersionParser(stdout, stderr)
	}
	return FindVersion(stdout)
}

// NewSessionID returns the id of a ModeFresh invocation: a random UUID when
// the CLI takes a caller-chosen id, "" when it assigns its own.
func (d Descriptor) NewSessionID() string {
	if !d.TakesSessionID {
		return ""
	}
	return uuid.NewString()
}

// env keeps BaseEnv and EnvAllowlist from offered, then sets FixedEnv.
func (d Descriptor) env(offered map[string]string) map[string]string {
	env := make(map[string]string)
	for _, names := range [][]string{BaseEnv, d.EnvAllowlist} {
		for _, k := range names {
			if v, ok := offered[k]; ok {
				env[k] = v
			}
		}
	}
	maps.Copy(env, d.FixedEnv)
	return env
}
