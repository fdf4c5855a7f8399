package config

import (
	"fmt"
	"slices"
	"strings"
)

// ForgeKind is what the configuration checks of one forge kind. config
// knows no kind itself: forges/setup registers them, and the root package
// hands them to Load.
type ForgeKind struct {
	Name string // ALFRED_FORGE's value
	// URLOptional: the kind has a default address, so ALFRED_FORGE_URL may
	// stay empty.
	URLOptional bool
	// App: the kind has an App mode (ALFRED_GITHUB_APP_*).
	App bool
}

// kindsPlaceholder stands in a setting's Accepts for the kinds' names.
const kindsPlaceholder = "{forge kinds}"

// Kinds are the forge kinds this configuration was loaded with.
func (c *Config) Kinds() []ForgeKind { return c.kinds }

func kindNamed(kinds []ForgeKind, name string) (ForgeKind, bool) {
	i := slices.IndexFunc(kinds, func(k ForgeKind) bool { return k.Name == name })
	if i < 0 {
		return ForgeKind{}, false
	}
	return kinds[i], true
}

// kindNames are the names of the kinds for which keep says yes, joined as
// "a, b or c".
func kindNames(kinds []ForgeKind, keep func(ForgeKind) bool) string {
	var names []string
	for _, k := range kinds {
		if keep(k) {
			names = append(names, k.Name)
		}
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

func anyKind(ForgeKind) bool { return true }

// accepts is the setting's Accepts with the kinds' names in place.
func (s Setting) accepts(kinds []ForgeKind) string {
	if !strings.Contains(s.Accepts, kindsPlaceholder) {
		return s.Accepts
	}
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = k.Name
	}
	return strings.ReplaceAll(s.Accepts, kindsPlaceholder, strings.Join(names, ", "))
}

// setKind sets ALFRED_FORGE: empty or one of the kinds c was loaded with.
func setKind(c *Config, v string) error {
	if v != "" {
		if _, ok := kindNamed(c.kinds, v); !ok {
			return fmt.Errorf("%q is not allowed", v)
		}
	}
	c.Forge.Kind = v
	return nil
}

// noForge is what is said while no forge is configured.
func (c *Config) noForge() string {
	return "no forge: set ALFRED_FORGE (" + kindNames(c.kinds, anyKind) + ") and ALFRED_FORGE_URL"
}
