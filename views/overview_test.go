package views

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	botlifecycle "github.com/alchemic-studio/alfred/bot/lifecycle"
	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/state"
)

// overviewNow is the seeded overview's clock.
var overviewNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// seeded is a state store with mailboxes of three projects on two forges in
// every section of the overview; github/acme/secret is the project only some
// may read, with a title, tokens and a cost found nowhere else.
type seeded struct {
	store *state.Store
	ids   map[string]string // mailbox ids by short name: demo7, demo8, demo9, demo12, web3, web4, secret1
}

type seedRun struct {
	id, box, phase, adapter string
	status                  state.RunStatus
	daysAgo                 int
	in, out                 int64
	cost                    float64
}

func seedOverview(t *testing.T) seeded {
	t.Helper()
	st := newStore(t)
	q := []state.QuarantinedEvent{{Delivery: "d-q", Type: "comment_created", Error: "boom", At: overviewNow}}
	boxes := map[string]state.Mailbox{
		"demo7":   {Forge: "forgejo", Owner: "alice", Project: "demo", Kind: state.KindIssue, IID: 7, Title: "Add a greeting", Status: "in_ci", Phase: "development", IssueURL: "http://forge.test/alice/demo/issues/7", BranchName: "agent/issue-7-add-a-greeting"},
		"demo8":   {Forge: "forgejo", Owner: "alice", Project: "demo", Kind: state.KindIssue, IID: 8, Title: "Fix the footer", Status: "blocked", Phase: "analysis", IssueURL: "http://forge.test/alice/demo/issues/8"},
		"demo9":   {Forge: "forgejo", Owner: "alice", Project: "demo", Kind: state.KindIssue, IID: 9, Title: "Dark mode", Status: "done", Phase: "development", IssueURL: "http://forge.test/alice/demo/issues/9"},
		"demo12":  {Forge: "forgejo", Owner: "alice", Project: "demo", Kind: state.KindMR, IID: 12, Title: "Why this change?", Phase: "answer", IssueURL: "http://forge.test/alice/demo/pulls/12"},
		"web3":    {Forge: "forgejo", Owner: "alice", Project: "web", Kind: state.KindIssue, IID: 3, Title: "New landing page", Status: "waiting_validation", Phase: "analysis", IssueURL: "http://forge.test/alice/web/issues/3"},
		"web4":    {Forge: "forgejo", Owner: "alice", Project: "web", Kind: state.KindIssue, IID: 4, Title: "Cache the assets", Status: "in_review", Phase: "review_fix", IssueURL: "http://forge.test/alice/web/issues/4", Quarantined: q},
		"secret1": {Forge: "github", Owner: "acme", Project: "secret", Kind: state.KindIssue, IID: 1, Title: "Secret rocket plan", Status: "in_development", Phase: "development", IssueURL: "https://github.test/acme/secret/issues/1"},
	}
	runs := []seedRun{
		{"r7a", "demo7", "analysis", "claude-code", state.RunSucceeded, 3, 1000, 200, 0.10},
		{"r7b", "demo7", "development", "claude-code", state.RunRunning, 0, 0, 0, 0},
		{"r8a", "demo8", "analysis", "codex", state.RunFailed, 2, 500, 100, 0.05},
		{"r9a", "demo9", "development", "claude-code", state.RunSucceeded, 5, 2000, 500, 0.30},
		{"r12a", "demo12", "answer", "api", state.RunSucceeded, 2, 10, 5, 0},
		{"r3a", "web3", "analysis", "claude-code", state.RunSucceeded, 1, 300, 50, 0.02},
		{"r4a", "web4", "review_fix", "claude-code", state.RunFailed, 1, 100, 10, 0.01},
		{"rs1", "secret1", "development", "claude-code", state.RunSucceeded, 1, 9000, 9000, 99.5},
	}
	s := seeded{store: st, ids: map[string]string{}}
	for name, mb := range boxes {
		s.ids[name] = mb.Key().ID()
	}
	err := st.Update(context.Background(), func(tx *state.Tx) error {
		for _, name := range []string{"demo9", "demo12", "secret1", "web3", "demo8", "demo7", "web4"} {
			if err := tx.PutMailbox(boxes[name]); err != nil {
				return err
			}
		}
		for _, r := range runs {
			if err := seedOne(tx, r, s.ids[r.box]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func seedOne(tx *state.Tx, r seedRun, mailboxID string) error {
	at := overviewNow.Add(-time.Duration(r.daysAgo)*24*time.Hour - 2*time.Hour)
	run := state.Run{ID: r.id, MailboxID: mailboxID, Phase: r.phase, AdapterID: r.adapter, Runner: "image", Status: r.status,
		CreatedAt: at, StartedAt: at}
	if r.status != state.RunRunning {
		run.FinishedAt = at.Add(time.Minute)
	}
	if err := tx.PutRun(run); err != nil {
		return err
	}
	ls := state.LLMSession{ID: "s-" + r.id, RunID: r.id, MailboxID: mailboxID, AdapterID: r.adapter,
		InputTokens: r.in, OutputTokens: r.out, CostUSD: r.cost, CreatedAt: at}
	if r.adapter != "api" {
		ls.SessionName, ls.Resumed = str("agent/"+r.box), r.id == "r7b"
	}
	return tx.PutLLMSession(ls)
}

// lifecycle is the statuses of the lifecycle table, as the main package
// passes them.
var lifecycle = Statuses{Person: botlifecycle.StatusesWaiting(botlifecycle.WaitsPerson), Work: botlifecycle.StatusesWaiting(botlifecycle.WaitsWork), Done: botlifecycle.StatusesWaiting(botlifecycle.WaitsNobody)}

func (s seeded) deps() Deps {
	return Deps{Records: s.store, Runner: "image", Clock: func() time.Time { return overviewNow }, Statuses: lifecycle,
		Phases: []string{"analysis", "development", "ci_fix"},
		Agents: []Agent{{ID: "claude-code", Kind: "local", Resumable: true}, {ID: "codex", Kind: "local"}, {ID: "api", Kind: "api"}}}
}

// sectionOf returns the HTML of one section of a page.
func sectionOf(t *testing.T, body, name string) string {
	t.Helper()
	_, rest, ok := strings.Cut(body, `data-test="section-`+name+`"`)
	if !ok {
		t.Fatalf("no section %s", name)
	}
	s, _, _ := strings.Cut(rest, "</section>")
	return s
}

func TestOverviewSectionsAndFilters(t *testing.T) {
	s := seedOverview(t)
	srv := serve(t, s.deps())
	for _, tc := range []struct {
		query                 string
		needs, progress, done []string // titles, in order
	}{
		{"", []string{"Cache the assets", "Fix the footer", "New landing page"}, []string{"Add a greeting", "Secret rocket plan"}, []string{"Why this change?", "Dark mode"}},
		{"?forge=github", nil, []string{"Secret rocket plan"}, nil},
		{"?project=alice/web", []string{"Cache the assets", "New landing page"}, nil, nil},
		{"?status=blocked", []string{"Fix the footer"}, nil, nil},
		{"?status=done", nil, nil, []string{"Dark mode"}},
		{"?q=GREET", nil, []string{"Add a greeting"}, nil},
		{"?project=alice/demo&q=e", []string{"Fix the footer"}, []string{"Add a greeting"}, []string{"Why this change?", "Dark mode"}},
	} {
		t.Run(tc.query, func(t *testing.T) {
			code, body := get(t, srv.URL+"/"+tc.query)
			if code != 200 {
				t.Fatalf("overview: %d", code)
			}
			for name, want := range map[string][]string{"needs-you": tc.needs, "in-progress": tc.progress, "done": tc.done} {
				if got := titles(sectionOf(t, body, name)); strings.Join(got, "|") != strings.Join(want, "|") {
					t.Errorf("section %s: %q, want %q", name, got, want)
				}
			}
		})
	}
	_, body := get(t, srv.URL+"/")
	progress := sectionOf(t, body, "in-progress")
	for _, want := range []string{`href="/mailboxes/forgejo/alice/demo/issue/7"`, `href="http://forge.test/alice/demo/issues/7"`,
		`href="/projects/forgejo/alice/demo"`, "development <span class=\"muted\">for 2h 0m</span>", ">running</a>",
		"<code>agent/demo7</code> · resumed", "1200 · $0.1000"} {
		if !strings.Contains(progress, want) {
			t.Errorf("the in-progress row lacks %q:\n%s", want, progress)
		}
	}
	if !strings.Contains(sectionOf(t, body, "needs-you"), "1 quarantined") {
		t.Error("the quarantined mailbox does not say so")
	}
	if code, _ := get(t, srv.URL+"/?limit=0"); code != 400 {
		t.Errorf("a bad limit: %d", code)
	}
}

// titles lists the titles of the rows in html, in order.
func titles(html string) []string {
	var out []string
	for _, part := range strings.Split(html, `data-test="title">`)[1:] {
		title, _, _ := strings.Cut(part, "<")
		out = append(out, title)
	}
	return out
}

func TestConfigurationHasItsOwnPage(t *testing.T) {
	s := seedOverview(t)
	srv := serve(t, s.deps())
	_, body := get(t, srv.URL+"/")
	if !strings.Contains(body, `href="/config"`) || strings.Contains(body, `data-test="settings"`) {
		t.Error("the overview does not link the configuration, or shows it")
	}
	if code, body := get(t, srv.URL+"/config"); code != 200 || !strings.Contains(body, `data-test="settings"`) {
		t.Errorf("configuration page: %d", code)
	}
}

type listAnswer[T any] struct {
	Items []T    `json:"items"`
	Next  string `json:"next"`
}

func getJSON[T any](t *testing.T, get func(string) (int, string), u string) (int, listAnswer[T]) {
	t.Helper()
	code, body := get(u)
	var v listAnswer[T]
	if code == 200 {
		if err := json.Unmarshal([]byte(body), &v); err != nil {
			t.Fatalf("%s: %v\n%s", u, err, body)
		}
	}
	return code, v
}

func TestAPIListsPageAndFilter(t *testing.T) {
	s := seedOverview(t)
	srv := serve(t, s.deps())
	plain := func(u string) (int, string) { return get(t, u) }

	// Every mailbox, two at a time, each once.
	seen := map[string]bool{}
	next, pages := "", 0
	for {
		code, page := getJSON[mailboxItem](t, plain, srv.URL+"/api/mailboxes?limit=2&cursor="+url.QueryEscape(next))
		if code != 200 || len(page.Items) > 2 {
			t.Fatalf("page %d: %d, %d items", pages, code, len(page.Items))
		}
		for _, it := range page.Items {
			if seen[it.Mailbox.ID] {
				t.Errorf("%s twice", it.Mailbox.ID)
			}
			seen[it.Mailbox.ID] = true
		}
		pages++
		if next = page.Next; next == "" {
			break
		}
	}
	if len(seen) != 7 || pages != 4 {
		t.Errorf("%d mailboxes in %d pages, want 7 in 4", len(seen), pages)
	}

	for _, tc := range []struct {
		query string
		want  []string // run ids, newest first
	}{
		{"", []string{"r7b", "rs1", "r4a", "r3a", "r8a", "r12a", "r7a", "r9a"}},
		{"?status=failed", []string{"r4a", "r8a"}},
		{"?phase=analysis&adapter=claude-code", []string{"r3a", "r7a"}},
		{"?status=succeeded,failed&project=alice/web", []string{"r4a", "r3a"}},
		{"?forge=github", []string{"rs1"}},
	} {
		code, page := getJSON[runItem](t, plain, srv.URL+"/api/runs"+tc.query)
		var got []string
		for _, it := range page.Items {
			got = append(got, it.Run.ID)
		}
		if code != 200 || strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("/api/runs%s: %d %v, want %v", tc.query, code, got, tc.want)
		}
	}
	_, page := getJSON[runItem](t, plain, srv.URL+"/api/runs?forge=github")
	if it := page.Items[0]; it.CostUSD != 99.5 || it.Tokens() != 18000 || it.Mailbox.Title != "Secret rocket plan" {
		t.Errorf("run item: %+v", it)
	}

	for _, u := range []string{"/api/mailboxes?cursor=nonsense", "/api/runs?limit=1000", "/api/runs?project=noslash"} {
		if code, body := get(t, srv.URL+u); code != 400 || !strings.Contains(body, `"error"`) {
			t.Errorf("%s: %d %s", u, code, body)
		}
	}
}

// fakeSettings answers the project page's settings.
type fakeSettings struct{}

func (fakeSettings) Effective(p forges.Project) ([]Setting, error) {
	return []Setting{{Key: "BRANCH_PREFIX", Value: "bot/", Source: "organization"}, {Key: "RUN_TIMEOUT", Value: "30m0s", Source: "default"}}, nil
}

func TestProjectPageAndAPI(t *testing.T) {
	s := seedOverview(t)
	d := s.deps()
	d.Settings = fakeSettings{}
	srv := serve(t, d)
	code, body := get(t, srv.URL+"/projects/forgejo/alice/web")
	if code != 200 {
		t.Fatalf("project page: %d", code)
	}
	if got := titles(body); strings.Join(got, "|") != "Cache the assets|New landing page" {
		t.Errorf("project rows: %q", got)
	}
	for _, want := range []string{`data-test="setting-BRANCH_PREFIX"`, "<code>bot/</code>", `data-test="source">organization<`, `data-test="chart-cost"`} {
		if !strings.Contains(body, want) {
			t.Errorf("project page lacks %q", want)
		}
	}
	code, body = get(t, srv.URL+"/api/projects/forgejo/alice/demo?status=done")
	var v struct {
		Items    []mailboxItem    `json:"items"`
		Settings []Setting        `json:"settings"`
		Daily    []state.DayTotal `json:"daily"`
	}
	if err := json.Unmarshal([]byte(body), &v); err != nil || code != 200 {
		t.Fatalf("project JSON: %d %v", code, err)
	}
	if len(v.Items) != 1 || v.Items[0].Mailbox.Title != "Dark mode" || len(v.Settings) != 2 || len(v.Daily) != chartDays {
		t.Errorf("project JSON: %d items, %d settings, %d days", len(v.Items), len(v.Settings), len(v.Daily))
	}
	for _, u := range []string{"/projects/forgejo/alice/nothing", "/api/projects/forgejo/alice", "/projects/gitlab/alice/web"} {
		if code, _ := get(t, srv.URL+u); code != 404 {
			t.Errorf("%s: %d", u, code)
		}
	}
}

func TestMailboxPageShowsTokensAndCost(t *testing.T) {
	f := newFixture(t)
	_, body := get(t, serve(t, f.deps()).URL+"/mailboxes/"+f.mb.ID)
	for _, want := range []string{`data-test="run-usage">1200 in · 340 out · $0.0123<`, `data-test="run-usage">10 in · 5 out · $0.0000<`,
		`data-test="total-usage">1210 in · 345 out · $0.0123<`} {
		if !strings.Contains(body, want) {
			t.Errorf("mailbox page lacks %q", want)
		}
	}
}

// signedInClient serves d with sign-in through a fake forge where who signs
// in, and where each login reads the projects of reads (public ones too).
func signedInClient(t *testing.T, d Deps, who string, reads map[string][]string, public ...string) (string, func(string) (int, string)) {
	t.Helper()
	provider := newOAuthForge(t)
	provider.who = who
	var h http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	t.Cleanup(srv.Close)
	d.Access = provider.access(srv.URL, nil, public...)
	gh := d.Access.SignIns[0] // the fixture's projects are on two forges
	gh.Forge = "github"
	d.Access.SignIns = append(d.Access.SignIns, gh)
	d.Access.Permission = func(_ context.Context, p forges.Project, login string) (forges.Permission, error) {
		for _, x := range reads[login] {
			if x == p.Forge+"/"+p.FullName() {
				return forges.PermissionRead, nil
			}
		}
		return forges.PermissionNone, nil
	}
	h = serve(t, d).Config.Handler
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar}
	get := func(u string) (int, string) {
		t.Helper()
		resp, err := client.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, forge := range []string{"forgejo", "github"} {
		if who == "" {
			break
		}
		if code, _ := get(srv.URL + "/login?forge=" + forge + "&next=/"); code != 200 {
			t.Fatalf("%s signs in on %s: %d", who, forge, code)
		}
	}
	return srv.URL, get
}

// A person without read access to a project sees none of its rows, counts
// or costs: not in the overview, its charts and their tables, the runs page,
// the filters, the project page or the API.
func TestListsHideWhatAPersonMayNotRead(t *testing.T) {
	s := seedOverview(t)
	reads := map[string][]string{
		"bob":   {"forgejo/alice/demo", "forgejo/alice/web"},
		"carol": {"forgejo/alice/demo", "forgejo/alice/web", "github/acme/secret"},
	}
	// What only the secret project shows: its title, owner, forge, cost,
	// and day 1's input tokens and cost with it (9400, $99.53).
	secrets := []string{"Secret rocket plan", "acme", "github", "99.5", "9400", "rs1"}
	pages := []string{"/", "/?status=in_development", "/runs", "/runs?adapter=claude-code", "/api/mailboxes", "/api/runs", "/api/runs?forge=github"}

	for _, tc := range []struct {
		who      string
		public   []string
		progress string // the in-progress count
		shows    bool   // the secret project
	}{
		{"bob", nil, "(1)", false},
		{"carol", nil, "(2)", true},
		{"", []string{"alice/demo"}, "(1)", false},    // anonymous: the public projects only
		{"bob", []string{"acme/secret"}, "(2)", true}, // public to anyone
	} {
		t.Run(tc.who+strings.Join(tc.public, ","), func(t *testing.T) {
			base, get := signedInClient(t, s.deps(), tc.who, reads, tc.public...)
			for _, p := range pages {
				code, body := get(base + p)
				if code != 200 {
					t.Fatalf("%s: %d", p, code)
				}
				for _, x := range secrets {
					if !tc.shows && strings.Contains(body, x) {
						t.Errorf("%s shows %q", p, x)
					}
				}
			}
			_, body := get(base + "/")
			if tc.shows && !strings.Contains(body, "Secret rocket plan") {
				t.Error("the overview hides a project the visitor may read")
			}
			if got := sectionOf(t, body, "in-progress"); !strings.Contains(got, `data-test="count">`+tc.progress) {
				t.Errorf("in-progress count, want %s:\n%s", tc.progress, got)
			}
			wantCode := map[bool]int{true: 200, false: 404}[tc.shows] // anonymous too
			for _, p := range []string{"/projects/github/acme/secret", "/api/projects/github/acme/secret"} {
				if code, _ := get(base + p); code != wantCode {
					t.Errorf("%s: %d, want %d", p, code, wantCode)
				}
			}
		})
	}
}

// The permission of a login on a project is asked once a minute at most.
func TestPermissionCache(t *testing.T) {
	now := overviewNow
	c := newPermCache(func() time.Time { return now })
	asked := 0
	ask := func(context.Context, forges.Project, string) (forges.Permission, error) {
		asked++
		return forges.PermissionRead, nil
	}
	p := forges.Project{Forge: "forgejo", Owner: "alice", Name: "demo"}
	for _, step := range []struct {
		login   string
		advance time.Duration
		asked   int
	}{
		{"bob", 0, 1},
		{"bob", 30 * time.Second, 1},
		{"carol", 0, 2},
		{"bob", 31 * time.Second, 3},
		{"bob", 59 * time.Second, 3},
	} {
		now = now.Add(step.advance)
		if perm, err := c.permission(context.Background(), step.login, p, ask); err != nil || perm != forges.PermissionRead {
			t.Fatalf("permission: %v %v", perm, err)
		}
		if asked != step.asked {
			t.Errorf("after %s at +%s: asked %d times, want %d", step.login, step.advance, asked, step.asked)
		}
	}
}
