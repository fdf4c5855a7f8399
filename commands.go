package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/bot"
	"github.com/alchemic-studio/alfred/bot/lifecycle"
	"github.com/alchemic-studio/alfred/config"
	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/forges/setup"
	"github.com/alchemic-studio/alfred/state"
)

// load reads the configuration of a subcommand with its own flags.
func load(name string, args []string, stderr io.Writer, extra func(*flag.FlagSet)) (*config.Config, []string, error) {
	return config.LoadWith(name, args, os.LookupEnv, stderr, setup.ConfigKinds(), extra)
}

// parseProject reads OWNER/NAME (OWNER may be a GitLab group path).
func parseProject(c *config.Config, s string) (forges.Project, config.Forge, error) {
	name, path, ok := strings.Cut(s, ":")
	if !ok {
		name, path = "", s
	}
	f, err := c.ForgeNamed(name)
	if err != nil {
		return forges.Project{}, f, errUsage(fmt.Sprintf("-project %q: %v", s, err))
	}
	i := strings.LastIndex(path, "/")
	if i <= 0 || i == len(path)-1 {
		return forges.Project{}, f, errUsage(fmt.Sprintf("-project %q: want [FORGE:]OWNER/NAME", s))
	}
	return forges.Project{Forge: f.Name, Owner: path[:i], Name: path[i+1:]}, f, nil
}

// labelCatalogue is the bot's labels on forge fc, its status labels in the
// form its ALFRED_STATUS_LABELS chose.
func labelCatalogue(fc config.Forge) []forges.Label { return lifecycle.LabelsWith(statusPrefix(fc)) }

// statusPrefix is the prefix of the status labels on forge fc.
func statusPrefix(fc config.Forge) string {
	return forges.StatusPrefixOf(forges.Kind(fc.Kind), fc.StatusLabels != "colons")
}

// labelsSync is `alfred labels sync -project OWNER/NAME`.
func labelsSync(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var project string
	c, rest, err := load("labels sync", args, stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&project, "project", "", "project OWNER/NAME whose labels to sync")
	})
	if err != nil {
		return err
	}
	if len(rest) > 0 || project == "" {
		return errUsage("labels sync takes -project OWNER/NAME")
	}
	p, fc, err := parseProject(c, project)
	if err != nil {
		return err
	}
	f, _, err := newForge(c, fc, nil)
	if err != nil {
		return err
	}
	catalogue := labelCatalogue(fc)
	created, updated, err := forges.SyncLabels(ctx, f, p, catalogue)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: %d labels created, %d updated, %d already right\n", p.FullName(),
		len(created), len(updated), len(catalogue)-len(created)-len(updated))
	for _, l := range created {
		fmt.Fprintf(stdout, "  created %s\n", l)
	}
	for _, l := range updated {
		fmt.Fprintf(stdout, "  updated %s\n", l)
	}
	return nil
}

// agentsDetect is `alfred agents detect [--refresh]`: it prints what it
// finds and records nothing (the server records at its start). With
// --refresh the installations are recorded again: by the server holding the
// state store, asked with SIGHUP, or by this command when none does.
func agentsDetect(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var refresh bool
	c, rest, err := load("agents detect", args, stderr, func(fs *flag.FlagSet) {
		fs.BoolVar(&refresh, "refresh", false, "record the detection: ask the server holding the state store (SIGHUP), or record it here when none does")
	})
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return errUsage("agents detect takes no argument but --refresh")
	}
	log := newLogger(c, stderr)
	runner, err := newRunner(ctx, c, log)
	if err != nil {
		return err
	}
	adapters, err := newAdapters(c)
	if err != nil {
		return err
	}
	ranges, err := verifiedRanges(c, adapters)
	if err != nil {
		return err
	}
	if refresh {
		return newRefresher(c, runner, adapters, ranges, log).Run(ctx, stdout)
	}
	return agents.DetectCommand(ctx, stdout, runner, baseSpec(c), localCLIs(adapters), ranges)
}

// openReadOnly opens the state repository for inspection, beside a running server.
func openReadOnly(ctx context.Context, c *config.Config) (*state.Store, error) {
	return state.Open(ctx, c.StateDir, state.Options{ReadOnly: true})
}

// stateLog is `alfred state log [-n N] [MAILBOX]`: the branch's history,
// or the audit history of one mailbox (its id, as on its page), with what
// each commit changed in it.
func stateLog(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var n int
	c, rest, err := load("state log", args, stderr, func(fs *flag.FlagSet) {
		fs.IntVar(&n, "n", 20, "how many commits, newest first (0: all)")
	})
	if err != nil {
		return err
	}
	if len(rest) > 1 {
		return errUsage("state log takes at most one MAILBOX id (forge/owner/project/issue|mr/number)")
	}
	st, err := openReadOnly(ctx, c)
	if err != nil {
		return err
	}
	defer st.Close()
	if len(rest) == 1 {
		return st.MailboxLog(ctx, stdout, rest[0], n)
	}
	return st.Log(ctx, stdout, n)
}

// stateShow is `alfred state show PATH`.
func stateShow(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, rest, err := load("state show", args, stderr, nil)
	if err != nil {
		return err
	}
	if len(rest) != 1 {
		return errUsage("state show takes one record PATH (see alfred state log)")
	}
	st, err := openReadOnly(ctx, c)
	if err != nil {
		return err
	}
	defer st.Close()
	return st.Show(ctx, stdout, rest[0])
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
