package views

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"time"

	"github.com/gorilla/mux"

	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/forges/setup"
	"github.com/alchemic-studio/alfred/internal/redact"
	"github.com/alchemic-studio/alfred/state"
)

// Records is what the pages read from the state store.
type Records interface {
	Mailbox(k state.MailboxKey) (state.Mailbox, error)
	Runs(mailboxID string) ([]state.Run, error)
	RunWithSessions(runID string) (state.Run, []state.LLMSession, error)
	Installations() ([]state.AgentInstallation, error)
	// The lists (overview, projects, runs, their API): see state/list.go.
	ListMailboxes(f state.MailboxFilter, cursor string, limit int) ([]state.MailboxRow, string, error)
	ListRuns(f state.RunFilter, cursor string, limit int) ([]state.Run, string, error)
	Daily(f state.RunFilter, since, now time.Time) []state.DayTotal
	Projects() []state.ProjectRef
}

// runView is everything the run page and its JSON show.
type runView struct {
	Run      state.Run          `json:"run"`
	Sessions []state.LLMSession `json:"llm_sessions"`
	Mailbox  state.Mailbox      `json:"mailbox"`
	Prev     string             `json:"prev_run_id,omitempty"`
	Next     string             `json:"next_run_id,omitempty"`
	Live     bool               `json:"live"` // still queued or running: the page refreshes itself
	Stream   bool               `json:"-"`    // Live, and the page follows its output (live.go)
	Timeline timeline           `json:"-"`    // Run.Steps as the page shows them
	Takeover *TakeoverOffer     `json:"-"`    // the session offered to a person with write access
}

// locateRun finds the project of run id from the run's record (a run id
// tells nothing else), and what loads the rest of the run's view once the
// visitor may read it.
func (d Deps) locateRun(id string) (forges.Project, func() (*runView, error), error) {
	run, sessions, err := d.Records.RunWithSessions(id)
	if err != nil {
		return forges.Project{}, nil, fmt.Errorf("run %s: %w", id, err)
	}
	k, err := state.ParseMailboxID(run.MailboxID)
	if err != nil {
		return forges.Project{}, nil, fmt.Errorf("run %s: %w", id, err)
	}
	return projectOfKey(k), func() (*runView, error) { return d.loadRun(run, sessions, k) }, nil
}

// loadRun is the view of run, of mailbox k, with its sessions.
func (d Deps) loadRun(run state.Run, sessions []state.LLMSession, k state.MailboxKey) (*runView, error) {
	mb, err := d.Records.Mailbox(k)
	if err != nil {
		return nil, fmt.Errorf("mailbox of run %s: %w", run.ID, err)
	}
	v := &runView{Run: run, Sessions: sessions, Mailbox: mb, Live: run.Status == state.RunQueued || run.Status == state.RunRunning}
	runs, _ := d.Records.Runs(mb.ID)
	i := slices.IndexFunc(runs, func(r state.Run) bool { return r.ID == run.ID })
	if i > 0 {
		v.Prev = runs[i-1].ID
	}
	if i >= 0 && i+1 < len(runs) {
		v.Next = runs[i+1].ID
	}
	v.Run = d.redactRun(v.Run)
	v.Timeline = d.timelineOf(mb, v.Run, sessions)
	return v, nil
}

// redactRun hides the secrets the service knows in what a run shows, a
// second time (the engine already redacts what it records).
func (d Deps) redactRun(r state.Run) state.Run {
	r.Log = redact.Secrets(r.Log, d.Secrets)
	r.Result = redact.Secrets(r.Result, d.Secrets)
	r.Outcome = redact.Secrets(r.Outcome, d.Secrets)
	r.Steps = d.redactSteps(r.Steps)
	if g := r.Gateway; g != nil {
		c := *g
		c.Refused = make([]string, len(g.Refused))
		for i, s := range g.Refused {
			c.Refused[i] = redact.Secrets(s, d.Secrets)
		}
		r.Gateway = &c
	}
	return r
}

// A locator reads from the id a page's path names ({id}) the project of the
// record, with as little loading as that takes, and returns what loads the
// record itself.
type locator[V any] func(id string) (p forges.Project, load func() (V, error), err error)

// readable answers the request for the record its path names: the project
// first, then the access check on it, and only then the record is loaded.
// It returns the record if the visitor may read it; otherwise it has
// answered, with the same answer for a record that is missing, unreadable
// or on a project the visitor may not read (hidden), and returns false.
func readable[V any](d Deps, w http.ResponseWriter, r *http.Request, locate locator[V]) (V, bool) {
	var zero V
	p, load, err := locate(mux.Vars(r)["id"])
	if err != nil {
		d.notFound(w, r, err)
		return zero, false
	}
	if !d.guard(w, r, p) {
		return zero, false
	}
	v, err := load()
	if err != nil {
		d.notFound(w, r, err)
		return zero, false
	}
	return v, true
}

func (d Deps) runPage(w http.ResponseWriter, r *http.Request) {
	if v, ok := readable(d, w, r, d.locateRun); ok {
		v.Stream = v.Live && d.Live != nil
		v.Takeover = d.takeoverOf(r, v)
		d.render(w, r, "run.html", v)
	}
}

func (d Deps) runJSON(w http.ResponseWriter, r *http.Request) {
	if v, ok := readable(d, w, r, d.locateRun); ok {
		writeJSON(w, v)
	}
}

// projectOfKey is the project of mailbox k.
func projectOfKey(k state.MailboxKey) forges.Project {
	return forges.Project{Forge: k.Forge, Owner: k.Owner, Name: k.Project}
}

type mailboxView struct {
	Mailbox state.Mailbox `json:"mailbox"`
	Runs    []runRow      `json:"runs"`
	Total   usage         `json:"total"` // every run's together, as the CLIs reported it
	// Gateway is what the model gateway counted for the sealed runs
	// together; nil when none was sealed.
	Gateway *state.RunGateway `json:"gateway,omitempty"`
	// Spend is what the runs cost as the issue's budget counts it
	// (state.SpendOf: the gateway's tokens for sealed runs).
	Spend state.Spend `json:"spend"`
	// Session: some run has steps of its session to show.
	Session bool `json:"-"`
}

// addGateway adds a sealed run's gateway figures to the mailbox's.
func (v *mailboxView) addGateway(g *state.RunGateway) {
	if g == nil {
		return
	}
	if v.Gateway == nil {
		v.Gateway = &state.RunGateway{}
	}
	v.Gateway.Requests += g.Requests
	v.Gateway.InputTokens += g.InputTokens
	v.Gateway.OutputTokens += g.OutputTokens
	v.Gateway.RefusedTotal += g.RefusedTotal
}

type runRow struct {
	Run     state.Run         `json:"run"`
	Session *state.LLMSession `json:"llm_session,omitempty"`
	usage
	Timeline timeline `json:"-"` // the run's steps, for the session across runs
}

// usage is the tokens and cost of a run's llm sessions.
type usage struct {
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
}

func (u *usage) add(v usage) {
	u.InputTokens += v.InputTokens
	u.OutputTokens += v.OutputTokens
	u.CostUSD += v.CostUSD
}

// Tokens is input and output tokens together.
func (u usage) Tokens() int64 { return u.InputTokens + u.OutputTokens }

func usageOf(sessions []state.LLMSession) usage {
	var u usage
	for _, s := range sessions {
		u.add(usage{InputTokens: s.InputTokens, OutputTokens: s.OutputTokens, CostUSD: s.CostUSD})
	}
	return u
}

// locateMailbox reads the project from mailbox id itself: nothing is loaded
// before the access check.
func (d Deps) locateMailbox(id string) (forges.Project, func() (*mailboxView, error), error) {
	k, err := state.ParseMailboxID(id)
	if err != nil { // no such mailbox can exist
		return forges.Project{}, nil, fmt.Errorf("%w: %w", state.ErrNotFound, err)
	}
	return projectOfKey(k), func() (*mailboxView, error) { return d.loadMailbox(k) }, nil
}

// loadMailbox is the view of mailbox k and its runs.
func (d Deps) loadMailbox(k state.MailboxKey) (*mailboxView, error) {
	mb, err := d.Records.Mailbox(k)
	if err != nil {
		return nil, fmt.Errorf("mailbox %s: %w", k.ID(), err)
	}
	runs, err := d.Records.Runs(mb.ID)
	if err != nil && len(runs) == 0 {
		return nil, fmt.Errorf("runs of mailbox %s: %w", mb.ID, err)
	}
	v := &mailboxView{Mailbox: mb}
	for _, r := range runs {
		row := runRow{Run: d.redactRun(r)}
		row.Run.Log = ""
		_, ls, _ := d.Records.RunWithSessions(r.ID)
		if len(ls) > 0 {
			row.Session = &ls[len(ls)-1]
			row.usage = usageOf(ls)
		}
		row.Timeline = d.timelineOf(mb, row.Run, ls)
		v.Session = v.Session || row.Timeline.Shown()
		v.Total.add(row.usage)
		v.Spend = v.Spend.Add(state.SpendOf(r, ls))
		v.addGateway(r.Gateway)
		v.Runs = append(v.Runs, row)
	}
	return v, nil
}

func (d Deps) mailboxPage(w http.ResponseWriter, r *http.Request) {
	if v, ok := readable(d, w, r, d.locateMailbox); ok {
		d.render(w, r, "mailbox.html", v)
	}
}

func (d Deps) mailboxJSON(w http.ResponseWriter, r *http.Request) {
	if v, ok := readable(d, w, r, d.locateMailbox); ok {
		writeJSON(w, v)
	}
}

// notFound answers a record that does not exist or cannot be read as
// hidden does; the reason goes to the log only.
func (d Deps) notFound(w http.ResponseWriter, r *http.Request, err error) {
	if !errors.Is(err, state.ErrNotFound) {
		d.Logger.Warn("page record", "path", r.URL.Path, "err", err)
	}
	d.hidden(w, r)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

// template helpers
var funcs = map[string]any{
	"deref": func(s *string) string { return derefString(s) },
	"duration": func(a, b time.Time) string {
		if a.IsZero() || b.IsZero() {
			return "—"
		}
		return b.Sub(a).Round(time.Millisecond).String()
	},
	"when": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05 UTC")
	},
	"cost":  func(c float64) string { return fmt.Sprintf("$%.4f", c) },
	"short": func(id string) string { return shortID(id) },
	"page": func(title string, refresh bool) map[string]any {
		return map[string]any{"Title": title, "Refresh": refresh}
	},
	"livePage": livePage,
	// signOut is the signed-in person's sign-out token; Deps.render sets it.
	"signOut": func() string { return "" },
	"kind":    kindMark,
}

func derefString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// redactSteps hides the secrets the service knows in a run's steps, again.
func (d Deps) redactSteps(steps []state.RunStep) []state.RunStep {
	if steps == nil {
		return nil
	}
	out := make([]state.RunStep, len(steps))
	for i, s := range steps {
		s.Text = redact.Secrets(s.Text, d.Secrets)
		s.Args = redact.Secrets(s.Args, d.Secrets)
		s.Path = redact.Secrets(s.Path, d.Secrets)
		out[i] = s
	}
	return out
}

// timeline is a run's steps as the run and mailbox pages show them.
type timeline struct {
	RunID string
	Phase string
	// Start says how the run's session started: "resumed", "fresh" or
	// "fresh (reason)", the fallback; "" without a named session.
	Start string
	Steps []state.RunStep
	// Edited are the files the run edited, once each, in order.
	Edited []string
	// CommitURL is the diff of the commit the run pushed on the forge, ""
	// when it pushed none.
	CommitURL string
	Dropped   int
	Note      string
}

// Shown: the timeline has something to show.
func (t timeline) Shown() bool { return len(t.Steps) > 0 || t.Note != "" }

// Resumed: the run's session resumed an earlier one.
func (t timeline) Resumed() bool { return t.Start == "resumed" }

func (d Deps) timelineOf(mb state.Mailbox, r state.Run, sessions []state.LLMSession) timeline {
	t := timeline{RunID: r.ID, Phase: r.Phase, Steps: r.Steps}
	if n := len(sessions); n > 0 && sessions[n-1].SessionName != nil {
		t.Start = r.SessionStart(sessions[n-1])
	}
	if tr := r.Transcript; tr != nil {
		t.Dropped, t.Note = tr.Dropped, redact.Secrets(tr.Note, d.Secrets)
	}
	if r.Pushed {
		t.CommitURL = commitURL(d.forgeKind(mb.Forge), mb, r.HeadSHA)
	}
	for _, s := range r.Steps {
		if s.Kind == "edit" && s.Path != "" && !slices.Contains(t.Edited, s.Path) {
			t.Edited = append(t.Edited, s.Path)
		}
	}
	return t
}

// forgeKind is the kind of the configured forge named name, "" when the
// configuration does not say.
func (d Deps) forgeKind(name string) string {
	if d.Config == nil {
		return ""
	}
	for _, f := range d.Config.Forges {
		if f.Name == name {
			return f.Kind
		}
	}
	return ""
}

// forgeItem is the end of an issue's or a merge request's address on the
// forges: GitLab's "/-/issues/7" and "/-/merge_requests/7", Forgejo's and
// Gitea's "/issues/7" and "/pulls/7", GitHub's "/issues/7" and "/pull/7".
var forgeItem = regexp.MustCompile(`(/-)?/(issues|merge_requests|pulls|pull)/[0-9]+/?$`)

// commitURL is the address of commit sha's diff on the forge of kind (the
// forge's kind, or "" to tell it from the mailbox's addresses): the
// project's address, from the mailbox's issue or merge request, then the
// kind's setup.Kind.CommitPath and the sha ("/-/commit/" where the
// address has GitLab's "/-/", "/commit/" else). "" when the mailbox has no
// address or sha is empty.
func commitURL(kind string, mb state.Mailbox, sha string) string {
	for _, u := range []string{mb.IssueURL, mb.MergeRequestURL} {
		loc := forgeItem.FindStringSubmatchIndex(u)
		if sha == "" || loc == nil {
			continue
		}
		path := "/commit/"
		if k, ok := setup.Of(kind); ok {
			path = k.CommitPath
		} else if loc[2] >= 0 {
			path = "/-/commit/"
		}
		return u[:loc[0]] + path + url.PathEscape(sha)
	}
	return ""
}
