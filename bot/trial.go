package bot

import (
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/alchemic-studio/alfred/state"
)

// An agent trial (AGENT_TRIAL) splits a project's new issues between
// adapters, and models, by declared shares: `claude-code:1,codex:1`, or
// with models `claude-code/claude-opus-4:2,codex/gpt-5:1`. Each issue gets
// its arm at its assignment, recorded in its mailbox (state.Trial), and
// every run of that issue uses the arm's adapter and model, whatever
// AGENT_ADAPTER and AGENT_MODEL say then or later, so the outcomes page
// compares the arms on the same kind of work.
//
// The choice is smooth weighted round-robin over the project's issues
// already assigned under the same value of the setting, counted from their
// mailboxes: the next issue goes to the arm furthest behind its share (the
// first declared on a tie). It is reproducible from the records, and
// balanced from the first issues on (1:1 gives one each per two issues),
// which a hash of the key would only be over many issues. Changing
// the setting starts a new count.

// maxTrialWeight bounds a share.
const maxTrialWeight = 100

// TrialArm is one arm of an agent trial: an adapter, the model it is asked
// for ("" is the adapter's default) and its share of the new issues.
type TrialArm struct {
	Adapter string
	Model   string
	Weight  int
}

// Name is the arm as the setting spells it without its share: "codex" or
// "codex/gpt-5".
func (a TrialArm) Name() string {
	if a.Model == "" {
		return a.Adapter
	}
	return a.Adapter + "/" + a.Model
}

// ParseTrial reads AGENT_TRIAL: comma-separated ADAPTER[/MODEL]:WEIGHT,
// two arms or more, each named once, weights whole numbers from 1 to 100.
// The model may hold "/" and ":" (the share is after the last ":"). An
// empty value is no trial.
func ParseTrial(v string) ([]TrialArm, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	var arms []TrialArm
	seen := map[string]bool{}
	for _, part := range strings.Split(v, ",") {
		a, err := parseArm(strings.TrimSpace(part))
		if err != nil {
			return nil, err
		}
		if seen[a.Name()] {
			return nil, fmt.Errorf("arm %q is named twice", a.Name())
		}
		seen[a.Name()] = true
		arms = append(arms, a)
	}
	if len(arms) < 2 {
		return nil, fmt.Errorf("a trial needs two arms or more, such as claude-code:1,codex:1 (for one adapter, set AGENT_ADAPTER)")
	}
	return arms, nil
}

func parseArm(s string) (TrialArm, error) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return TrialArm{}, fmt.Errorf("arm %q has no share: write ADAPTER[/MODEL]:WEIGHT, such as codex:1", s)
	}
	name, share := s[:i], s[i+1:]
	w, err := strconv.Atoi(share)
	if err != nil || w < 1 || w > maxTrialWeight {
		return TrialArm{}, fmt.Errorf("arm %q: the share %q is not a whole number from 1 to %d", s, share, maxTrialWeight)
	}
	adapter, model, _ := strings.Cut(name, "/")
	if !validAdapterID(adapter) {
		return TrialArm{}, fmt.Errorf("arm %q: %q is not an adapter id (lower-case letters, digits and dashes)", s, adapter)
	}
	if strings.Contains(name, "/") && (model == "" || strings.ContainsAny(model, " ,\t")) {
		return TrialArm{}, fmt.Errorf("arm %q: the model after %q is empty or has a space", s, adapter+"/")
	}
	return TrialArm{Adapter: adapter, Model: model, Weight: w}, nil
}

func validAdapterID(id string) bool {
	if id == "" || id[0] == '-' {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}

// trialText is the canonical text of arms, as recorded in state.Trial.Setting.
func trialText(arms []TrialArm) string {
	parts := make([]string, len(arms))
	for i, a := range arms {
		parts[i] = a.Name() + ":" + strconv.Itoa(a.Weight)
	}
	return strings.Join(parts, ",")
}

func checkTrial(v string) error {
	_, err := ParseTrial(v)
	return err
}

// pickArm is the smooth weighted round-robin's next arm, given how many
// issues each arm (by Name) already has: the one furthest behind its share
// of the next issue, weight*(n+1)/total - assigned, compared in whole
// numbers; the first declared on a tie.
func pickArm(arms []TrialArm, assigned map[string]int) int {
	total, n := 0, 0
	for _, a := range arms {
		total += a.Weight
		n += assigned[a.Name()]
	}
	best, bestLag := 0, 0
	for i, a := range arms {
		lag := a.Weight*(n+1) - assigned[a.Name()]*total
		if i == 0 || lag > bestLag {
			best, bestLag = i, lag
		}
	}
	return best
}

// trialTally holds the arms chosen and not yet seen in the records, so that
// two issues assigned at once are counted each; by mailbox id.
type trialTally struct {
	mu      sync.Mutex
	pending map[string]pendingArm
}

// pendingArm is an arm chosen for an issue of project.
type pendingArm struct {
	project Scope
	trial   state.Trial
}

// assignTrial gives a new issue its arm when its project runs a trial.
// Called again for the same issue (its start retried), it keeps the arm.
func (e *Engine) assignTrial(mb *state.Mailbox) error {
	sc := scopeOf(mb)
	arms, err := ParseTrial(AgentTrial.Get(e.settings, sc))
	if err != nil || len(arms) == 0 { // resolved values parse: err cannot happen
		return err
	}
	setting := trialText(arms)
	e.trials.mu.Lock()
	defer e.trials.mu.Unlock()
	if p, ok := e.trials.pending[mb.ID]; ok {
		mb.Trial = &p.trial
		return nil
	}
	assigned, err := e.trialCounts(mb, setting)
	if err != nil {
		return fmt.Errorf("count the trial's assignments: %w", err)
	}
	a := arms[pickArm(arms, assigned)]
	t := state.Trial{Arm: a.Name(), Adapter: a.Adapter, Model: a.Model, Setting: setting}
	if a.Adapter == AgentAdapter.Get(e.settings, sc) { // the project's provider and model are this adapter's
		t.Provider = AgentProvider.Get(e.settings, sc)
		if t.Model == "" {
			t.Model = AgentModel.Get(e.settings, sc)
		}
	}
	if e.trials.pending == nil {
		e.trials.pending = map[string]pendingArm{}
	}
	e.trials.pending[mb.ID] = pendingArm{project: sc, trial: t}
	mb.Trial = &t
	e.log.Info("trial arm assigned", "mailbox", mb.ID, "arm", t.Arm, "adapter", t.Adapter, "model", t.Model, "trial", setting)
	return nil
}

// trialCounts counts the project's issues of each arm assigned under
// setting: those recorded, and those chosen here and not recorded yet.
func (e *Engine) trialCounts(mb *state.Mailbox, setting string) (map[string]int, error) {
	arm := map[string]string{} // mailbox id -> arm
	f := state.MailboxFilter{Forge: mb.Forge, Owner: mb.Owner, Project: mb.Project}
	for cursor := ""; ; {
		rows, next, err := e.store.ListMailboxes(f, cursor, 500)
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			if t := r.Mailbox.Trial; t != nil && t.Setting == setting {
				arm[r.Mailbox.ID] = t.Arm
			}
		}
		if next == "" {
			break
		}
		cursor = next
	}
	for id, p := range e.trials.pending {
		if p.project == scopeOf(mb) && p.trial.Setting == setting {
			arm[id] = p.trial.Arm
		}
	}
	out := map[string]int{}
	for _, a := range arm {
		out[a]++
	}
	return out, nil
}

// agentOf is the adapter, provider and model of mb's runs: its trial arm's
// when it has one, else the project's settings.
func (e *Engine) agentOf(mb *state.Mailbox) (adapter, provider, model string) {
	if t := mb.Trial; t != nil {
		return t.Adapter, t.Provider, t.Model
	}
	sc := scopeOf(mb)
	return AgentAdapter.Get(e.settings, sc), AgentProvider.Get(e.settings, sc), AgentModel.Get(e.settings, sc)
}
