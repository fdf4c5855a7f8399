package views

import (
	"net/http"
	"slices"
	"strings"

	"github.com/gorilla/mux"

	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/internal/redact"
	"github.com/alchemic-studio/alfred/state"
)

// ProjectSettings tells the per-project settings in force (the main package
// reads them from the state store as the engine resolves them).
type ProjectSettings interface {
	Effective(p forges.Project) ([]Setting, error)
}

// Setting is one setting in force on a project and where its value comes
// from: "project", "organization", "service configuration" or "default".
type Setting struct {
	Key    string `json:"key"`
	Value  string `json:"value"`
	Source string `json:"source"`
	Help   string `json:"help,omitempty"`
}

// projectData is a project's page and its JSON.
type projectData struct {
	Project  forges.Project `json:"-"`
	Name     string         `json:"project"`
	Forge    string         `json:"forge"`
	Settings []Setting      `json:"settings"`
	// the page
	Form     filterForm  `json:"-"`
	Sections []section   `json:"-"`
	Charts   []chartView `json:"-"`
	// the JSON: its mailboxes, paged, and its days
	Items []mailboxItem    `json:"items"`
	Next  string           `json:"next"`
	Daily []state.DayTotal `json:"daily"`
}

// projectOfPath reads /projects/{forge}/{owner...}/{name}.
func projectOfPath(r *http.Request) (forges.Project, bool) {
	v := mux.Vars(r)
	path := strings.Trim(v["path"], "/")
	i := strings.LastIndex(path, "/")
	if i <= 0 || i == len(path)-1 {
		return forges.Project{}, false
	}
	return forges.Project{Forge: v["forge"], Owner: path[:i], Name: path[i+1:]}, true
}

// loadProject answers the request for a project it may not read, or that
// has no mailbox, and returns false then; else the project and the query,
// its filters narrowed to the project.
func (d Deps) loadProject(w http.ResponseWriter, r *http.Request) (forges.Project, listQuery, bool) {
	p, ok := projectOfPath(r)
	if !ok {
		http.Error(w, "not found", http.StatusNotFound)
		return p, listQuery{}, false
	}
	if !d.guard(w, r, p) {
		return p, listQuery{}, false
	}
	if !slices.Contains(d.Records.Projects(), state.ProjectRef{Forge: p.Forge, Owner: p.Owner, Project: p.Name}) {
		d.notFound(w, r, state.ErrNotFound)
		return p, listQuery{}, false
	}
	q, err := parseQuery(r)
	if err != nil {
		d.badQuery(w, r, err)
		return p, q, false
	}
	q.Forge, q.Project = p.Forge, p.FullName()
	return p, q, true
}

func (d Deps) projectSettings(p forges.Project) []Setting {
	if d.Settings == nil {
		return nil
	}
	list, err := d.Settings.Effective(p)
	if err != nil {
		d.Logger.Warn("project settings", "project", p.FullName(), "err", err)
	}
	for i := range list {
		list[i].Value = redact.Secrets(list[i].Value, d.Secrets)
	}
	return list
}

// projectPage is /projects/{forge}/{owner}/{name}: the project's mailboxes
// in the overview's sections, its charts, and its settings in force.
func (d Deps) projectPage(w http.ResponseWriter, r *http.Request) {
	p, q, ok := d.loadProject(w, r)
	if !ok {
		return
	}
	vis := d.visible(r)
	data := projectData{Project: p, Name: p.FullName(), Forge: p.Forge, Settings: d.projectSettings(p)}
	data.Form = filterForm{Action: projectURL(p.Forge, p.Owner, p.Name), Query: q, Statuses: d.Statuses.All(), Project: true}
	var err error
	if data.Sections, err = d.sections(q.mailboxFilter(vis)); err != nil {
		d.listError(w, r, err)
		return
	}
	data.Charts = d.charts(q.runFilter(vis))
	d.render(w, r, "project.html", data)
}

// projectJSON is /api/projects/{forge}/{owner}/{name}: the settings, the
// project's mailboxes paged as /api/mailboxes pages them, and its days.
func (d Deps) projectJSON(w http.ResponseWriter, r *http.Request) {
	p, q, ok := d.loadProject(w, r)
	if !ok {
		return
	}
	vis := d.visible(r)
	data := projectData{Project: p, Name: p.FullName(), Forge: p.Forge, Settings: d.projectSettings(p)}
	items, next, err := d.mailboxList(q, vis)
	if err != nil {
		d.listError(w, r, err)
		return
	}
	data.Items, data.Next = items, next
	now := d.now()
	data.Daily = d.Records.Daily(q.runFilter(vis), now.AddDate(0, 0, 1-chartDays), now)
	writeJSON(w, data)
}
