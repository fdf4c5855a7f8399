package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/alchemic-studio/alfred/bot"
	"github.com/alchemic-studio/alfred/config"
	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/state"
	"github.com/alchemic-studio/alfred/views"
)

// `alfred settings get|set|unset|list`, the overrides of the state branch,
// and the settings in force on a project for its page.

// settingsGet is `alfred settings get KEY -project OWNER/NAME` (or -org).
func settingsGet(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var sf scopeFlags
	c, rest, err := load("settings get", args, stderr, sf.add)
	if err != nil {
		return err
	}
	if len(rest) != 1 {
		return errUsage("settings get takes one KEY")
	}
	sc, err := sf.scope(c)
	if err != nil {
		return err
	}
	st, err := openReadOnly(ctx, c)
	if err != nil {
		return err
	}
	defer st.Close()
	v, err := bot.Settings{Overrides: bot.StoreOverrides{Store: st}}.Value(sc, rest[0])
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, v)
	return nil
}

// settingsSet is `alfred settings set KEY VALUE` and `alfred settings unset KEY`.
func settingsSet(ctx context.Context, args []string, stdout, stderr io.Writer, set bool) error {
	var sf scopeFlags
	c, rest, err := load("settings", args, stderr, sf.add)
	if err != nil {
		return err
	}
	if set && len(rest) != 2 || !set && len(rest) != 1 {
		return errUsage("settings set takes KEY VALUE; settings unset takes KEY")
	}
	sc, err := sf.scope(c)
	if err != nil {
		return err
	}
	d, err := bot.LookupSetting(rest[0])
	if err != nil {
		return err
	}
	scope := state.ScopeProject
	if sc.Project == "" {
		scope = state.ScopeOrganization
	}
	st, err := state.Open(ctx, c.StateDir, state.Options{})
	if err != nil {
		return fmt.Errorf("%w (settings are written while the server is stopped)", err)
	}
	defer st.Close()
	if !set {
		return st.Update(ctx, func(tx *state.Tx) error {
			return tx.DeleteSetting(scope, sc.Forge, sc.Owner, sc.Project, d.Key)
		})
	}
	canon, err := d.Parse(rest[1])
	if err != nil {
		return err
	}
	if d.Key == bot.AgentTrial.Key() {
		if err := checkTrialArms(c, st, canon); err != nil {
			return err
		}
	}
	raw, _ := json.Marshal(canon)
	err = st.Update(ctx, func(tx *state.Tx) error {
		return tx.PutSetting(state.SettingOverride{Scope: scope, Forge: sc.Forge, Owner: sc.Owner, Project: sc.Project,
			Key: d.Key, Value: raw, UpdatedAt: time.Now()})
	})
	if err == nil {
		fmt.Fprintf(stdout, "%s = %s at %s scope\n", d.Key, canon, scope)
	}
	return err
}

// settingsList is `alfred settings list`: the catalogue, then the overrides
// of the state branch (when there is one), flagging those the bot ignores.
func settingsList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, rest, err := load("settings list", args, stderr, nil)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return errUsage("settings list takes no argument")
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tTYPE\tDEFAULT\tSCOPES\tWHAT IT DOES")
	for _, k := range bot.SettingKeys() {
		d := bot.Catalogue[k]
		fmt.Fprintf(tw, "%s\t%s\t%q\t%s\t%s\n", d.Key, d.Type, d.Default, d.Scopes, d.Help)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	all, problems, found, err := storedOverrides(ctx, c)
	if found {
		if err := writeOverrides(stdout, all, problems); err != nil {
			return err
		}
	}
	return err
}

// scopeFlags reads -org OWNER or -project OWNER/NAME.
type scopeFlags struct{ org, project string }

func (s *scopeFlags) add(fs *flag.FlagSet) {
	fs.StringVar(&s.org, "org", "", "organization scope: [FORGE:]OWNER")
	fs.StringVar(&s.project, "project", "", "project scope: [FORGE:]OWNER/NAME")
}

func (s *scopeFlags) scope(c *config.Config) (bot.Scope, error) {
	switch {
	case (s.org == "") == (s.project == ""):
		return bot.Scope{}, errUsage("give exactly one of -org OWNER and -project OWNER/NAME")
	case s.org != "":
		name, owner, ok := strings.Cut(s.org, ":")
		if !ok {
			name, owner = "", s.org
		}
		f, err := c.ForgeNamed(name)
		return bot.Scope{Forge: f.Name, Owner: owner}, err
	}
	p, _, err := parseProject(c, s.project)
	return bot.Scope{Forge: p.Forge, Owner: p.Owner, Project: p.Name}, err
}

// storedOverrides reads every setting override of the state branch and the
// ones the bot ignores; found is false when there is no state repository yet.
func storedOverrides(ctx context.Context, c *config.Config) (all []bot.StoredOverride, problems []bot.SettingProblem, found bool, err error) {
	st, err := openReadOnly(ctx, c)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, false, nil
	}
	if err != nil {
		return nil, nil, false, err
	}
	defer st.Close()
	all, err = bot.StoreOverrides{Store: st}.All()
	return all, bot.CheckOverrides(all), true, err
}

// writeOverrides lists the overrides of the state branch, saying which the
// bot ignores and why.
func writeOverrides(w io.Writer, all []bot.StoredOverride, problems []bot.SettingProblem) error {
	why := map[bot.StoredOverride]string{}
	for _, p := range problems {
		why[p.StoredOverride] = "IGNORED: " + p.Err.Error()
		if p.Unknown {
			why[p.StoredOverride] = "UNKNOWN setting, ignored"
		}
	}
	if len(all) == 0 {
		_, err := fmt.Fprintln(w, "\nNo override in the state branch: every setting has its default.")
		return err
	}
	fmt.Fprintf(w, "\nOverrides in the state branch (%d, %d ignored):\n", len(all), len(problems))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SCOPE\tKEY\tVALUE\t")
	for _, o := range all {
		fmt.Fprintf(tw, "%s\t%s\t%q\t%s\n", o.Scope, o.Key, o.Value, why[o])
	}
	return tw.Flush()
}

// projectSettings tells the project page the settings in force on a project,
// resolved as the engine resolves them (bot.Settings), and where each value
// comes from.
type projectSettings struct {
	store    *state.Store
	defaults map[string]string // the service configuration's (bot.Config.Defaults)
}

// Effective implements views.ProjectSettings.
func (s projectSettings) Effective(p forges.Project) ([]views.Setting, error) {
	resolve := bot.Settings{Overrides: bot.StoreOverrides{Store: s.store}, Defaults: s.defaults}
	project := bot.Scope{Forge: p.Forge, Owner: p.Owner, Project: p.Name}
	var out []views.Setting
	for _, key := range bot.SettingKeys() {
		v, err := resolve.Value(project, key)
		if err != nil {
			return out, err
		}
		out = append(out, views.Setting{Key: key, Value: v, Help: bot.Catalogue[key].Help, Source: resolve.Source(project, key)})
	}
	return out, nil
}
