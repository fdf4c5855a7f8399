package state

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The overview's queries on a store of 10k mailboxes over 50 projects, 100k
// runs (10 a mailbox, over 120 days) and 100k llm sessions, built once per
// process in one commit.

var (
	overviewOnce  sync.Once
	overviewStore *Store
	overviewErr   error
	overviewNow   = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
)

const (
	ovMailboxes = 10_000
	ovRuns      = 10 // a mailbox
	ovProjects  = 50
)

var ovStatuses = []string{"functional_analysis", "waiting_plan_validation", "development", "in_review", "blocked", "waiting_info"}

func openOverviewStore(b *testing.B) *Store {
	b.Helper()
	overviewOnce.Do(func() {
		fixtureMu.Lock()
		_, overviewErr = benchRoot()
		fixtureMu.Unlock()
		if overviewErr != nil {
			return
		}
		dir := filepath.Join(fixtureRoot, "overview")
		start := time.Now()
		s, err := Open(context.Background(), dir, Options{})
		if err != nil {
			overviewErr = err
			return
		}
		err = s.Update(context.Background(), func(tx *Tx) error {
			for i := range ovMailboxes {
				m := Mailbox{FormatVersion: FormatVersion, Forge: "forgejo", Owner: "acme", Project: fmt.Sprintf("p%02d", i%ovProjects),
					Kind: KindIssue, IID: int64(i/ovProjects + 1), Title: fmt.Sprintf("Issue %d", i), Status: ovStatuses[i%len(ovStatuses)],
					Phase: "development", Labels: []string{"type::task"},
					CreatedAt: overviewNow.AddDate(0, 0, -120), UpdatedAt: overviewNow.Add(-time.Duration(i*7919%ovMailboxes) * time.Minute)}
				m.ID = m.Key().ID()
				if err := tx.putTyped(m.Key().dir()+"/mailbox.json", &m); err != nil {
					return err
				}
				for j := range ovRuns {
					n := i*ovRuns + j
					r := Run{FormatVersion: FormatVersion, ID: fmt.Sprintf("run-%d", n), MailboxID: m.ID,
						Phase: []string{"analysis", "development", "ci_fix", "review"}[n%4], Runner: "image",
						AdapterID: []string{"claude-code", "codex", "opencode"}[n%3], Status: runStatuses[n%len(runStatuses)],
						CreatedAt: overviewNow.Add(-time.Duration(n*104729%(120*24*60)) * time.Minute), Outcome: "ok", Log: "agent output\n"}
					p, _ := runPath(m.ID, r.ID)
					if err := tx.putTyped(p, &r); err != nil {
						return err
					}
					ls := LLMSession{FormatVersion: FormatVersion, ID: fmt.Sprintf("ls-%d", n), RunID: r.ID, MailboxID: m.ID,
						AdapterID: r.AdapterID, InputTokens: 12000, OutputTokens: 800, CostUSD: 0.042, Outcome: "ok", CreatedAt: r.CreatedAt}
					p, _ = sessionPath(m.ID, ls.ID)
					if err := tx.putTyped(p, &ls); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err == nil {
			err = s.Close()
		}
		if err == nil {
			s, err = Open(context.Background(), dir, Options{ReadOnly: true})
		}
		overviewStore, overviewErr = s, err
		b.Logf("built and reopened the overview store (%d records) in %v", ovMailboxes*(1+2*ovRuns), time.Since(start))
	})
	if overviewErr != nil {
		b.Fatal(overviewErr)
	}
	return overviewStore
}

// BenchmarkOverview: the overview's pages, 50 rows a page.
func BenchmarkOverview(b *testing.B) {
	const limit = 50
	project := RunFilter{Forge: "forgejo", Owner: "acme", Project: "p07"}
	mailboxCases := []struct {
		name  string
		f     MailboxFilter
		pages int // pages skipped before the one measured
	}{
		{"ListMailboxes/first-page", MailboxFilter{}, 0},
		{"ListMailboxes/status+project", MailboxFilter{Forge: "forgejo", Owner: "acme", Project: "p07", Statuses: []string{"in_review"}}, 0},
		{"ListMailboxes/deep-page-100", MailboxFilter{}, 100},
		{"ListMailboxes/visible-2-of-50", MailboxFilter{Visible: func(_, _, p string) bool { return p == "p03" || p == "p40" }}, 0},
		{"ListMailboxes/title-no-match", MailboxFilter{Title: "nothing like it"}, 0},
	}
	for _, tc := range mailboxCases {
		b.Run(tc.name, func(b *testing.B) {
			s := openOverviewStore(b)
			cur := ""
			for range tc.pages {
				_, next, err := s.ListMailboxes(tc.f, cur, limit)
				if err != nil || next == "" {
					b.Fatalf("paging: %q %v", next, err)
				}
				cur = next
			}
			b.ReportAllocs()
			b.ResetTimer()
			cpu := cpuTime()
			defer func() { reportCPU(b, cpu) }()
			for b.Loop() {
				rows, _, err := s.ListMailboxes(tc.f, cur, limit)
				if err != nil || len(rows) == 0 && tc.f.Title == "" {
					b.Fatalf("%d rows, %v", len(rows), err)
				}
			}
		})
	}
	runCases := []struct {
		name  string
		f     RunFilter
		pages int
	}{
		{"ListRuns/first-page", RunFilter{}, 0},
		{"ListRuns/status+project", RunFilter{Forge: project.Forge, Owner: project.Owner, Project: project.Project, Statuses: []string{"failed"}}, 0},
		{"ListRuns/phase+adapter", RunFilter{Phases: []string{"ci_fix"}, Adapters: []string{"codex"}}, 0},
		{"ListRuns/deep-page-100", RunFilter{}, 100},
	}
	for _, tc := range runCases {
		b.Run(tc.name, func(b *testing.B) {
			s := openOverviewStore(b)
			cur := ""
			for range tc.pages {
				_, next, err := s.ListRuns(tc.f, cur, limit)
				if err != nil || next == "" {
					b.Fatalf("paging: %q %v", next, err)
				}
				cur = next
			}
			b.ReportAllocs()
			b.ResetTimer()
			cpu := cpuTime()
			defer func() { reportCPU(b, cpu) }()
			for b.Loop() {
				runs, _, err := s.ListRuns(tc.f, cur, limit)
				if err != nil || len(runs) == 0 {
					b.Fatalf("%d runs, %v", len(runs), err)
				}
			}
		})
	}
	dailyCases := []struct {
		name string
		f    RunFilter
	}{
		{"Daily/30d", RunFilter{}},
		{"Daily/30d-project", project},
		{"Daily/30d-phase", RunFilter{Phases: []string{"development"}}},
	}
	for _, tc := range dailyCases {
		b.Run(tc.name, func(b *testing.B) {
			s := openOverviewStore(b)
			b.ReportAllocs()
			b.ResetTimer()
			cpu := cpuTime()
			defer func() { reportCPU(b, cpu) }()
			for b.Loop() {
				if days := s.Daily(tc.f, overviewNow.AddDate(0, 0, -29), overviewNow); len(days) != 30 {
					b.Fatalf("%d days", len(days))
				}
			}
		})
	}
}

// BenchmarkOverviewIndexWrite: what the overview's indexes add to a commit
// per written record, in the 10k-mailbox, 100k-run store: a mailbox
// rewritten (it moves to the head of the UpdatedAt lists) and a run
// rewritten with a new status (its day buckets change).
func BenchmarkOverviewIndexWrite(b *testing.B) {
	for _, kind := range []string{"mailbox", "run"} {
		b.Run(kind, func(b *testing.B) {
			s := openOverviewStore(b)
			s.mu.Lock() // the fixture's snapshot, changed in place as apply does
			defer s.mu.Unlock()
			snap := s.snap
			var path string
			for p := range snap.ov.runByPath {
				path = p
				break
			}
			if kind == "mailbox" {
				path = path[:strings.LastIndex(path, "/runs/")] + "/mailbox.json"
			}
			old := snap.files[path]
			mbID, _, _ := mailboxIDOf(path)
			recs := [2]*record{old, nil}
			switch v := old.val.(type) {
			case *Mailbox:
				m := *v
				m.UpdatedAt = overviewNow.Add(time.Hour)
				recs[1] = &record{val: &m}
			case *runLite:
				r := *v
				c := snap.ov.classes[r.class]
				c.status = RunCanceled
				r.class = snap.ov.classOf(c)
				recs[1] = &record{val: &r}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				snap.ovUnindex(path, recs[i%2])
				snap.ovIndex(path, mbID, recs[(i+1)%2])
			}
			b.StopTimer()
			if b.N%2 == 1 {
				snap.ovUnindex(path, recs[1])
				snap.ovIndex(path, mbID, recs[0])
			}
		})
	}
}
