package views

import (
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/alchemic-studio/alfred/state"
)

// Statuses are the lifecycle's mailbox statuses by who they wait for: the
// overview's sections. The main package fills them from the lifecycle
// table (lifecycle.StatusesWaiting, bot/lifecycle), the one place they are declared.
type Statuses struct {
	Person, Work, Done []string
}

// All lists every status, in the order of the sections.
func (s Statuses) All() []string { return slices.Concat(s.Person, s.Work, s.Done) }

// How many rows each section of the overview shows at most.
const (
	needLimit     = 100
	progressLimit = 100
	doneLimit     = 25
)

// mailboxItem is one row of the overview and project page, and one item of
// /api/mailboxes.
type mailboxItem struct {
	Mailbox      state.Mailbox     `json:"mailbox"`
	URL          string            `json:"url"`
	ProjectURL   string            `json:"project_url"`
	LastRun      *state.Run        `json:"last_run,omitempty"`
	LastSession  *state.LLMSession `json:"last_session,omitempty"`
	Runs         int               `json:"runs"`
	InputTokens  int64             `json:"input_tokens"`
	OutputTokens int64             `json:"output_tokens"`
	CostUSD      float64           `json:"cost_usd"`
	// PhaseSince is when the current phase began: the last run's start,
	// else the mailbox's last change; For says how long ago, in words.
	PhaseSince time.Time `json:"phase_since"`
	For        string    `json:"-"`
}

func (d Deps) mailboxItem(row state.MailboxRow, now time.Time) mailboxItem {
	mb := row.Mailbox
	it := mailboxItem{Mailbox: mb, URL: "/mailboxes/" + mb.ID, ProjectURL: projectURL(mb.Forge, mb.Owner, mb.Project),
		LastSession: row.LastSession, Runs: row.Runs, InputTokens: row.InputTokens, OutputTokens: row.OutputTokens,
		CostUSD: row.CostUSD, PhaseSince: mb.UpdatedAt}
	if row.LastRun != nil {
		run := d.listedRun(*row.LastRun)
		it.LastRun = &run
		if !run.StartedAt.IsZero() {
			it.PhaseSince = run.StartedAt
		}
	}
	it.For = since(it.PhaseSince, now)
	return it
}

// listedRun is a run as the lists show it: redacted, without its output.
func (d Deps) listedRun(r state.Run) state.Run {
	r = d.redactRun(r)
	r.Log, r.Input = "", ""
	return r
}

// live tells whether the item's last run is still queued or running.
func (it mailboxItem) live() bool {
	return it.LastRun != nil && (it.LastRun.Status == state.RunQueued || it.LastRun.Status == state.RunRunning)
}

// Tokens is input and output tokens together.
func (it mailboxItem) Tokens() int64 { return it.InputTokens + it.OutputTokens }

// since words the time from t to now: "45s", "3h 12m", "2d 4h".
func since(t, now time.Time) string {
	if t.IsZero() {
		return "—"
	}
	d := now.Sub(t)
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh %dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd %dh", int(d.Hours())/24, int(d.Hours())%24)
}

// projectURL is a project's page; an owner's slashes (GitLab subgroups)
// stay path separators.
func projectURL(forge, owner, name string) string {
	parts := []string{url.PathEscape(forge)}
	for _, p := range strings.Split(owner, "/") {
		parts = append(parts, url.PathEscape(p))
	}
	return "/projects/" + strings.Join(append(parts, url.PathEscape(name)), "/")
}

// section is one part of the overview: the mailboxes that need a person,
// those in progress, those recently done.
type section struct {
	Name, Title, Empty string
	Rows               []mailboxItem
	More               bool // more rows than shown: filter to see them
}

// Count is the number of rows shown.
func (s section) Count() int { return len(s.Rows) }

// sections reads the overview's three sections under f (the visitor's
// filters and access check): statuses that wait for a person or quarantined
// events first, then the work in progress (a merge request's mailbox, which
// has no status, while its run goes), then what is done.
func (d Deps) sections(f state.MailboxFilter) ([]section, error) {
	now := d.now()
	need, seen, more, err := d.needRows(f, now)
	if err != nil {
		return nil, err
	}
	progress, moreP, err := d.sectionRows(f, slices.Concat(d.Statuses.Work, []string{""}), progressLimit, now,
		func(it mailboxItem) bool { return !seen[it.Mailbox.ID] && (it.Mailbox.Status != "" || it.live()) })
	if err != nil {
		return nil, err
	}
	done, moreD, err := d.sectionRows(f, slices.Concat(d.Statuses.Done, []string{""}), doneLimit, now,
		func(it mailboxItem) bool { return !seen[it.Mailbox.ID] && (it.Mailbox.Status != "" || !it.live()) })
	if err != nil {
		return nil, err
	}
	return []section{
		{Name: "needs-you", Title: "Needs a person", Empty: "Nothing waits for anyone.", Rows: need, More: more},
		{Name: "in-progress", Title: "In progress", Empty: "Nothing in progress.", Rows: progress, More: moreP},
		{Name: "done", Title: "Recently done", Empty: "Nothing done yet.", Rows: done, More: moreD},
	}, nil
}

// needRows is the first section: the waiting statuses, and any mailbox
// with quarantined events, most recently updated first; seen holds their ids.
func (d Deps) needRows(f state.MailboxFilter, now time.Time) ([]mailboxItem, map[string]bool, bool, error) {
	waiting, more, err := d.sectionRows(f, d.Statuses.Person, needLimit, now, nil)
	if err != nil {
		return nil, nil, false, err
	}
	qf := f
	qf.Quarantined = true
	quarantined, moreQ, err := d.sectionRows(qf, nil, needLimit, now, nil)
	if err != nil {
		return nil, nil, false, err
	}
	seen := map[string]bool{}
	var rows []mailboxItem
	for _, it := range slices.Concat(waiting, quarantined) {
		if !seen[it.Mailbox.ID] {
			seen[it.Mailbox.ID] = true
			rows = append(rows, it)
		}
	}
	slices.SortStableFunc(rows, func(a, b mailboxItem) int { return b.Mailbox.UpdatedAt.Compare(a.Mailbox.UpdatedAt) })
	return rows, seen, more || moreQ, nil
}

// sectionRows lists the mailboxes of f whose status is among statuses (and
// among f's own, when it sets some; nil: any) and that keep accepts.
func (d Deps) sectionRows(f state.MailboxFilter, statuses []string, limit int, now time.Time, keep func(mailboxItem) bool) ([]mailboxItem, bool, error) {
	if statuses != nil {
		if f.Statuses != nil {
			statuses = slices.DeleteFunc(slices.Clone(statuses), func(s string) bool { return !slices.Contains(f.Statuses, s) })
			if len(statuses) == 0 {
				return nil, false, nil
			}
		}
		f.Statuses = statuses
	}
	rows, next, err := d.Records.ListMailboxes(f, "", limit)
	if err != nil {
		return nil, false, fmt.Errorf("list mailboxes: %w", err)
	}
	var out []mailboxItem
	for _, row := range rows {
		if it := d.mailboxItem(row, now); keep == nil || keep(it) {
			out = append(out, it)
		}
	}
	return out, next != "", nil
}

func (d Deps) now() time.Time {
	if d.Clock != nil {
		return d.Clock()
	}
	return time.Now()
}

// filterForm is what the filter form offers: the projects the visitor may
// see, their forges, the statuses, and the values in force.
type filterForm struct {
	Action   string
	Query    listQuery
	Forges   []string
	Projects []string // owner/name
	Statuses []string
	Project  bool // a project page: no forge or project choice
}

func (d Deps) filterForm(action string, q listQuery, vis func(forge, owner, project string) bool) filterForm {
	f := filterForm{Action: action, Query: q, Statuses: d.Statuses.All()}
	for _, p := range d.Records.Projects() {
		if !canSee(vis, p.Forge, p.Owner, p.Project) {
			continue
		}
		if !slices.Contains(f.Forges, p.Forge) {
			f.Forges = append(f.Forges, p.Forge)
		}
		if name := p.Owner + "/" + p.Project; !slices.Contains(f.Projects, name) {
			f.Projects = append(f.Projects, name)
		}
	}
	slices.Sort(f.Projects)
	return f
}

// overviewData is the home page.
type overviewData struct {
	Version  string
	Health   health // the health line: readiness and notes
	Missing  []string
	SignIn   bool // access control, and nobody signed in: only public projects show
	Records  bool
	Form     filterForm
	Sections []section
	Charts   []chartView
}

// overview is the home page: the mailboxes that need a person, those in
// progress and those recently done, and the last 30 days in charts, all
// under the visitor's filters and access.
func (d Deps) overview(w http.ResponseWriter, r *http.Request) {
	data := overviewData{Version: d.Version, Records: d.Records != nil, Health: d.health(r.Context())}
	if d.Config != nil {
		data.Missing = d.Config.Missing()
	}
	if d.Records == nil {
		d.render(w, r, "home.html", data)
		return
	}
	q, err := parseQuery(r)
	if err != nil {
		d.badQuery(w, r, err)
		return
	}
	vis := d.visible(r)
	data.SignIn = d.Access != nil && len(d.Access.SignIns) > 0 && d.Access.login(r) == ""
	data.Form = d.filterForm("/", q, vis)
	if data.Sections, err = d.sections(q.mailboxFilter(vis)); err != nil {
		d.listError(w, r, err)
		return
	}
	data.Charts = d.charts(q.runFilter(vis))
	d.render(w, r, "home.html", data)
}

// kindMark is "#" for an issue, "!" for a merge request.
func kindMark(k state.Kind) template.HTML {
	if k == state.KindMR {
		return "!"
	}
	return "#"
}
