package views

import (
	"fmt"
	"net/http"

	"github.com/alchemic-studio/alfred/state"
)

// runItem is one row of /runs and one item of /api/runs.
type runItem struct {
	Run     state.Run         `json:"run"`
	URL     string            `json:"url"`
	Mailbox mailboxRef        `json:"mailbox"`
	Session *state.LLMSession `json:"llm_session,omitempty"` // the run's last
	usage
}

// mailboxRef is what a run's row tells of its mailbox.
type mailboxRef struct {
	ID         string     `json:"id"`
	URL        string     `json:"url"`
	Forge      string     `json:"forge"`
	Owner      string     `json:"owner"`
	Project    string     `json:"project"`
	ProjectURL string     `json:"project_url"`
	Kind       state.Kind `json:"kind"`
	IID        int64      `json:"iid"`
	Title      string     `json:"title"`
	IssueURL   string     `json:"issue_url"`
}

// runList reads one page of runs under q and vis, newest first, with their
// tokens, cost and mailbox.
func (d Deps) runList(q listQuery, vis func(forge, owner, project string) bool) ([]runItem, string, error) {
	runs, next, err := d.Records.ListRuns(q.runFilter(vis), q.Cursor, q.Limit)
	if err != nil {
		return nil, "", fmt.Errorf("list runs: %w", err)
	}
	boxes := map[string]mailboxRef{}
	items := make([]runItem, 0, len(runs))
	for _, run := range runs {
		it := runItem{Run: d.listedRun(run), URL: "/runs/" + run.ID, Mailbox: d.mailboxRef(run.MailboxID, boxes)}
		it.Run.Result = ""
		if _, sessions, _ := d.Records.RunWithSessions(run.ID); len(sessions) > 0 {
			it.usage = usageOf(sessions)
			it.Session = &sessions[len(sessions)-1]
		}
		items = append(items, it)
	}
	return items, next, nil
}

// mailboxRef reads a run's mailbox once per page (seen holds those read).
func (d Deps) mailboxRef(id string, seen map[string]mailboxRef) mailboxRef {
	if ref, ok := seen[id]; ok {
		return ref
	}
	ref := mailboxRef{ID: id, URL: "/mailboxes/" + id}
	if k, err := state.ParseMailboxID(id); err == nil {
		ref.Forge, ref.Owner, ref.Project, ref.Kind, ref.IID = k.Forge, k.Owner, k.Project, k.Kind, k.IID
		ref.ProjectURL = projectURL(k.Forge, k.Owner, k.Project)
		if mb, err := d.Records.Mailbox(k); err == nil {
			ref.Title, ref.IssueURL = mb.Title, mb.IssueURL
		}
	}
	seen[id] = ref
	return ref
}

// runsData is the page of runs across all mailboxes.
type runsData struct {
	Query    listQuery
	Items    []runItem
	Next     string
	Statuses []state.RunStatus
	Phases   []string
	Adapters []string
}

// runsPage is /runs: every run the visitor may see, newest first, filtered
// by outcome (?status=), phase and adapter, paged.
func (d Deps) runsPage(w http.ResponseWriter, r *http.Request) {
	q, err := parseQuery(r)
	if err != nil {
		d.badQuery(w, r, err)
		return
	}
	items, next, err := d.runList(q, d.visible(r))
	if err != nil {
		d.listError(w, r, err)
		return
	}
	data := runsData{Query: q, Items: items, Next: q.Next("/runs", next), Statuses: runOutcomes, Phases: d.Phases}
	for _, a := range d.Agents {
		data.Adapters = append(data.Adapters, a.ID)
	}
	d.render(w, r, "runs.html", data)
}
