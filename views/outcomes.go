package views

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/alchemic-studio/alfred/outcomes"
)

// abandonAfter is the outcomes' abandon threshold: no setting names one yet.
const abandonAfter = outcomes.DefaultAbandonAfter

// days says d in whole days ("30 days"), as a person reads a threshold of
// days; a part of a day is said as a duration.
func days(d time.Duration) string {
	const day = 24 * time.Hour
	if d%day != 0 || d <= 0 {
		return d.String()
	}
	if d == day {
		return "1 day"
	}
	return fmt.Sprintf("%d days", d/day)
}

// outcomesQuery is what /outcomes and /api/outcomes take:
// ?forge=&project=OWNER/NAME&since=, since being an RFC 3339 time, a date
// (2006-01-02, UTC) or a time back from now (30d, 2w, 12h).
type outcomesQuery struct {
	Forge   string
	Project string
	SinceIn string    // as given
	Since   time.Time // zero: every issue
}

func parseOutcomesQuery(r *http.Request, now time.Time) (outcomesQuery, error) {
	v := r.URL.Query()
	q := outcomesQuery{Forge: v.Get("forge"), Project: strings.Trim(v.Get("project"), "/"), SinceIn: strings.TrimSpace(v.Get("since"))}
	if q.Project != "" && !strings.Contains(q.Project, "/") {
		return q, fmt.Errorf("%w: project %q is not OWNER/NAME", errQuery, q.Project)
	}
	if q.SinceIn == "" {
		return q, nil
	}
	since, err := parseSince(q.SinceIn, now)
	if err != nil {
		return q, fmt.Errorf("%w: since %q: %w", errQuery, q.SinceIn, err)
	}
	q.Since = since
	return q, nil
}

// errSince says what since takes.
var errSince = errors.New("not an RFC 3339 time (2026-11-30T09:00:00Z), a date (2026-11-30) nor a positive time back from now (30d, 2w, 12h)")

// parseSince reads an RFC 3339 time, a date, or a duration back from now
// in days (d), weeks (w) or Go's units.
func parseSince(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	var back time.Duration
	switch unit := s[len(s)-1]; unit {
	case 'd', 'w':
		n, err := strconv.Atoi(s[:len(s)-1])
		if err != nil || n <= 0 || n > 100*366 {
			return time.Time{}, errSince
		}
		back = time.Duration(n) * 24 * time.Hour
		if unit == 'w' {
			back *= 7
		}
	default:
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return time.Time{}, errSince
		}
		back = d
	}
	return now.Add(-back), nil
}

// outcomesData is the outcomes page and its JSON: the summary of every
// project shown, and each project's.
type outcomesData struct {
	Forge        string           `json:"forge,omitempty"`
	Project      string           `json:"project,omitempty"`
	Since        *time.Time       `json:"since,omitempty"`
	Now          time.Time        `json:"now"`
	AbandonAfter string           `json:"abandon_after"`
	Overall      outcomes.Summary `json:"overall"`
	Projects     []projectOutcome `json:"projects"`
	Trial        []projectTrial   `json:"trial,omitempty"` // each project's agent trial (outcomes_trial.go)
	// Problems are the records that could not be read (left out).
	Problems []string `json:"problems,omitempty"`

	// the page
	Query         outcomesQuery   `json:"-"`
	OverallTab    []outcomeRow    `json:"-"`
	OverallCharts []outcomeChart  `json:"-"`
	Tables        []projectOutTab `json:"-"`
}

// projectOutcome is one project's summary.
type projectOutcome struct {
	Forge   string           `json:"forge"`
	Project string           `json:"project"` // owner/name
	Summary outcomes.Summary `json:"summary"`
}

// outcomes derives the outcome of every issue of the projects q names that
// the visitor may read, assigned at or after q.Since, and sums them up per
// project and overall.
func (d Deps) outcomes(r *http.Request, q outcomesQuery) outcomesData {
	now := d.now()
	data := outcomesData{Forge: q.Forge, Project: q.Project, Now: now, AbandonAfter: days(abandonAfter), Query: q, Projects: []projectOutcome{}}
	if !q.Since.IsZero() {
		data.Since = &q.Since
	}
	vis := d.visible(r)
	var all []outcomes.Outcome
	for _, p := range d.Records.Projects() {
		if q.Forge != "" && p.Forge != q.Forge || q.Project != "" && p.Owner+"/"+p.Project != q.Project {
			continue
		}
		if !canSee(vis, p.Forge, p.Owner, p.Project) {
			continue
		}
		// Read only once the visitor may read p.
		list, problems := outcomes.Load(r.Context(), d.Records, p, outcomes.Filter{Since: q.Since, Now: now, AbandonAfter: abandonAfter})
		data.Problems = append(data.Problems, problems...)
		all = append(all, list...)
		data.Trial = withTrial(data.Trial, p, list)
		data.Projects = append(data.Projects, projectOutcome{Forge: p.Forge, Project: p.Owner + "/" + p.Project, Summary: outcomes.Summarize(list)})
	}
	data.Overall = outcomes.Summarize(all)
	return data
}

// outcomesJSON is /api/outcomes: ?forge=&project=&since=.
func (d Deps) outcomesJSON(w http.ResponseWriter, r *http.Request) {
	q, err := parseOutcomesQuery(r, d.now())
	if err != nil {
		d.badQuery(w, r, err)
		return
	}
	writeJSON(w, d.outcomes(r, q))
}

// outcomesPage is /outcomes: the same figures as tables, overall and per
// project.
func (d Deps) outcomesPage(w http.ResponseWriter, r *http.Request) {
	q, err := parseOutcomesQuery(r, d.now())
	if err != nil {
		d.badQuery(w, r, err)
		return
	}
	data := d.outcomes(r, q)
	data.OverallTab, data.OverallCharts = outcomeRows(data.Overall), outcomeCharts(data.Overall)
	for _, p := range data.Projects {
		data.Tables = append(data.Tables, projectOutTab{Forge: p.Forge, Project: p.Project, URL: projectURL(p.Forge, ownerOf(p.Project), nameOf(p.Project)),
			Note: p.Summary.Note, Rows: outcomeRows(p.Summary), Charts: outcomeCharts(p.Summary)})
	}
	d.render(w, r, "outcomes.html", data)
}
