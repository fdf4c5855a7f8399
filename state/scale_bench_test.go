package state

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// BenchmarkScale (issue 34): a synthetic year of ten busy projects written
// through the store's API, one commit per project and day, then what the
// bot meets on it: a fresh process's resident memory idle and with the
// store open, the cold open's time (the page cache is warm; from the open
// checkpoint, and reading every record: the "-full" figures), the overview's
// pages, `alfred state verify` and `alfred state compact` (-keep 1000
// -archive). 100k records; 1M with -state.1m (three to five minutes on
// two cores). The
// figures of a round are medians of its measurements; compact runs once,
// after the rounds, since it rewrites the fixture: run it -count 1 with
// -benchtime Nx for N rounds (scripts/bench.sh does).
func BenchmarkScale(b *testing.B) {
	n, name := 100_000, "100k"
	if *bench1M {
		n, name = 1_000_000, "1M"
	}
	b.Run("records="+name, func(b *testing.B) {
		dir := yearFixture(b, n)
		var open, full []childFigures // with the open checkpoint, and reading every record
		var pages [4][]float64
		var verify []float64
		for b.Loop() {
			open = append(open, openInChild(b, dir, true))
			full = append(full, openInChild(b, dir, false))
			s, err := Open(context.Background(), dir, Options{ReadOnly: true})
			if err != nil {
				b.Fatal(err)
			}
			for i, ms := range overviewPages(b, s) {
				pages[i] = append(pages[i], ms)
			}
			verify = append(verify, verifyTime(b, s))
		}
		b.StopTimer()
		b.ReportMetric(0, "ns/op")
		for _, m := range []struct {
			suffix string
			runs   []childFigures
		}{{"", open}, {"-full", full}} {
			pick := func(f func(childFigures) float64) float64 {
				var v []float64
				for _, c := range m.runs {
					v = append(v, f(c))
				}
				return median(v)
			}
			b.ReportMetric(pick(func(c childFigures) float64 { return c.idle }), "rss-idle"+m.suffix+"-MiB")
			b.ReportMetric(pick(func(c childFigures) float64 { return c.open }), "rss-open"+m.suffix+"-MiB")
			b.ReportMetric(pick(func(c childFigures) float64 { return c.heap }), "heap-open"+m.suffix+"-MiB")
			b.ReportMetric(pick(func(c childFigures) float64 { return c.ms }), "open"+m.suffix+"-ms")
			b.ReportMetric(pick(func(c childFigures) float64 { return c.cpu }), "open-cpu"+m.suffix+"-ms")
		}
		for i, unit := range []string{"mailboxes-page-ms", "mailboxes-status-project-ms", "runs-page-ms", "daily-30d-ms"} {
			b.ReportMetric(median(pages[i]), unit)
		}
		b.ReportMetric(median(verify), "verify-s")
		closeS, coldMiB := closeTime(b, dir)
		b.ReportMetric(closeS, "close-after-write-s")
		b.ReportMetric(coldMiB, "cold-file-MiB")
		b.ReportMetric(compactTime(b, dir), "compact-s")
	})
}

// A year of ten projects: every day each project opens mailboxes/3650 issues,
// each worked by two to six runs with one llm session each (nine records
// an issue on average). Issues older than two weeks are finished (merged,
// some closed unmerged); the newer ones sit in the working statuses.
var (
	yearProjects = 10
	yearEnd      = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	yearWorking  = []string{"functional_analysis", "waiting_plan_validation", "development", "in_review", "blocked", "waiting_info"}
	yearPhases   = []string{"analysis", "development", "ci_fix", "review"}
	yearAdapters = []string{"claude-code", "codex", "opencode"}
)

// yearFixture builds the year of about n records, once per process.
func yearFixture(b *testing.B, n int) string {
	b.Helper()
	fixtureMu.Lock()
	defer fixtureMu.Unlock()
	key := fmt.Sprintf("year-%d", n)
	if d := fixtureDirs[key]; d != "" {
		return d
	}
	if _, err := benchRoot(); err != nil {
		b.Fatal(err)
	}
	dir := filepath.Join(fixtureRoot, key)
	built := filepath.Join(fixtureRoot, key+".built")
	if _, err := os.Stat(built); err == nil {
		fixtureDirs[key] = dir
		return dir
	}
	start := time.Now()
	s, err := Open(context.Background(), dir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	perDay := float64(n) / 9 / float64(365*yearProjects)
	clock := now
	defer func() { now = clock }()
	issue, written, commits := 0, 0, 0
	for day := range 365 {
		at := yearEnd.AddDate(0, 0, day-365)
		for p := range yearProjects {
			count := int(float64(day*yearProjects+p+1)*perDay) - int(float64(day*yearProjects+p)*perDay)
			now = func() time.Time { return at.Add(time.Duration(p) * time.Minute) }
			err := s.Update(context.Background(), func(tx *Tx) error {
				for i := range count {
					w, err := putYearIssue(tx, p, issue+i, at)
					if err != nil {
						return err
					}
					written += w
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
			issue += count
			if count > 0 {
				commits++
			}
		}
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	took := time.Since(start)
	b.Logf("built a year of %d projects: %d issues, %d records, %d commits, in %v (%.0f records/s)",
		yearProjects, issue, written, commits, took.Round(time.Second), float64(written)/took.Seconds())
	if err := os.WriteFile(built, nil, 0o644); err != nil {
		b.Fatal(err)
	}
	fixtureDirs[key] = dir
	return dir
}

// putYearIssue writes issue i of project p, opened at day, with its runs and
// sessions; it returns how many records it wrote.
func putYearIssue(tx *Tx, p, i int, day time.Time) (int, error) {
	opened := day.Add(time.Duration(i%600) * time.Minute)
	iid := int64(i + 1) // unique: i/yearProjects+1 gave ten issues of a project one number, one mailbox
	m := Mailbox{Forge: "forgejo", Owner: "acme", Project: fmt.Sprintf("p%d", p), Kind: KindIssue, IID: iid,
		Title: fmt.Sprintf("Issue %d: make the widget do thing %d", i, i%97), Labels: []string{"type::task"},
		IssueURL: fmt.Sprintf("http://forge.test/acme/p%d/issues/%d", p, iid), Author: "dev" + fmt.Sprint(i%13),
		Flow: "task", BranchName: fmt.Sprintf("alfred/issue-%d", iid), CreatedAt: opened, StatusSince: opened}
	if yearEnd.Sub(day) > 14*24*time.Hour {
		m.Status, m.Phase = "done", "done"
		m.End = &MailboxEnd{How: EndMerged, By: "lead", At: opened.Add(30 * time.Hour)}
		if i%9 == 0 {
			m.End.How = EndClosed
		}
		m.MergeRequestIID = iid
	} else {
		m.Status, m.Phase = yearWorking[i%len(yearWorking)], "development"
	}
	if err := tx.PutMailbox(m); err != nil {
		return 0, err
	}
	id := m.Key().ID()
	runs := 2 + i%5
	for j := range runs {
		at := opened.Add(time.Duration(j) * 90 * time.Minute)
		r := Run{ID: fmt.Sprintf("run-%d-%d", i, j), MailboxID: id, Phase: yearPhases[j%len(yearPhases)], Runner: "image",
			AdapterID: yearAdapters[i%len(yearAdapters)], Status: RunSucceeded, CreatedAt: at, StartedAt: at, FinishedAt: at.Add(7 * time.Minute),
			Outcome: "pushed 3 commits", Log: strings.Repeat("agent output line\n", 12)}
		if (i+j)%11 == 0 {
			r.Status, r.Outcome = RunFailed, "tests failed"
		}
		if err := tx.PutRun(r); err != nil {
			return 0, err
		}
		ls := LLMSession{ID: fmt.Sprintf("ls-%d-%d", i, j), RunID: r.ID, MailboxID: id, AdapterID: r.AdapterID,
			Provider: "anthropic", Model: "sonnet", InputTokens: 12000 + int64(i%5000), OutputTokens: 800 + int64(j*100),
			CostUSD: 0.042, DurationMS: 61000, Outcome: "ok", NativeSessionID: ptr(fmt.Sprintf("native-%d-%d", i, j)),
			Resumed: j > 0, CreatedAt: at}
		if err := tx.PutLLMSession(ls); err != nil {
			return 0, err
		}
	}
	return 1 + 2*runs, nil
}

type childFigures struct{ idle, open, heap, ms, cpu float64 }

// openInChild opens the store in a fresh process, writable as the bot
// opens it (see rssChild), from its open checkpoint or (withCk unset)
// reading every record, and returns what it measured.
func openInChild(b *testing.B, dir string, withCk bool) childFigures {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = childEnv(dir, true)
	if !withCk {
		cmd.Env = append(cmd.Env, rssNoCkEnv+"=1")
		if *cpuProfile != "" {
			cmd.Env = append(cmd.Env, rssCPUEnv+"="+*cpuProfile+".full") // the last one counts
		}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("rss child: %v\n%s", err, out)
	}
	var c childFigures
	if _, err := fmt.Sscanf(string(out), "idle %g open %g heap %g ms %g cpu %g", &c.idle, &c.open, &c.heap, &c.ms, &c.cpu); err != nil {
		b.Fatalf("rss child said %q: %v", out, err)
	}
	return c
}

// overviewPages times the overview's first pages (50 rows) and its 30
// days' totals, in milliseconds, each the median of five calls.
func overviewPages(b *testing.B, s *Store) [4]float64 {
	b.Helper()
	project := RunFilter{Forge: "forgejo", Owner: "acme", Project: "p3"}
	calls := [4]func() int{
		func() int { rows, _, _ := s.ListMailboxes(MailboxFilter{}, "", 50); return len(rows) },
		func() int {
			rows, _, _ := s.ListMailboxes(MailboxFilter{Forge: "forgejo", Owner: "acme", Project: "p3", Statuses: []string{"in_review"}}, "", 50)
			return len(rows)
		},
		func() int { runs, _, _ := s.ListRuns(RunFilter{}, "", 50); return len(runs) },
		func() int { return len(s.Daily(project, yearEnd.AddDate(0, 0, -30), yearEnd.AddDate(0, 0, -1))) },
	}
	var out [4]float64
	for i, call := range calls {
		var ms []float64
		for range 5 {
			start := time.Now()
			if call() == 0 {
				b.Fatalf("overview call %d found nothing", i)
			}
			ms = append(ms, float64(time.Since(start))/float64(time.Millisecond))
		}
		out[i] = median(ms)
	}
	return out
}

// verifyTime runs Verify (git fsck and the records' checks) and returns its
// time in seconds; the fixture must have no problem.
func verifyTime(b *testing.B, s *Store) float64 {
	b.Helper()
	start := time.Now()
	problems, err := s.Verify(context.Background(), io.Discard)
	if err != nil || problems != 0 {
		b.Fatalf("verify: %d problems, %v", problems, err)
	}
	return time.Since(start).Seconds()
}

// closeTime opens the fixture writable, finishes one open mailbox and
// closes it, which makes the mailbox cold (writing the cold file again)
// and writes the checkpoint; it returns the Close's time in seconds and
// the cold file's size in MiB.
func closeTime(b *testing.B, dir string) (float64, float64) {
	b.Helper()
	ctx := context.Background()
	s, err := Open(ctx, dir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	open, err := s.OpenMailboxes()
	if err != nil || len(open) == 0 {
		b.Fatalf("%d open mailboxes: %v", len(open), err)
	}
	m := open[0]
	m.Status, m.Phase, m.ActiveRunID = MailboxDone, "done", ""
	if err := s.Update(ctx, func(tx *Tx) error { return tx.PutMailbox(m) }); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	took := time.Since(start).Seconds()
	st, err := os.Stat(filepath.Join(dir, coldName))
	if err != nil {
		b.Fatal(err)
	}
	return took, float64(st.Size()) / (1 << 20)
}

// compactTime compacts the fixture as `alfred state compact -archive` does
// and returns its time in seconds; the store must open to the same records.
func compactTime(b *testing.B, dir string) float64 {
	b.Helper()
	before, err := Open(context.Background(), dir, Options{ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	records := before.Len()
	start := time.Now()
	res, err := Compact(context.Background(), dir, CompactOptions{Keep: 1000, Archive: true})
	took := time.Since(start).Seconds()
	if err != nil {
		b.Fatal(err)
	}
	after, err := Open(context.Background(), dir, Options{ReadOnly: true})
	if err != nil || after.Len() != records {
		b.Fatalf("after compact (%+v): %v", res, err)
	}
	b.Logf("compact: %d commits -> %d, %d packs -> 1 of %d objects, in %.1f s", res.Before, res.After, res.PacksBefore, res.Objects, took)
	return took
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	v = slices.Sorted(slices.Values(v))
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}
