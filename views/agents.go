package views

import (
	"net/http"

	"github.com/alchemic-studio/alfred/state"
)

// Agent is what the agents screen knows of one adapter besides its detection.
type Agent struct {
	ID               string `json:"adapter_id"`
	Kind             string `json:"kind"` // "local" or "api"
	Resumable        bool   `json:"declares_resumable_sessions"`
	SessionStatePath string `json:"session_state_path,omitempty"`
}

// agentRow is one line of the agents screen.
type agentRow struct {
	Agent
	Installed    bool   `json:"installed"`
	Version      string `json:"version,omitempty"`
	Runner       string `json:"runner"`
	Image        string `json:"image,omitempty"`
	ResumesHere  bool   `json:"resumes_sessions"`
	WhyNot       string `json:"why_not,omitempty"`
	DetectedWhen string `json:"detected_at,omitempty"`
}

func (d Deps) loadAgents() []agentRow {
	installs, _ := d.Records.Installations()
	var rows []agentRow
	for _, a := range d.Agents {
		row := agentRow{Agent: a, Runner: d.Runner}
		var inst *state.AgentInstallation
		for i := range installs {
			if installs[i].AdapterID == a.ID && installs[i].Runner == d.Runner {
				inst = &installs[i]
			}
		}
		if inst != nil {
			row.Installed, row.Version, row.Image = true, inst.Version, inst.Image
			row.DetectedWhen = inst.DetectedAt.UTC().Format("2006-01-02 15:04 UTC")
		}
		row.ResumesHere, row.WhyNot = d.resumable(a, inst)
		rows = append(rows, row)
	}
	return rows
}

// resumable applies the adapter-wide conditions of the session rules: those
// that do not depend on a mailbox or a project's settings.
func (d Deps) resumable(a Agent, inst *state.AgentInstallation) (bool, string) {
	switch {
	case !a.Resumable:
		return false, "the adapter does not declare resumable sessions"
	case inst == nil:
		return false, "not detected on the " + d.Runner + " runner"
	case d.Runner != "image":
		return false, "the host runner never resumes sessions"
	case !inst.ResumableSessions:
		if inst.Reason != "" {
			return false, inst.Reason
		}
		return false, "version outside the verified range"
	}
	if m, ok := d.Credentials.Overlap(a.ID, a.SessionStatePath); ok {
		return false, "credential mount " + m.Container + " overlaps the session path " + a.SessionStatePath
	}
	return true, ""
}

func (d Deps) agentsPage(w http.ResponseWriter, r *http.Request) {
	if !d.Access.signedIn(r) {
		d.signIn(w, r)
		return
	}
	render(w, d.Logger, "agents.html", d.loadAgents())
}

func (d Deps) agentsJSON(w http.ResponseWriter, r *http.Request) {
	if !d.Access.signedIn(r) {
		d.signIn(w, r)
		return
	}
	writeJSON(w, d.loadAgents())
}
