package bot

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/alchemic-studio/alfred/sandbox"
)

// SettingType is the type of a per-project setting's value.
type SettingType string

// Setting types.
const (
	TypeBool     SettingType = "bool"
	TypeInt      SettingType = "int"
	TypeString   SettingType = "string"
	TypeDuration SettingType = "duration"
)

// SettingDef is one entry of the settings catalogue: behaviour a team may
// change per organization or per project. Scopes resolve project, then
// organization, then the default.
type SettingDef struct {
	Key     string
	Type    SettingType
	Default string
	Help    string
	// Check refuses a well-typed value that is still wrong (a range, a format).
	Check func(v string) error
}

// Catalogue is every per-project setting, by key.
var Catalogue = catalogue(
	SettingDef{Key: "AGENT_SESSION_RESUME", Type: TypeBool, Default: "true",
		Help: "name each agent CLI session after the issue branch and resume it on the next run"},
	SettingDef{Key: "REQUIRE_PLAN_VALIDATION", Type: TypeBool, Default: "true",
		Help: "wait for ai::validate_plan after the plan; false goes straight on to development"},
	SettingDef{Key: "BRANCH_PREFIX", Type: TypeString, Default: "agent/",
		Help: "prefix of issue branches ({prefix}issue-{iid}-{slug})", Check: checkBranchPrefix},
	SettingDef{Key: "LLM_MAX_RETRIES", Type: TypeInt, Default: "2",
		Help: "failed runs retried before the mailbox is blocked", Check: intRange(0, 20)},
	SettingDef{Key: "CI_FIX_MAX_ATTEMPTS", Type: TypeInt, Default: "3",
		Help: "ci_fix runs before the mailbox is blocked", Check: intRange(0, 50)},
	SettingDef{Key: "CI_FIX_HARD_CAP", Type: TypeInt, Default: "10",
		Help: "ci_fix runs allowed under ai::retry_until_green", Check: intRange(1, 100)},
	SettingDef{Key: "CONFLICT_FIX_MAX_ATTEMPTS", Type: TypeInt, Default: "3",
		Help: "conflict_resolution runs in a row before the mailbox is blocked", Check: intRange(0, 20)},
	SettingDef{Key: "AGENT_ADAPTER", Type: TypeString, Default: "claude-code",
		Help: "adapter that runs the phases (claude-code, codex, opencode, copilot, gemini, grok, api)", Check: nonEmpty},
	SettingDef{Key: "AGENT_PROVIDER", Type: TypeString, Default: "",
		Help: "model provider handed to the adapter (empty: the adapter's default)"},
	SettingDef{Key: "AGENT_MODEL", Type: TypeString, Default: "",
		Help: "model handed to the adapter (empty: the adapter's default)"},
	SettingDef{Key: "AGENT_NETWORK", Type: TypeString, Default: "default",
		Help: "Docker network of agent containers (none cuts them off, model API included)", Check: nonEmpty},
	SettingDef{Key: "AGENT_CREDENTIAL_MOUNTS", Type: TypeString, Default: "",
		Help:  "read-only credential mounts, adapter=/host/path:/home/agent/path, comma-separated",
		Check: func(v string) error { _, err := sandbox.ParseCredentialMounts(v); return err }},
	SettingDef{Key: "RUN_TIMEOUT", Type: TypeDuration, Default: "30m",
		Help: "wall-clock limit of one run"},
)

func catalogue(defs ...SettingDef) map[string]SettingDef {
	m := make(map[string]SettingDef, len(defs))
	for _, d := range defs {
		if _, err := d.Parse(d.Default); err != nil {
			panic(fmt.Sprintf("setting %s: bad default: %v", d.Key, err))
		}
		m[d.Key] = d
	}
	return m
}

// SettingKeys lists the catalogue's keys in order.
func SettingKeys() []string {
	keys := make([]string, 0, len(Catalogue))
	for k := range Catalogue {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
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
// canonical text form ("true", "30m0s", ...).
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
		canon = dur.String()
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

// Scope says where an override applies: a whole organization (Project empty)
// or one project.
type Scope struct {
	Forge   string
	Owner   string
	Project string
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

// Value resolves key for a project: the project's override, else the
// organization's, else the default. An override that no longer parses (the
// catalogue changed) is skipped for the next scope, never trusted.
func (s Settings) Value(project Scope, key string) (string, error) {
	d, err := LookupSetting(key)
	if err != nil {
		return "", err
	}
	if s.Overrides == nil {
		return s.fallback(d), nil
	}
	scopes := []Scope{{Forge: project.Forge, Owner: project.Owner}}
	if project.Project != "" {
		scopes = append([]Scope{project}, scopes...)
	}
	for _, sc := range scopes {
		if v, ok := s.Overrides.Override(sc, key); ok {
			if canon, err := d.Parse(v); err == nil {
				return canon, nil
			}
		}
	}
	return s.fallback(d), nil
}

// Bool resolves a boolean setting; a lookup error yields the default.
func (s Settings) Bool(project Scope, key string) bool {
	v, _ := s.Value(project, key)
	b, _ := strconv.ParseBool(v)
	return b
}

// Int resolves an integer setting.
func (s Settings) Int(project Scope, key string) int {
	v, _ := s.Value(project, key)
	n, _ := strconv.Atoi(v)
	return n
}

// String resolves a text setting.
func (s Settings) String(project Scope, key string) string {
	v, _ := s.Value(project, key)
	return v
}

// Duration resolves a duration setting.
func (s Settings) Duration(project Scope, key string) time.Duration {
	v, _ := s.Value(project, key)
	d, _ := time.ParseDuration(v)
	return d
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
