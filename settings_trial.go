package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/alchemic-studio/alfred/bot"
	"github.com/alchemic-studio/alfred/config"
	"github.com/alchemic-studio/alfred/state"
	"github.com/alchemic-studio/alfred/views"
)

// checkTrialArms refuses an AGENT_TRIAL (already well formed) whose arm
// names an adapter this Alfred does not have, or one not available on its
// runner as the agents screen decides (views.Available: a CLI detected
// there, or the API adapter when an API is configured); the error lists
// the available ones.
func checkTrialArms(c *config.Config, st *state.Store, value string) error {
	arms, err := bot.ParseTrial(value)
	if err != nil || len(arms) == 0 {
		return err
	}
	adapters, err := newAdapters(c)
	if err != nil {
		return fmt.Errorf("AGENT_TRIAL: the adapters: %w", err)
	}
	installs, err := st.Installations()
	if err != nil {
		return fmt.Errorf("AGENT_TRIAL: the detected agents: %w", err)
	}
	var list []views.Agent
	for _, id := range slices.Sorted(maps.Keys(adapters)) {
		list = append(list, views.Agent{ID: id, Kind: string(adapters[id].Capabilities().Kind)})
	}
	available := views.Available(list, installs, c.Runner)
	avail := "available: " + strings.Join(available, ", ")
	if len(available) == 0 {
		avail = "none is available: alfred agents detect finds the CLIs"
	}
	for _, a := range arms {
		switch {
		case adapters[a.Adapter] == nil:
			return fmt.Errorf("AGENT_TRIAL: arm %s: no adapter %q (%s)", a.Name(), a.Adapter, avail)
		case !slices.Contains(available, a.Adapter):
			return fmt.Errorf("AGENT_TRIAL: arm %s: adapter %s is not detected on the %s runner (alfred agents detect; %s)", a.Name(), a.Adapter, c.Runner, avail)
		}
	}
	return nil
}

// unavailableTrials says, for each AGENT_TRIAL stored in the state branch
// (all) that parses but names an adapter this Alfred no longer has
// available (an undetected CLI, an API no longer configured), what is
// wrong: its issues' runs would fail at start. Doctor's lines.
func unavailableTrials(ctx context.Context, c *config.Config, all []bot.StoredOverride) ([]string, error) {
	var trials []bot.StoredOverride
	for _, o := range all {
		if _, err := bot.ParseTrial(o.Value); o.Key == bot.AgentTrial.Key() && o.Value != "" && err == nil {
			trials = append(trials, o)
		}
	}
	if len(trials) == 0 {
		return nil, nil
	}
	st, err := openReadOnly(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("AGENT_TRIAL: open the state: %w", err)
	}
	defer st.Close()
	var out []string
	for _, o := range trials {
		if err := checkTrialArms(c, st, o.Value); err != nil {
			out = append(out, fmt.Sprintf("%s: %v", o.Scope, err))
		}
	}
	return out, nil
}
