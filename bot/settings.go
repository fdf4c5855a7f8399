package bot

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/alchemic-studio/alfred/gateway"
	"github.com/alchemic-studio/alfred/sandbox"
)

// The per-project settings. Each is declared once, here, as a typed value:
// the engine reads it with Get (never by its key), and the catalogue, `alfred
// settings`, the README's table and `alfred config reference` all come from
// these declarations. Add a setting here and to Catalogue below.
var (
	AgentSessionResume = boolSetting("AGENT_SESSION_RESUME", true,
		"name each agent CLI session after the issue branch and resume it on the next run")
	AgentSessionHandoff = boolSetting("AGENT_SESSION_HANDOFF", true,
		"when a run's session starts fresh because the adapter changed (or the resumes of its session kept failing), its prompt carries a bounded summary of the earlier session read from its transcript, without a model")
	AgentAllowCIChanges = boolSetting("AGENT_ALLOW_CI_CHANGES", false,
		"let an agent's change touch CI definitions (.forgejo/workflows, .gitea/workflows, .github/workflows, .gitlab-ci.yml, ...); false: such a change is held for a person")
	AgentTrustedAuthors = stringSetting("AGENT_TRUSTED_AUTHORS", "write", "write, admin, or a comma-separated list of user names",
		"whose comments reach the agent's prompt as instructions: people with write access (write), administrators only (admin, also for maintain), or the users listed; other comments are quoted as untrusted material with their author", checkTrustedAuthors)
	RequirePlanValidation = boolSetting("REQUIRE_PLAN_VALIDATION", true,
		"wait for ai::validate_plan after the plan; false goes straight on to development")
	BranchPrefix = stringSetting("BRANCH_PREFIX", "agent/", "text allowed in a git branch name",
		"prefix of issue branches ({prefix}issue-{iid}-{slug})", checkBranchPrefix)
	LLMMaxRetries = intSetting("LLM_MAX_RETRIES", 2, 0, 20,
		"failed runs retried before the mailbox is blocked")
	CIFixMaxAttempts = intSetting("CI_FIX_MAX_ATTEMPTS", 3, 0, 50,
		"ci_fix runs before the mailbox is blocked")
	CIFixHardCap = intSetting("CI_FIX_HARD_CAP", 10, 1, 100,
		"ci_fix runs allowed under ai::retry_until_green")
	ConflictFixMaxAttempts = intSetting("CONFLICT_FIX_MAX_ATTEMPTS", 3, 0, 20,
		"conflict_resolution runs in a row before the mailbox is blocked")
	AgentAdapter = stringSetting("AGENT_ADAPTER", "claude-code", "an adapter id",
		"adapter that runs the phases (claude-code, codex, opencode, copilot, gemini, grok, api)", nonEmpty)
	AgentProvider = stringSetting("AGENT_PROVIDER", "", "a provider name, or empty",
		"model provider handed to the adapter (empty: the adapter's default)", nil)
	AgentModel = stringSetting("AGENT_MODEL", "", "a model name, or empty",
		"model handed to the adapter (empty: the adapter's default)", nil)
	AgentTrial = stringSetting("AGENT_TRIAL", "", "ADAPTER[/MODEL]:SHARE, comma-separated, two arms or more, or empty",
		"an agent trial: new issues are split between the arms by their shares (claude-code:1,codex:1; with models claude-code/claude-opus-4:2,codex/gpt-5:1), each issue keeping its arm, recorded at its assignment, for all its runs whatever AGENT_ADAPTER says; an arm runs with AGENT_PROVIDER (and AGENT_MODEL when it names none) only when it is AGENT_ADAPTER's adapter, else with its adapter's defaults; alfred settings set refuses an adapter that is unknown or not detected; the outcomes page compares the arms; empty: no trial", checkTrial)
	AgentNetwork = stringSetting("AGENT_NETWORK", "none", "none, or a Docker network name (pod with the kubernetes runner)",
		"network of agent containers: none (the default) seals them, no network device but loopback and their model reached only through Alfred's gateway, which keeps the provider key; a Docker network (bridge, host, ...) runs them unsealed, the key in the container and the network open to whatever the agent is told to do; with the kubernetes runner none denies the Pod all traffic (a NetworkPolicy; the gateway's socket is relayed through the API server) and pod is the cluster's Pod network, unsealed", nonEmpty)
	AgentCredentialMounts = stringSetting("AGENT_CREDENTIAL_MOUNTS", "", "adapter=/host/path:/home/agent/path, comma-separated",
		"read-only credential mounts (default: the service's -credential-mounts)",
		func(v string) error { _, err := sandbox.ParseCredentialMounts(v); return err })
	AgentEgressAllow = stringSetting("AGENT_EGRESS_ALLOW", "", "comma-separated hosts: host, host:port or *.domain",
		"hosts a sealed run may reach besides its model, through the gateway's proxy (HTTPS_PROXY in the container), e.g. a package registry; empty: none",
		func(v string) error { return gateway.CheckHosts(splitHosts(v)) })
	RunTimeout = durationSetting("RUN_TIMEOUT", 30*time.Minute,
		"wall-clock limit of one run")
	AgentStallTimeout = durationSetting("AGENT_STALL_TIMEOUT", 2*time.Minute,
		"a run whose CLI neither prints nor makes a model request for this long is stopped, and the thread says why")
	AgentBudgetTokens = stringSetting("AGENT_BUDGET_TOKENS", "", "a whole number of tokens, or empty",
		"budget of one issue in tokens (input and output, the gateway's count for sealed runs): at or over it, no run starts and the issue is paused until ai::budget_step grants this much again; empty: no limit", checkBudget(false))
	AgentBudgetUSD = stringSetting("AGENT_BUDGET_USD", "", "an amount in dollars such as 2.50, or empty",
		"budget of one issue in dollars, as the CLIs report their cost (runs of a CLI that reports none count nothing and are listed as unpriced): at or over it, no run starts and the issue is paused until ai::budget_step; empty: no limit", checkBudget(true))
)

// Catalogue is every per-project setting, by key; SettingKeys gives the
// order above.
var Catalogue = catalogue(
	AgentSessionResume, AgentSessionHandoff, RequirePlanValidation, BranchPrefix, AgentAllowCIChanges, AgentTrustedAuthors,
	LLMMaxRetries, CIFixMaxAttempts, CIFixHardCap, ConflictFixMaxAttempts,
	AgentAdapter, AgentProvider, AgentModel, AgentTrial, AgentNetwork, AgentCredentialMounts, AgentEgressAllow,
	RunTimeout, AgentStallTimeout, AgentBudgetTokens, AgentBudgetUSD,
)

// splitHosts reads AGENT_EGRESS_ALLOW's list.
func splitHosts(v string) []string {
	var out []string
	for _, h := range strings.Split(v, ",") {
		if h = strings.TrimSpace(h); h != "" {
			out = append(out, h)
		}
	}
	return out
}

// settingOrder is the catalogue's keys in declaration order.
var settingOrder []string

// SettingType is the type of a per-project setting's value.
type SettingType string

// Setting types.
const (
	TypeBool     SettingType = "bool"
	TypeInt      SettingType = "int"
	TypeString   SettingType = "string"
	TypeDuration SettingType = "duration"
)

// Levels says at which scopes a setting may be overridden.
type Levels uint8

// The scopes of an override. Every setting falls back to its default.
const (
	AtOrganization Levels = 1 << iota
	AtProject
)

func (l Levels) String() string {
	var out []string
	if l&AtOrganization != 0 {
		out = append(out, "organization")
	}
	if l&AtProject != 0 {
		out = append(out, "project")
	}
	if len(out) == 0 {
		return "none (default only)"
	}
	return strings.Join(out, ", ")
}

// allows reports whether an override at s may apply.
func (l Levels) allows(s Scope) bool {
	if s.Project == "" {
		return l&AtOrganization != 0
	}
	return l&AtProject != 0
}

// SettingDef is one entry of the settings catalogue: behaviour a team may
// change per organization or per project. Scopes resolve project, then
// organization, then the default.
type SettingDef struct {
	Key     string
	Type    SettingType
	Default string // in canonical text form (see Parse)
	Accepts string // the values it takes, in words
	Scopes  Levels // where it may be overridden
	Help    string
	// Check refuses a well-typed value that is still wrong (a range, a format).
	Check func(v string) error
}

// Setting is one declared per-project setting whose value is a T.
type Setting[T any] struct {
	def  *SettingDef
	conv func(string) (T, error)
	dflt T
}

// Key is the setting's name, as `alfred settings` and the state branch spell it.
func (s Setting[T]) Key() string { return s.def.Key }

// Def is the setting's catalogue entry.
func (s Setting[T]) Def() SettingDef { return *s.def }

// Default is the catalogue's default (the service configuration may replace it: Settings.Defaults).
func (s Setting[T]) Default() T { return s.dflt }

// Get resolves the setting for a project: the project's override, else the
// organization's, else the default. An override that does not parse is
// skipped (and reported, see Settings.Report), never read as the zero value.
func (s Setting[T]) Get(st Settings, project Scope) T {
	v, err := s.conv(st.resolve(project, *s.def))
	if err != nil { // cannot happen: resolve returns parsed values only
		return s.dflt
	}
	return v
}

func (s Setting[T]) definition() *SettingDef { return s.def }

// declared is any Setting[T].
type declared interface{ definition() *SettingDef }

func define[T any](d SettingDef, dflt T, format func(T) string, conv func(string) (T, error)) Setting[T] {
	d.Default = format(dflt)
	if d.Scopes == 0 {
		d.Scopes = AtOrganization | AtProject
	}
	if canon, err := d.Parse(d.Default); err != nil || canon != d.Default {
		panic(fmt.Sprintf("setting %s: bad default %q: %v", d.Key, d.Default, err))
	}
	return Setting[T]{def: &d, conv: conv, dflt: dflt}
}

func boolSetting(key string, dflt bool, help string) Setting[bool] {
	return define(SettingDef{Key: key, Type: TypeBool, Accepts: "true or false", Help: help},
		dflt, strconv.FormatBool, strconv.ParseBool)
}

func intSetting(key string, dflt, lo, hi int, help string) Setting[int] {
	return define(SettingDef{Key: key, Type: TypeInt, Accepts: fmt.Sprintf("a whole number from %d to %d", lo, hi),
		Help: help, Check: intRange(lo, hi)}, dflt, strconv.Itoa, strconv.Atoi)
}

func durationSetting(key string, dflt time.Duration, help string) Setting[time.Duration] {
	return define(SettingDef{Key: key, Type: TypeDuration, Accepts: "a positive Go duration such as " + shortDuration(dflt), Help: help},
		dflt, shortDuration, time.ParseDuration)
}

func stringSetting(key, dflt, accepts, help string, check func(string) error) Setting[string] {
	return define(SettingDef{Key: key, Type: TypeString, Accepts: accepts, Help: help, Check: check},
		dflt, func(s string) string { return s }, func(s string) (string, error) { return s, nil })
}

func catalogue(settings ...declared) map[string]SettingDef {
	m := make(map[string]SettingDef, len(settings))
	for _, s := range settings {
		d := s.definition()
		if _, dup := m[d.Key]; dup {
			panic("setting " + d.Key + " declared twice")
		}
		m[d.Key] = *d
		settingOrder = append(settingOrder, d.Key)
	}
	return m
}

// SettingKeys lists the catalogue's keys in declaration order.
func SettingKeys() []string {
	return append([]string(nil), settingOrder...)
}

// LookupSetting returns the definition of key, or an error that lists the known keys.
func LookupSetting(key string) (SettingDef, error) {
	d, ok := Catalogue[key]
	if !ok {
		return SettingDef{}, fmt.Errorf("unknown setting %q (known: %s)", key, strings.Join(SettingKeys(), ", "))
	}
	return d, nil
}

// Parse checks v against the setting's type and rules and returns its
// canonical text form ("true", "1m30s", ...).
func (d SettingDef) Parse(v string) (string, error) {
	var canon string
	switch d.Type {
	case TypeBool:
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return "", fmt.Errorf("setting %s takes true or false, not %q", d.Key, v)
		}
		canon = strconv.FormatBool(b)
	case TypeInt:
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return "", fmt.Errorf("setting %s takes a whole number, not %q", d.Key, v)
		}
		canon = strconv.Itoa(n)
	case TypeDuration:
		dur, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil || dur <= 0 {
			return "", fmt.Errorf("setting %s takes a positive duration such as 30m, not %q", d.Key, v)
		}
		canon = shortDuration(dur)
	default:
		canon = v
	}
	if d.Check != nil {
		if err := d.Check(canon); err != nil {
			return "", fmt.Errorf("setting %s: %w", d.Key, err)
		}
	}
	return canon, nil
}

// shortDuration writes 30m rather than 30m0s, 1h rather than 1h0m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// Scope says where an override applies: a whole organization (Project empty)
// or one project.
type Scope struct {
	Forge   string
	Owner   string
	Project string
}

func (s Scope) String() string {
	if s.Project == "" {
		return "organization " + s.Forge + "/" + s.Owner
	}
	return "project " + s.Forge + "/" + s.Owner + "/" + s.Project
}

// Overrides is where set values live (the state store in production).
type Overrides interface {
	// Override returns the value set for key exactly at scope, if any.
	Override(scope Scope, key string) (string, bool)
}

// Settings resolves the effective values of a project.
type Settings struct {
	Overrides Overrides
	// Defaults replace the catalogue's defaults (the service configuration
	// may set some, e.g. AGENT_CREDENTIAL_MOUNTS); checked by CheckDefaults.
	Defaults map[string]string
	// Report, when set, hears of every override skipped while resolving: a
	// value that does not parse, or a scope the setting is not set at.
	Report func(SettingProblem)
}

// CheckDefaults validates replaced defaults at start-up.
func (s Settings) CheckDefaults() error {
	for k, v := range s.Defaults {
		d, err := LookupSetting(k)
		if err != nil {
			return err
		}
		if _, err := d.Parse(v); err != nil {
			return err
		}
	}
	return nil
}

func (s Settings) fallback(d SettingDef) string {
	if v, ok := s.Defaults[d.Key]; ok && v != "" {
		if canon, err := d.Parse(v); err == nil {
			return canon
		}
	}
	return d.Default
}

// Value resolves key for a project as Setting.Get does, in canonical text
// form; for keys only known at run time (`alfred settings get`, the pages).
// The engine reads a setting with its typed declaration instead.
func (s Settings) Value(project Scope, key string) (string, error) {
	d, err := LookupSetting(key)
	if err != nil {
		return "", err
	}
	return s.resolve(project, d), nil
}

// Source says which scope gives key its value for project: "project",
// "organization", "service configuration" or "default".
func (s Settings) Source(project Scope, key string) string {
	d, err := LookupSetting(key)
	if err != nil {
		return ""
	}
	if sc, ok := s.override(project, d); ok {
		if sc.Project != "" {
			return "project"
		}
		return "organization"
	}
	if v := s.Defaults[d.Key]; v != "" {
		if _, err := d.Parse(v); err == nil {
			return "service configuration"
		}
	}
	return "default"
}

// resolve is the project's override, else the organization's, else the
// default. An override that no longer parses (the catalogue changed, or the
// record was written by hand) is reported and skipped for the next scope.
func (s Settings) resolve(project Scope, d SettingDef) string {
	if _, canon, ok := s.lookup(project, d); ok {
		return canon
	}
	return s.fallback(d)
}

func (s Settings) override(project Scope, d SettingDef) (Scope, bool) {
	sc, _, ok := s.lookup(project, d)
	return sc, ok
}

func (s Settings) lookup(project Scope, d SettingDef) (Scope, string, bool) {
	if s.Overrides == nil {
		return Scope{}, "", false
	}
	scopes := []Scope{{Forge: project.Forge, Owner: project.Owner}}
	if project.Project != "" {
		scopes = append([]Scope{project}, scopes...)
	}
	for _, sc := range scopes {
		v, ok := s.Overrides.Override(sc, d.Key)
		if !ok {
			continue
		}
		if p, bad := checkOverride(d, StoredOverride{Scope: sc, Key: d.Key, Value: v}); bad {
			if s.Report != nil {
				s.Report(p)
			}
			continue
		}
		canon, _ := d.Parse(v)
		return sc, canon, true
	}
	return Scope{}, "", false
}

func intRange(lo, hi int) func(string) error {
	return func(v string) error {
		n, _ := strconv.Atoi(v)
		if n < lo || n > hi {
			return fmt.Errorf("%d is outside %d to %d", n, lo, hi)
		}
		return nil
	}
}

func nonEmpty(v string) error {
	if strings.TrimSpace(v) == "" {
		return fmt.Errorf("empty value")
	}
	return nil
}

func checkTrustedAuthors(v string) error {
	if _, err := parseTrusted(v); err != nil {
		return err
	}
	return nil
}

func checkBranchPrefix(v string) error {
	for _, bad := range []string{"..", " ", "~", "^", ":", "?", "*", "[", "\\", "@{"} {
		if strings.Contains(v, bad) {
			return fmt.Errorf("%q cannot be part of a git branch name (it has %q)", v, bad)
		}
	}
	if strings.HasPrefix(v, "/") || strings.HasPrefix(v, "-") {
		return fmt.Errorf("%q cannot start a git branch name", v)
	}
	return nil
}
