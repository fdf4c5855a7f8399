package agents

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/google/uuid"

	"github.com/alchemic-studio/alfred/gateway"
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
	// EnvAllowlist names the variables, beyond BaseEnv and
	// Sealed.Credentials, that the CLI may receive from Request.Sandbox.Env
	// (API keys, base URLs, provider settings). Anything else the engine
	// offers is dropped.
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
	// Takeover is how a person continues one of the CLI's sessions on
	// their own machine (package takeover); nil: nobody can. Only with a
	// SessionStatePath (Validate); every CLI of Alfred's that resumes
	// declares one.
	Takeover *Takeover
}

// Takeover is how a person continues a CLI's session by hand, in a checkout
// of the issue branch, once the session folder is unpacked in their home.
type Takeover struct {
	// Argv resumes the session interactively; TakeoverID stands for its
	// native id.
	Argv []string
	// PerDirectory is a POSIX shell expression, run in the checkout, that
	// names the folder under SessionStatePath in which the CLI files the
	// sessions of the current directory (Claude Code's slug of the working
	// directory): the one folder the sandbox's /workspace had there is
	// unpacked under that name. Empty: the session folder is unpacked as
	// it is.
	PerDirectory string
	// Adopt is a POSIX shell command run in the checkout once the folder
	// is unpacked under PerDirectory ("$d" names it) that makes the CLI take
	// the sessions there as the current directory's (Gemini's .project_root
	// marker); may be empty.
	Adopt string
	// Note is what a person must know beside the command (a CLI that
	// binds its sessions to the directory they ran in); may be empty.
	Note string
}

// TakeoverID is what Takeover.Argv says in place of the session's id.
const TakeoverID = "{id}"

// Sealed is how a CLI runs behind the model gateway: which provider it
// calls, the variables that point it at the forwarder with the run's token
// in place of its key, and the variables of the offered environment that
// carry that provider's credentials or endpoint, which a sealed run never
// passes on (the gateway holds them).
type Sealed struct {
	// Provider is the name of the provider of gateway.Catalogue the CLI
	// calls (gateway.NameAnthropic, ...): its address, key variables and
	// headers are the catalogue's.
	Provider string
	// BaseURLVar names the variable the CLI reads its provider's base URL
	// from; a sealed run sets it to the forwarder's base URL for Provider
	// followed by BaseURLPath (e.g. "/v1").
	BaseURLVar, BaseURLPath string
	// KeyVar names the variable the CLI reads its key from; a sealed run
	// sets it to the run's token, behind TokenPrefix.
	KeyVar string
	// TokenPrefix is put before the token, for a CLI that takes only keys
	// of a shape (Copilot's github_pat_); one of gateway.TokenPrefixes.
	TokenPrefix string
	// Proxy: the CLI reaches Provider with the gateway as its HTTPS proxy
	// (gateway.Provider.Intercepted), not at a base URL: BaseURLVar is set
	// to the forwarder's address as a proxy URL whose password is the
	// run's token, and CAVar to the gateway's certificate authority,
	// mounted at gateway.ContainerCA.
	Proxy bool
	CAVar string
	// Set are more variables a sealed run sets (e.g. switches that keep
	// the CLI off its vendor's own service). May be nil.
	Set map[string]string
	// Credentials are the offered variables the gateway takes over. The CLI
	// receives them when it does not run sealed: they need not be repeated
	// in EnvAllowlist.
	Credentials []string
	// Note is what a person should know beside a missing credential: said
	// after Missing's sentence. May be empty.
	Note string
	// Preferred is another way the CLI runs sealed, taken instead of this
	// one when the gateway serves its provider (Copilot: its GitHub
	// sign-in, before a BYOK provider). May be nil.
	Preferred *Sealed
}

// For is the way a CLI sealed to s runs with the providers served:
// Preferred when its provider is served, else s.
func (s *Sealed) For(served []gateway.Provider) *Sealed {
	if s.Preferred != nil && s.Preferred.missing(served) == "" {
		return s.Preferred
	}
	return s
}

// Calling is the way of s (s or its Preferred) that calls provider, nil
// when none does: a run that asks for a provider takes that way.
func (s *Sealed) Calling(provider string) *Sealed {
	switch {
	case s.Provider == provider:
		return s
	case s.Preferred != nil && s.Preferred.Provider == provider:
		return s.Preferred
	}
	return nil
}

// Providers names the providers of s and its Preferred way.
func (s *Sealed) Providers() []string {
	if s.Preferred == nil {
		return []string{s.Provider}
	}
	return []string{s.Preferred.Provider, s.Provider}
}

// Missing says what keeps a CLI sealed to s from reaching its model with
// the providers the gateway serves, in one sentence a person can act on,
// or "" when nothing does: its provider is served with a credential, or
// at an address of its own that takes none (a local model, a mock). The
// doctor, the agents screen and a run that cannot start all say it.
func (s *Sealed) Missing(served []gateway.Provider) string {
	if s.For(served).missing(served) == "" {
		return ""
	}
	why := s.missing(served)
	if s.Preferred != nil {
		why = s.Preferred.missing(served) + "; or " + why
	}
	return why
}

// missing is Missing for s alone.
func (s *Sealed) missing(served []gateway.Provider) string {
	cat, ok := gateway.Lookup(s.Provider)
	if !ok {
		return "its provider " + s.Provider + " is not in the gateway's catalogue"
	}
	i := slices.IndexFunc(served, func(p gateway.Provider) bool { return p.Name == s.Provider })
	if i >= 0 && (served[i].Key != "" || strings.TrimRight(served[i].BaseURL, "/") != strings.TrimRight(cat.DefaultURL, "/")) {
		return ""
	}
	why := "the gateway holds no " + s.Provider + " credential: offer " + orList(cat.KeyVars()) + " in ALFRED_AGENT_ENV"
	if s.Note != "" {
		why += " (" + s.Note + ")"
	}
	return why
}

// orList joins names as "a, b or c".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// HomeConfigurer is a CLI that needs configuration files in its home that
// no variable can give (Gemini's choice of authentication). HomeFiles
// returns them for the environment the CLI runs with, by their path inside
// the sandbox (under AgentHome), or none. They hold no secret: the engine
// writes them for every run, sealed or not, and mounts them read-only; a
// credential mount of the operator's at the same path wins.
type HomeConfigurer interface {
	HomeFiles(env map[string]string) map[string]string
}

// HomeFiles are the configuration files the CLI needs in its home to run
// with the offered environment (see HomeConfigurer); nil when it needs none.
func (l *Local) HomeFiles(offered map[string]string) map[string]string {
	c, ok := l.cli.(HomeConfigurer)
	if !ok {
		return nil
	}
	return c.HomeFiles(l.desc.env(offered))
}

// Env is the variables a sealed run sets: BaseURLVar to baseURL (see
// BaseURL) plus BaseURLPath, KeyVar to token (the run's) behind
// TokenPrefix, and Set. A Proxy's baseURL gets the token as its password,
// and CAVar is the certificate authority's place in the container.
func (s *Sealed) Env(baseURL, token string) map[string]string {
	env := maps.Clone(s.Set)
	if env == nil {
		env = map[string]string{}
	}
	env[s.BaseURLVar] = baseURL + s.BaseURLPath
	if s.Proxy {
		env[s.BaseURLVar] = strings.Replace(baseURL, "://", "://agent:"+token+"@", 1) + s.BaseURLPath
		env[s.CAVar] = gateway.ContainerCA
	}
	env[s.KeyVar] = s.TokenPrefix + token
	return env
}

// BaseURL is the base URL a sealed CLI calls its provider at: the forwarder
// on 127.0.0.1:port, under the provider's name; for a Proxy, the
// forwarder's address alone.
func (s *Sealed) BaseURL(port int) string {
	if s.Proxy {
		return fmt.Sprintf("http://127.0.0.1:%d", port)
	}
	return fmt.Sprintf("http://127.0.0.1:%d/%s", port, s.Provider)
}

// Environment is the environment offered to a sealed run: offered without
// Credentials, plus Env(baseURL, token). offered is not modified.
func (s *Sealed) Environment(offered map[string]string, baseURL, token string) map[string]string {
	env := maps.Clone(offered)
	if env == nil {
		env = map[string]string{}
	}
	for _, k := range s.Credentials {
		delete(env, k)
	}
	maps.Copy(env, s.Env(baseURL, token))
	return env
}

// validate checks that the CLI receives every variable Env sets.
func (s *Sealed) validate(d Descriptor) error {
	if s.Provider == "" || s.BaseURLVar == "" || s.KeyVar == "" {
		return errors.New("sealed: a provider, BaseURLVar and KeyVar are needed")
	}
	if _, ok := gateway.Lookup(s.Provider); !ok {
		return fmt.Errorf("sealed: provider %q is not in the gateway's catalogue", s.Provider)
	}
	if s.TokenPrefix != "" && !slices.Contains(gateway.TokenPrefixes, s.TokenPrefix) {
		return fmt.Errorf("sealed: the gateway takes no token behind %q (gateway.TokenPrefixes)", s.TokenPrefix)
	}
	if s.Proxy && s.CAVar == "" {
		return errors.New("sealed: a Proxy needs CAVar, the variable its CLI trusts the gateway's certificate authority from")
	}
	if s.Preferred != nil {
		if s.Preferred.Preferred != nil {
			return errors.New("sealed: a Preferred way has no Preferred of its own")
		}
		if err := s.Preferred.validate(d); err != nil {
			return fmt.Errorf("preferred: %w", err)
		}
	}
	received := slices.Concat(BaseEnv, d.EnvAllowlist, s.Credentials)
	for k := range s.Env("http://127.0.0.1:1/"+s.Provider, "token") {
		if !slices.Contains(received, k) {
			return fmt.Errorf("sealed: Env sets %s, which the CLI never receives (not in EnvAllowlist, BaseEnv or Credentials)", k)
		}
	}
	return nil
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
	if d.Takeover != nil && d.SessionStatePath == "" {
		return fmt.Errorf("adapter %s: a takeover needs a session state path", d.ID)
	}
	if t := d.Takeover; t != nil && t.Adopt != "" && t.PerDirectory == "" {
		return fmt.Errorf("adapter %s: the takeover adopts a folder it does not name (no PerDirectory)", d.ID)
	}
	if t := d.Takeover; t != nil && !slices.ContainsFunc(t.Argv, func(a string) bool { return strings.Contains(a, TakeoverID) }) {
		return fmt.Errorf("adapter %s: the takeover's command must name the session, %s", d.ID, TakeoverID)
	}
	if d.Sealed != nil {
		if err := d.Sealed.validate(d); err != nil {
			return fmt.Errorf("adapter %s: %w", d.ID, err)
		}
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

// env keeps BaseEnv, EnvAllowlist and Sealed.Credentials from offered,
// then sets FixedEnv.
func (d Descriptor) env(offered map[string]string) map[string]string {
	env := make(map[string]string)
	var credentials []string
	if d.Sealed != nil {
		credentials = d.Sealed.Credentials
	}
	for _, names := range [][]string{BaseEnv, d.EnvAllowlist, credentials} {
		for _, k := range names {
			if v, ok := offered[k]; ok {
				env[k] = v
			}
		}
	}
	maps.Copy(env, d.FixedEnv)
	return env
}
