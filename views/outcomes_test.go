package views

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/outcomes"
	"github.com/alchemic-studio/alfred/state"
)

// seedOutcomes is a store with four issues at overviewNow: on forgejo
// alice/demo one merged after a CI-fix round (claude-code, opus), one
// closed after a stalled codex run, one abandoned 60 days ago; on github
// acme/secret one merged at $99.53.
func seedOutcomes(t *testing.T) Deps {
	t.Helper()
	st := newStore(t)
	t0 := overviewNow.Add(-10 * 24 * time.Hour)
	day := 24 * time.Hour
	type seedIssue struct {
		mb   state.Mailbox
		runs []state.Run
		cost []float64 // each run's session's dollars; its tokens are 1000 per dollar
	}
	demo := func(iid int64, status string, at time.Time) state.Mailbox {
		return state.Mailbox{Forge: "forgejo", Owner: "alice", Project: "demo", Kind: state.KindIssue, IID: iid, Title: "demo issue", Status: status, CreatedAt: at}
	}
	issues := []seedIssue{
		{mb: demo(1, "done", t0), runs: []state.Run{
			{ID: "d1a", Phase: "development", AdapterID: "claude-code", Model: "opus", Status: state.RunSucceeded, Pushed: true, CreatedAt: t0.Add(time.Minute)},
			{ID: "d1b", Phase: "ci_fix", Trigger: "ci-1", AdapterID: "claude-code", Model: "opus", Status: state.RunSucceeded, CreatedAt: t0.Add(2 * time.Hour)},
		}, cost: []float64{1, 0.5}},
		{mb: demo(2, "done", t0.Add(day)), runs: []state.Run{
			{ID: "d2a", Phase: "development", AdapterID: "codex", Status: state.RunFailed, Stalled: true, CreatedAt: t0.Add(day + time.Minute)},
		}, cost: []float64{0.2}},
		{mb: demo(3, "in_development", overviewNow.Add(-60*day)), runs: []state.Run{
			{ID: "d3a", Phase: "analysis", AdapterID: "claude-code", Model: "opus", Status: state.RunSucceeded, CreatedAt: overviewNow.Add(-60 * day)},
		}, cost: []float64{0.1}},
		{mb: state.Mailbox{Forge: "github", Owner: "acme", Project: "secret", Kind: state.KindIssue, IID: 1, Title: "Secret rocket plan", Status: "done", CreatedAt: t0},
			runs: []state.Run{{ID: "s1a", Phase: "development", AdapterID: "claude-code", Status: state.RunSucceeded, Pushed: true, CreatedAt: t0.Add(time.Minute)}},
			cost: []float64{99.53}},
	}
	issues[0].mb.MergeRequestAt, issues[0].mb.End = t0.Add(time.Hour), &state.MailboxEnd{How: state.EndMerged, By: "alice", At: t0.Add(3 * time.Hour)}
	issues[1].mb.MergeRequestAt, issues[1].mb.End = t0.Add(day+2*time.Hour), &state.MailboxEnd{How: state.EndClosed, By: "alice", At: t0.Add(day + 5*time.Hour)}
	issues[2].mb.StatusSince = overviewNow.Add(-59 * day)
	issues[3].mb.MergeRequestAt, issues[3].mb.End = t0.Add(time.Hour), &state.MailboxEnd{How: state.EndMerged, At: t0.Add(2 * time.Hour)}
	err := st.Update(context.Background(), func(tx *state.Tx) error {
		for _, is := range issues {
			id := is.mb.Key().ID()
			if err := tx.PutMailbox(is.mb); err != nil {
				return err
			}
			for i, r := range is.runs {
				r.MailboxID, r.Runner, r.StartedAt, r.FinishedAt = id, "image", r.CreatedAt, r.CreatedAt.Add(time.Minute)
				if err := tx.PutRun(r); err != nil {
					return err
				}
				ls := state.LLMSession{ID: "s-" + r.ID, RunID: r.ID, MailboxID: id, AdapterID: r.AdapterID, CreatedAt: r.CreatedAt,
					InputTokens: int64(is.cost[i] * 1000), CostUSD: is.cost[i]}
				if err := tx.PutLLMSession(ls); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return Deps{Records: st, Runner: "image", Clock: func() time.Time { return overviewNow }, Statuses: lifecycle}
}

// httpGet is views_test.go's get, under a name the tests' closures do
// not shadow.
var httpGet = get

// outcomesAnswer is /api/outcomes as a client reads it.
type outcomesAnswer struct {
	Overall  outcomes.Summary `json:"overall"`
	Projects []struct {
		Forge, Project string
		Summary        outcomes.Summary
	} `json:"projects"`
}

func getOutcomes(t *testing.T, get func(string) (int, string), u string) outcomesAnswer {
	t.Helper()
	code, body := get(u)
	if code != 200 {
		t.Fatalf("%s: %d %s", u, code, body)
	}
	if strings.Contains(body, "NaN") {
		t.Errorf("%s shows NaN", u)
	}
	var a outcomesAnswer
	if err := json.Unmarshal([]byte(body), &a); err != nil {
		t.Fatalf("%s: %v", u, err)
	}
	return a
}

func TestOutcomesFigures(t *testing.T) {
	srv := serve(t, seedOutcomes(t))
	get := func(u string) (int, string) { return httpGet(t, u) }
	a := getOutcomes(t, get, srv.URL+"/api/outcomes?forge=forgejo&project=alice/demo")
	if len(a.Projects) != 1 || a.Projects[0].Project != "alice/demo" {
		t.Fatalf("projects: %+v", a.Projects)
	}
	s := a.Projects[0].Summary
	if s.Issues != 3 || s.Finished != 2 || s.Ends[outcomes.EndAbandoned] != 1 || s.FailedRuns != 1 || s.StalledRuns != 1 || s.Runs != 4 {
		t.Errorf("counts: %+v", s)
	}
	if r := s.MergeRate; r == nil || r.Count != 1 || r.Of != 2 || !r.Few {
		t.Errorf("merge rate: %+v", r)
	}
	if tp := s.ToPullRequest; tp == nil || tp.N != 2 || tp.Median != 90*time.Minute || tp.P90 != 2*time.Hour {
		t.Errorf("to pull request: %+v", tp)
	}
	if tm := s.ToMerge; tm == nil || tm.N != 1 || tm.Median != 3*time.Hour {
		t.Errorf("to merge: %+v", tm)
	}
	if p := s.PerMerged; p == nil || p.CIFix != 1 || p.Tokens != 1500 || p.USD != 1.5 || p.AllTokens != 1800 {
		t.Errorf("per merged: %+v", p)
	}
	if len(s.ByAdapter) != 2 || s.ByAdapter[1].Adapter != "codex" || s.ByAdapter[1].MergeRate.Value != 0 || s.ByAdapter[1].PerMerged != nil {
		t.Errorf("by adapter: %+v", s.ByAdapter)
	}
	if a.Overall.Issues != 3 {
		t.Errorf("overall of one project: %+v", a.Overall)
	}
	all := getOutcomes(t, get, srv.URL+"/api/outcomes")
	if len(all.Projects) != 2 || all.Overall.Issues != 4 || all.Overall.MergeRate.Count != 2 || all.Overall.MergeRate.Of != 3 {
		t.Errorf("every project: %+v", all)
	}
	code, body := get(srv.URL + "/outcomes")
	for _, want := range []string{"alice/demo", "acme/secret", "67% (2 of 3, few)", "50% (1 of 2, few)", "1h30m · p90 2h (n=2)", "3h · p90 3h (n=1)", "1.0 CI · 0.0 review · 0.0 conflict", "codex", "opus"} {
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("the page (%d) lacks %q", code, want)
		}
	}
}

func TestOutcomesSince(t *testing.T) {
	srv := serve(t, seedOutcomes(t))
	get := func(u string) (int, string) { return httpGet(t, u) }
	for _, c := range []struct {
		since  string
		issues int // of alice/demo
	}{
		{"", 3}, {"30d", 2}, {"4w", 2}, {"2026-11-21", 1}, {"2026-11-20T11:00:00Z", 2}, {"2026-11-25", 0},
	} {
		a := getOutcomes(t, get, srv.URL+"/api/outcomes?project=alice/demo&since="+c.since)
		if len(a.Projects) != 1 || a.Projects[0].Summary.Issues != c.issues {
			t.Errorf("since %q: %+v, want %d issues", c.since, a.Projects, c.issues)
		}
	}
	for _, bad := range []string{"yesterday", "-3d", "0d", "3x", "2026-13-01"} {
		code, body := get(srv.URL + "/api/outcomes?since=" + bad)
		if code != 400 || !strings.Contains(body, `"error"`) || !strings.Contains(body, "since") {
			t.Errorf("since %q: %d %s", bad, code, body)
		}
		if code, _ := get(srv.URL + "/outcomes?since=" + bad); code != 400 {
			t.Errorf("page, since %q: %d", bad, code)
		}
	}
	if code, _ := get(srv.URL + "/api/outcomes?project=demo"); code != 400 {
		t.Errorf("project without owner: %d", code)
	}
}

func TestOutcomesEmpty(t *testing.T) {
	srv := serve(t, seedOutcomes(t))
	get := func(u string) (int, string) { return httpGet(t, u) }
	a := getOutcomes(t, get, srv.URL+"/api/outcomes?project=alice/demo&since=2026-11-25")
	if a.Overall.Note != outcomes.NoFinished || a.Overall.MergeRate != nil || a.Overall.PerMerged != nil {
		t.Errorf("no issue: %+v", a.Overall)
	}
	code, body := get(srv.URL + "/outcomes?project=nobody/none")
	if code != 200 || !strings.Contains(body, "no finished issue yet") {
		t.Errorf("no project: %d, no note", code)
	}
	if !strings.Contains(body, `href="/outcomes"`) {
		t.Error("the navigation has no link to the outcomes")
	}
}

// A project a person may not read adds nothing to their outcomes, which
// show it to who may.
func TestOutcomesHideWhatAPersonMayNotRead(t *testing.T) {
	reads := map[string][]string{
		"bob":   {"forgejo/alice/demo"},
		"carol": {"forgejo/alice/demo", "github/acme/secret"},
	}
	secrets := []string{"acme", "github", "99.5", "99530", "2 of 3"}
	for _, c := range []struct {
		who    string
		public []string
		shows  bool
	}{
		{"bob", nil, false}, {"carol", nil, true}, {"", []string{"alice/demo"}, false}, {"", nil, false},
	} {
		t.Run(c.who, func(t *testing.T) {
			base, get := signedInClient(t, seedOutcomes(t), c.who, reads, c.public...)
			// The answer names the project asked for, but none of its figures.
			if a := getOutcomes(t, get, base+"/api/outcomes?forge=github&project=acme/secret"); !c.shows && (len(a.Projects) != 0 || a.Overall.Issues != 0) {
				t.Errorf("asked for by name: %+v", a)
			}
			for _, p := range []string{"/outcomes", "/api/outcomes"} {
				code, body := get(base + p)
				if code != 200 {
					t.Fatalf("%s: %d", p, code)
				}
				for _, x := range secrets {
					if !c.shows && strings.Contains(body, x) {
						t.Errorf("%s shows %q", p, x)
					}
				}
				if c.shows && p == "/outcomes" && !strings.Contains(body, "acme/secret") {
					t.Errorf("%s hides a project the visitor may read", p)
				}
			}
			a := getOutcomes(t, get, base+"/api/outcomes")
			want := map[bool]int{true: 4, false: 3}[c.shows]
			if c.who == "" && c.public == nil {
				want = 0
			}
			if a.Overall.Issues != want {
				t.Errorf("overall issues %d, want %d", a.Overall.Issues, want)
			}
		})
	}
}

// TestOutcomesCharts: the overall charts and each project's are on the
// page, drawn from the same figures as the tables; with no finished issue
// every chart says so and draws no bar.
func TestOutcomesCharts(t *testing.T) {
	srv := serve(t, seedOutcomes(t))
	get := func(u string) (int, string) { return httpGet(t, u) }
	for _, c := range []struct {
		name, query string
		charts      int // figures of charts
		bars        int
		says        []string
	}{
		{"every project", "", 15, 5 + 2 + 1 + 1 + 1 + (4 + 2 + 1 + 1 + 1) + (2 + 1 + 1 + 1 + 1),
			[]string{"100% (2 of 2, few)", "0% (0 of 1, few)", "$50.52 (2 merged)", "1h · p90 1h (n=2)", "none merged yet"}},
		{"nothing finished", "?project=alice/demo&since=2026-11-25", 10, 0, []string{outcomes.NoFinished, "no pull request yet"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, body := get(srv.URL + "/outcomes" + c.query)
			if code != 200 {
				t.Fatalf("%d", code)
			}
			if got := strings.Count(body, `<figure data-test="outcome-chart-`); got != c.charts {
				t.Errorf("%d charts, want %d", got, c.charts)
			}
			if got := strings.Count(body, `<rect class="bar`); got != c.bars {
				t.Errorf("%d bars, want %d", got, c.bars)
			}
			for _, want := range c.says {
				if !strings.Contains(body, want) {
					t.Errorf("the charts do not say %q", want)
				}
			}
			if strings.Contains(body, "NaN") || strings.Contains(body, "Inf") {
				t.Error("NaN or Inf on the page")
			}
		})
	}
}
