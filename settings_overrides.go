package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"text/tabwriter"

	"github.com/alchemic-studio/alfred/bot"
	"github.com/alchemic-studio/alfred/config"
	"github.com/alchemic-studio/alfred/forges/setup"
)

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

// checkSettings is doctor's line on the overrides of the state branch: one
// FAIL line for each the bot ignores. No line when the state repository
// cannot be opened (the state line says why).
func (d *doctor) checkSettings(ctx context.Context) []checkLine {
	all, problems, found, err := storedOverrides(ctx, d.c)
	if !found && err == nil {
		return nil
	}
	if err != nil && all == nil {
		return nil
	}
	var out []checkLine
	if err != nil {
		out = append(out, failLine("settings", err.Error(), "repair or remove the record named (alfred state show PATH)"))
	}
	for _, p := range problems {
		out = append(out, failLine("settings", p.Error(), p.Fix()))
	}
	if len(out) == 0 {
		out = append(out, okLine("settings", fmt.Sprintf("%d overrides in the state branch, all of known settings and well typed", len(all))))
	}
	return out
}

// configReference is `alfred config reference`: the process configuration
// and the project settings, as the README's two Markdown tables.
func configReference(w io.Writer) error {
	var b strings.Builder
	b.WriteString("## Process configuration\n\nFlags of `alfred serve`, `ALFRED_*` variables and lines of the `-config` file.\n\n")
	if err := config.Reference(&b, setup.ConfigKinds()); err != nil {
		return err
	}
	b.WriteString("\n## Project settings\n\nSet per organization or project with `alfred settings set`, stored in the state branch; a project's value wins over its organization's, which wins over the default.\n\n")
	if err := bot.Reference(&b); err != nil {
		return err
	}
	_, err := io.WriteString(w, b.String())
	return err
}
