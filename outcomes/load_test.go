package outcomes

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/state"
)

// seedStore is a real state store with, on gitea alice/demo, n issues
// assigned an hour apart from t0, each merged with one development run
// of a dollar, and one merge request mailbox; on gitea bob/other one issue.
func seedStore(t testing.TB, n int) *state.Store {
	t.Helper()
	st, err := state.Open(context.Background(), filepath.Join(t.TempDir(), "state.git"), state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	err = st.Update(context.Background(), func(tx *state.Tx) error {
		put := func(mb state.Mailbox, runID string) error {
			if err := tx.PutMailbox(mb); err != nil {
				return err
			}
			id := mb.Key().ID()
			r := state.Run{ID: runID, MailboxID: id, Phase: phaseDevelopment, AdapterID: "claude-code", Model: "opus", Runner: "image",
				Status: state.RunSucceeded, Pushed: true, CreatedAt: mb.CreatedAt, StartedAt: mb.CreatedAt, FinishedAt: mb.CreatedAt.Add(time.Minute)}
			if err := tx.PutRun(r); err != nil {
				return err
			}
			return tx.PutLLMSession(state.LLMSession{ID: "s-" + runID, RunID: runID, MailboxID: id, AdapterID: "claude-code", Model: "opus",
				InputTokens: 1000, CostUSD: 1, CreatedAt: mb.CreatedAt})
		}
		for i := range n {
			c := at(time.Duration(i) * time.Hour)
			mb := state.Mailbox{Forge: "gitea", Owner: "alice", Project: "demo", Kind: state.KindIssue, IID: int64(i + 1), Status: statusDone,
				CreatedAt: c, MergeRequestAt: c.Add(time.Hour), End: &state.MailboxEnd{How: state.EndMerged, At: c.Add(2 * time.Hour)}}
			if err := put(mb, fmt.Sprintf("r%d", i+1)); err != nil {
				return err
			}
		}
		mr := state.Mailbox{Forge: "gitea", Owner: "alice", Project: "demo", Kind: state.KindMR, IID: 900, Status: "in_review", CreatedAt: t0}
		if err := tx.PutMailbox(mr); err != nil {
			return err
		}
		return put(state.Mailbox{Forge: "gitea", Owner: "bob", Project: "other", Kind: state.KindIssue, IID: 1, Status: "in_development", CreatedAt: t0}, "b1")
	})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestLoad reads a real store: the issues of the project asked for only
// (no merge request mailbox, no other project), past a page of the
// store's list, each with its runs and sessions, since a time.
func TestLoad(t *testing.T) {
	const n = pageSize + 5
	st := seedStore(t, n)
	demo := state.ProjectRef{Forge: "gitea", Owner: "alice", Project: "demo"}
	for _, tc := range []struct {
		name   string
		p      state.ProjectRef
		since  time.Time
		issues int
	}{
		{"every issue, two pages", demo, time.Time{}, n},
		{"since the tenth hour", demo, at(10 * time.Hour), n - 10},
		{"since after the last", demo, at(time.Duration(n) * time.Hour), 0},
		{"another project", state.ProjectRef{Forge: "gitea", Owner: "bob", Project: "other"}, time.Time{}, 1},
		{"another forge", state.ProjectRef{Forge: "github", Owner: "alice", Project: "demo"}, time.Time{}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			list, problems := Load(context.Background(), st, tc.p, Filter{Since: tc.since, Now: at(1000 * time.Hour), AbandonAfter: DefaultAbandonAfter})
			if len(problems) != 0 {
				t.Errorf("problems: %q", problems)
			}
			if len(list) != tc.issues {
				t.Fatalf("%d outcomes, want %d", len(list), tc.issues)
			}
			for _, o := range list {
				if o.Kind != state.KindIssue || o.Forge != tc.p.Forge || o.Owner != tc.p.Owner || o.Project != tc.p.Project {
					t.Fatalf("outcome of %s", o.MailboxID)
				}
				if o.Runs != 1 || o.Spend.USD != 1 || o.Spend.Tokens() != 1000 {
					t.Errorf("%s: runs %d, spend %+v: its run and session not read", o.MailboxID, o.Runs, o.Spend)
				}
			}
			if tc.p == demo && tc.issues > 0 {
				s := Summarize(list)
				if s.MergeRate == nil || s.MergeRate.Count != tc.issues || s.ToMerge == nil || s.ToMerge.Median != 2*time.Hour {
					t.Errorf("summary %+v", s)
				}
			}
		})
	}
}

// failing is a store whose reads fail as its fields say.
type failing struct {
	Records
	list, runs, sessions error
}

func (f failing) ListMailboxes(mf state.MailboxFilter, c string, n int) ([]state.MailboxRow, string, error) {
	if f.list != nil {
		return nil, "", f.list
	}
	return f.Records.ListMailboxes(mf, c, n)
}

func (f failing) Runs(id string) ([]state.Run, error) {
	runs, err := f.Records.Runs(id)
	if f.runs != nil {
		return nil, f.runs
	}
	return runs, err
}

func (f failing) RunWithSessions(id string) (state.Run, []state.LLMSession, error) {
	if f.sessions != nil {
		return state.Run{}, nil, f.sessions
	}
	return f.Records.RunWithSessions(id)
}

// TestLoadProblems: what could not be read is said, and the outcomes
// keep what was read.
func TestLoadProblems(t *testing.T) {
	st := seedStore(t, 2)
	demo := state.ProjectRef{Forge: "gitea", Owner: "alice", Project: "demo"}
	broken := errors.New("unreadable record")
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name     string
		ctx      context.Context
		rs       Records
		issues   int
		runs     int // of each outcome
		problems []string
	}{
		{"the list fails", context.Background(), failing{Records: st, list: broken}, 0, 0, []string{"mailboxes of alice/demo: unreadable record"}},
		{"runs fail", context.Background(), failing{Records: st, runs: broken}, 2, 0, []string{"runs of mailbox", "runs of mailbox"}},
		{"sessions fail", context.Background(), failing{Records: st, sessions: broken}, 2, 1, []string{"llm sessions of run r", "llm sessions of run r"}},
		{"done before it starts", canceled, st, 0, 0, []string{"outcomes of alice/demo: context canceled"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			list, problems := Load(tc.ctx, tc.rs, demo, Filter{Now: at(100 * time.Hour)})
			if len(list) != tc.issues || len(problems) != len(tc.problems) {
				t.Fatalf("%d outcomes, problems %q", len(list), problems)
			}
			for i, p := range problems {
				if !strings.Contains(p, tc.problems[i]) {
					t.Errorf("problem %q, want %q", p, tc.problems[i])
				}
			}
			for _, o := range list {
				if o.Runs != tc.runs {
					t.Errorf("%s: %d runs, want %d", o.MailboxID, o.Runs, tc.runs)
				}
			}
		})
	}
}

// TestFiguresOf: a public project's figures under its name, by agent, by
// adapter and overall; the other projects pooled per forge under "".
func TestFiguresOf(t *testing.T) {
	st := seedStore(t, 3)
	for _, tc := range []struct {
		name    string
		public  func(state.ProjectRef) bool
		project string // alice/demo's label
		pooled  int    // issues under project ""
	}{
		{"alice/demo public", func(p state.ProjectRef) bool { return p.Owner == "alice" }, "alice/demo", 1},
		{"none public", nil, "", 4},
		{"every project public", func(state.ProjectRef) bool { return true }, "alice/demo", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			list, problems := FiguresOf(context.Background(), st, tc.public, at(1000*time.Hour))
			if len(problems) != 0 {
				t.Errorf("problems %q", problems)
			}
			find := func(project, adapter, model string) (Figures, bool) {
				for _, f := range list {
					if f.Forge == "gitea" && f.Project == project && f.Adapter == adapter && f.Model == model {
						return f, true
					}
				}
				return Figures{}, false
			}
			if f, ok := find("", All, All); ok != (tc.pooled > 0) || f.Issues != tc.pooled {
				t.Errorf("pooled: %+v (%v), want %d issues", f, ok, tc.pooled)
			}
			for _, agent := range [][2]string{{All, All}, {"claude-code", All}, {"claude-code", "opus"}} {
				f, ok := find(tc.project, agent[0], agent[1])
				if !ok {
					t.Fatalf("no figures of %s %v in %+v", tc.project, agent, list)
				}
				if tc.project != "alice/demo" {
					continue // pooled with bob/other
				}
				if f.Issues != 3 || f.Ends["merged"] != 3 || f.Ends["closed_unmerged"] != 0 || len(f.Ends) != 4 ||
					f.MergeRateOf != 3 || f.MergeRate != 1 || f.ToPullRequestN != 3 || f.ToPullRequestMedian != 3600 ||
					f.ToMergeN != 3 || f.ToMergeP90 != 7200 || f.Merged != 3 || f.USDPerMerged != 1 || f.TokensPerMerged != 1000 {
					t.Errorf("%v: %+v", agent, f)
				}
			}
			for _, f := range list {
				if f.Project != "" && (tc.public == nil || !tc.public(state.ProjectRef{Forge: f.Forge, Owner: ownerOf(f.Project), Project: "x"})) {
					t.Errorf("a project not public is named: %+v", f)
				}
			}
		})
	}
}

func ownerOf(full string) string { o, _, _ := strings.Cut(full, "/"); return o }
