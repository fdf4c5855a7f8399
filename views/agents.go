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
	// Shadowed says which credential mount hides the session path, when
	// one does (the main package finds it: pages know no sandbox type).
	Shadowed string `json:"session_path_shadowed_by,omitempty"`
	// Sealed says whether its runs are sealed behind the model gateway
	// ("yes: ...") or what is missing ("no: ..."); empty for an adapter
	// that runs in the bot (the main package says it, as alfred doctor).
	Sealed string `json:"sealed,omitempty"`
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
		inst := installationOf(installs, a.ID, d.Runner)
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
	case d.Runner == "host":
		return false, "the host runner never resumes sessions"
	case !inst.ResumableSessions:
		if inst.Reason != "" {
			return false, inst.Reason
		}
		return false, "version outside the verified range"
	}
	if a.Shadowed != "" {
		return false, a.Shadowed
	}
	return true, ""
}

// agentsData is the agents screen: the rows, and for an admin the token of
// the "Detect again" form.
type agentsData struct {
	Rows      []agentRow
	CSRF      string // empty: no button
	Requested bool   // a detection was just asked for
}

func (d Deps) agentsPage(w http.ResponseWriter, r *http.Request) {
	if !d.Access.signedIn(r) {
		d.signIn(w, r)
		return
	}
	data := agentsData{Rows: d.loadAgents(), Requested: r.URL.Query().Get("detect") == "requested"}
	if who := d.Access.admin(r); who != "" && d.Redetect != nil {
		data.CSRF = d.Access.csrfToken(who)
	}
	d.render(w, r, "agents.html", data)
}

// redetect is the "Detect again" button: an admin's signed form asks the
// detector for a detection, and the screen says it was asked.
func (d Deps) redetect(w http.ResponseWriter, r *http.Request) {
	who := d.Access.admin(r)
	switch {
	case who == "":
		http.Error(w, "only the admins (ALFRED_ADMINS), signed in, may ask for a detection", http.StatusForbidden)
		return
	case !d.Access.checkCSRF(r, who):
		d.Logger.Info("agent detection refused: bad form token", "login", who)
		http.Error(w, "the form's token does not match: reload the agents screen and try again", http.StatusForbidden)
		return
	}
	d.Logger.Info("agent detection requested", "by", "agents screen", "login", who)
	d.Redetect()
	http.Redirect(w, r, "/agents?detect=requested", http.StatusSeeOther)
}

func (d Deps) agentsJSON(w http.ResponseWriter, r *http.Request) {
	if !d.Access.signedIn(r) {
		d.signIn(w, r)
		return
	}
	writeJSON(w, d.loadAgents())
}
