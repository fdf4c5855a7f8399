package bot

import (
	"github.com/alchemic-studio/alfred/agents"
	botrun "github.com/alchemic-studio/alfred/bot/run"
	"github.com/alchemic-studio/alfred/gateway"
	"github.com/alchemic-studio/alfred/sandbox"
	"github.com/alchemic-studio/alfred/state"
)

// seal seals spec as the engine's runner seals a run of the project of
// scope, with that project's settings (bot/run's Runner.Seal).
func (e *Engine) seal(runID string, sc Scope, a agents.Adapter, spec *sandbox.Spec) (*gateway.Session, error) {
	mb := &state.Mailbox{Forge: sc.Forge, Owner: sc.Owner, Project: sc.Project}
	return e.runner.(*botrun.Runner).Seal(runID, e.runSettings(mb), a, spec)
}

// configure writes a's home files into dir and mounts them in spec as the
// runner does after the seal (bot/run's Runner.Configure).
func (e *Engine) configure(dir string, a agents.Adapter, spec *sandbox.Spec) error {
	return e.runner.(*botrun.Runner).Configure(dir, a, spec)
}

// unseal closes a sealed run's gateway session as the runner does.
func (e *Engine) unseal(s *gateway.Session, run *state.Run) {
	e.runner.(*botrun.Runner).Unseal(s, run)
}

// meterBudget hands the token budget to gw as a run of mb does.
func (e *Engine) meterBudget(mb *state.Mailbox, gw *gateway.Session) error {
	return botrun.MeterBudget(e.runSettings(mb), gw)
}
