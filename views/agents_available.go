package views

import (
	"slices"

	"github.com/alchemic-studio/alfred/state"
)

// installationOf is the detection of adapter id on runner the agents
// screen shows (the last one recorded); nil when it was not detected there.
func installationOf(installs []state.AgentInstallation, id, runner string) *state.AgentInstallation {
	var inst *state.AgentInstallation
	for i := range installs {
		if installs[i].AdapterID == id && installs[i].Runner == runner {
			inst = &installs[i]
		}
	}
	return inst
}

// Available lists, sorted, the ids of the agents a project may be given on
// runner, as the agents screen decides: an API adapter (it runs in the bot,
// there is nothing to detect), and a local CLI once detected on that runner.
func Available(list []Agent, installs []state.AgentInstallation, runner string) []string {
	var out []string
	for _, a := range list {
		if a.Kind == "api" || installationOf(installs, a.ID, runner) != nil {
			out = append(out, a.ID)
		}
	}
	slices.Sort(out)
	return out
}
