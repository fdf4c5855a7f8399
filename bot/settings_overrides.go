package bot

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"

	"github.com/alchemic-studio/alfred/state"
)

// StoredOverride is one override as the state branch holds it.
type StoredOverride struct {
	Scope Scope
	Key   string
	Value string
}

// SettingProblem is an override the bot does not use: its key is not in the
// catalogue, its value does not parse for the setting's type, or the setting
// is not set at its scope. The setting keeps its next scope's value.
type SettingProblem struct {
	StoredOverride
	Unknown bool  // the key is not in the catalogue
	Err     error // why it is ignored
}

func (p SettingProblem) Error() string {
	return fmt.Sprintf("%s: %s=%q ignored: %v", p.Scope, p.Key, p.Value, p.Err)
}

// Fix says how to get rid of the problem.
func (p SettingProblem) Fix() string {
	flag := "-org " + p.Scope.Forge + ":" + p.Scope.Owner // named by forge: right with several
	if p.Scope.Project != "" {
		flag = "-project " + p.Scope.Forge + ":" + p.Scope.Owner + "/" + p.Scope.Project
	}
	if p.Unknown {
		return "alfred settings unset " + p.Key + " " + flag + " (alfred settings list names the settings)"
	}
	return "alfred settings set " + p.Key + " VALUE " + flag + ", or unset it"
}

// checkOverride tells whether o is one the bot ignores, and why.
func checkOverride(d SettingDef, o StoredOverride) (SettingProblem, bool) {
	if !d.Scopes.allows(o.Scope) {
		return SettingProblem{StoredOverride: o, Err: fmt.Errorf("setting %s is set at %s scope only", d.Key, d.Scopes)}, true
	}
	if _, err := d.Parse(o.Value); err != nil {
		return SettingProblem{StoredOverride: o, Err: err}, true
	}
	return SettingProblem{}, false
}

// CheckOverrides returns the overrides of list the bot ignores.
func CheckOverrides(list []StoredOverride) []SettingProblem {
	var out []SettingProblem
	for _, o := range list {
		d, err := LookupSetting(o.Key)
		if err != nil {
			out = append(out, SettingProblem{StoredOverride: o, Unknown: true, Err: fmt.Errorf("%s is not a setting", o.Key)})
			continue
		}
		if p, bad := checkOverride(d, o); bad {
			out = append(out, p)
		}
	}
	return out
}

// All returns every override of the state branch, in path order. A record
// that cannot be read is in the error, the others are returned.
func (o StoreOverrides) All() ([]StoredOverride, error) {
	var out []StoredOverride
	var errs []error
	for _, p := range o.Store.List("settings") {
		raw, err := o.Store.Get(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var r state.SettingOverride
		if err := json.Unmarshal(raw, &r); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p, err))
			continue
		}
		out = append(out, StoredOverride{Scope: Scope{Forge: r.Forge, Owner: r.Owner, Project: r.Project},
			Key: r.Key, Value: overrideText(r.Value)})
	}
	return out, errors.Join(errs...)
}

// engineSettings are the engine's settings: the state branch's overrides,
// each ignored one logged once at Warn, all of them at start.
func engineSettings(cfg Config) Settings {
	o := StoreOverrides{cfg.Store}
	s := Settings{Overrides: o, Defaults: cfg.Defaults, Report: warnOnce(cfg.Logger)}
	all, err := o.All()
	if err != nil {
		cfg.Logger.Warn("some setting overrides cannot be read", "err", err)
	}
	for _, p := range CheckOverrides(all) {
		s.Report(p)
	}
	return s
}

// warnOnce logs each problem once per process.
func warnOnce(log *slog.Logger) func(SettingProblem) {
	var mu sync.Mutex
	seen := map[StoredOverride]bool{}
	return func(p SettingProblem) {
		mu.Lock()
		defer mu.Unlock()
		if seen[p.StoredOverride] {
			return
		}
		seen[p.StoredOverride] = true
		msg := "setting override ignored"
		if p.Unknown {
			msg = "unknown setting in the state branch, ignored"
		}
		log.Warn(msg, "scope", p.Scope.String(), "key", p.Key, "value", p.Value, "reason", p.Err.Error(), "fix", p.Fix())
	}
}

// Reference writes the catalogue as the Markdown table of the README's
// project settings (`alfred config reference`).
func Reference(w io.Writer) error {
	var b strings.Builder
	b.WriteString("| setting | type | default | accepts | scopes | what it does |\n|---|---|---|---|---|---|\n")
	for _, k := range SettingKeys() {
		d := Catalogue[k]
		def := "`" + d.Default + "`"
		if d.Default == "" {
			def = "(empty)"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s |\n", d.Key, d.Type, def, d.Accepts, d.Scopes, d.Help)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
