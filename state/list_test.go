package state

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// The overview's queries are checked against an oracle that reads every
// record through the store's plain queries (List, Get) and filters and
// sorts them the slow way.

var listT0 = time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)

// fakeClock makes PutMailbox stamp UpdatedAt from a clock that moves only
// when told, so tests control ties.
func fakeClock(t *testing.T) *time.Time {
	t.Helper()
	clock := listT0
	old := now
	now = func() time.Time { return clock }
	t.Cleanup(func() { now = old })
	return &clock
}

var listProjects = []ProjectRef{
	{"forgejo", "acme", "widget"},
	{"forgejo", "acme", "gadget"},
	{"forgejo", "other", "widget"},
	{"gitlab", "group/sub", "app.json"}, // escaped segments
}

var (
	mbStatuses  = []string{"blocked", "waiting_info", "in_review", "development"}
	runStatuses = []RunStatus{RunSucceeded, RunFailed, RunRunning, RunTimeout}
	phases      = []string{"analysis", "development", "ci_fix"}
	adapters    = []string{"claude-code", "codex"}
)

func listMailbox(i int) Mailbox {
	p := listProjects[i%len(listProjects)]
	m := Mailbox{Forge: p.Forge, Owner: p.Owner, Project: p.Project, Kind: KindIssue, IID: int64(i + 1),
		Title:  fmt.Sprintf("Issue %d: %s", i, []string{"Add Login", "fix crash", "Docs"}[i%3]),
		Status: mbStatuses[i%len(mbStatuses)], Phase: "analysis"}
	if i%5 == 0 {
		m.Kind = KindMR
	}
	if i%7 == 3 {
		m.Quarantined = []QuarantinedEvent{{Delivery: "d", Type: "issue", Path: "events/x.json", Error: "boom"}}
	}
	return m
}

// seedList writes n mailboxes (UpdatedAt listT0 + i/2 minutes: pairs tie)
// and their runs and llm sessions, in one transaction per mailbox.
func seedList(t *testing.T, s *Store, clock *time.Time, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		*clock = listT0.Add(time.Duration(i/2) * time.Minute)
		m := listMailbox(i)
		err := s.Update(context.Background(), func(tx *Tx) error {
			if err := tx.PutMailbox(m); err != nil {
				return err
			}
			id := m.Key().ID()
			for j := range (i / len(listProjects)) % 4 {
				r := Run{ID: fmt.Sprintf("run-%d-%d", i, j), MailboxID: id, Phase: phases[(i+j)%3],
					AdapterID: adapters[(i/2+j)%2], Status: runStatuses[(i+j)%4],
					CreatedAt: listT0.Add(time.Duration(i*7+j*13) * time.Hour / 3)}
				if i%9 == 4 && j == 1 {
					r.CreatedAt = r.CreatedAt.Add(-time.Duration(j*13) * time.Hour / 3) // same CreatedAt as run j=0
				}
				if err := tx.PutRun(r); err != nil {
					return err
				}
				for k := range (i + j) % 3 {
					ls := LLMSession{ID: fmt.Sprintf("ls-%d-%d-%d", i, j, k), RunID: r.ID, MailboxID: id, AdapterID: r.AdapterID,
						InputTokens: int64(100*i + k), OutputTokens: int64(10*j + k + 1), CostUSD: 0.01 * float64(i%5+k+1),
						CreatedAt: r.CreatedAt.Add(time.Duration(k) * time.Minute)}
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
	}
}

// oracle holds every record, read through List and Get.
type oracle struct {
	mailboxes []Mailbox
	runs      []Run
	sessions  []LLMSession
}

func readOracle(t *testing.T, s *Store) oracle {
	t.Helper()
	var o oracle
	for _, p := range s.List("mailboxes") {
		raw, err := s.Get(p)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		switch kindOf(p) {
		case "mailbox":
			o.mailboxes = append(o.mailboxes, Mailbox{})
			v = &o.mailboxes[len(o.mailboxes)-1]
		case "run":
			o.runs = append(o.runs, Run{})
			v = &o.runs[len(o.runs)-1]
		case "llm_session":
			o.sessions = append(o.sessions, LLMSession{})
			v = &o.sessions[len(o.sessions)-1]
		}
		if err := json.Unmarshal(raw, v); err != nil {
			t.Fatal(err)
		}
	}
	return o
}

func projOK(forge, owner, project string, f, o, p string, vis func(string, string, string) bool) bool {
	return (f == "" || f == forge) && (o == "" || o == owner) && (p == "" || p == project) && (vis == nil || vis(forge, owner, project))
}

func (o oracle) mailboxRows(f MailboxFilter) []MailboxRow {
	var rows []MailboxRow
	for _, m := range o.mailboxes {
		if !projOK(m.Forge, m.Owner, m.Project, f.Forge, f.Owner, f.Project, f.Visible) ||
			(len(f.Statuses) > 0 && !slices.Contains(f.Statuses, m.Status)) || (f.Quarantined && len(m.Quarantined) == 0) ||
			!strings.Contains(strings.ToLower(m.Title), strings.ToLower(f.Title)) {
			continue
		}
		row := MailboxRow{Mailbox: m}
		for _, r := range o.runs {
			if r.MailboxID == m.ID {
				row.Runs++
				if row.LastRun == nil || r.CreatedAt.After(row.LastRun.CreatedAt) ||
					(r.CreatedAt.Equal(row.LastRun.CreatedAt) && r.ID > row.LastRun.ID) {
					row.LastRun = &r
				}
			}
		}
		for _, ls := range o.sessions {
			if ls.MailboxID == m.ID {
				row.InputTokens += ls.InputTokens
				row.OutputTokens += ls.OutputTokens
				row.CostUSD += ls.CostUSD
				if row.LastRun != nil && ls.RunID == row.LastRun.ID && (row.LastSession == nil || llmSessionLess(row.LastSession, &ls)) {
					row.LastSession = &ls
				}
			}
		}
		rows = append(rows, row)
	}
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i].Mailbox, rows[j].Mailbox
		if !a.UpdatedAt.Equal(b.UpdatedAt) {
			return a.UpdatedAt.After(b.UpdatedAt)
		}
		return a.ID > b.ID
	})
	return rows
}

func (o oracle) runMatches(f RunFilter, r Run) bool {
	k, _ := ParseMailboxID(r.MailboxID)
	return projOK(k.Forge, k.Owner, k.Project, f.Forge, f.Owner, f.Project, f.Visible) &&
		(f.MailboxID == "" || f.MailboxID == r.MailboxID) &&
		(len(f.Statuses) == 0 || slices.Contains(f.Statuses, string(r.Status))) &&
		(len(f.Phases) == 0 || slices.Contains(f.Phases, r.Phase)) &&
		(len(f.Adapters) == 0 || slices.Contains(f.Adapters, r.AdapterID))
}

func (o oracle) runList(f RunFilter) []Run {
	var out []Run
	for _, r := range o.runs {
		if o.runMatches(f, r) {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return runNewer(&out[i], &out[j]) })
	return out
}

func runNewer(a, b *Run) bool {
	if !a.CreatedAt.Equal(b.CreatedAt) {
		return a.CreatedAt.After(b.CreatedAt)
	}
	return a.ID > b.ID
}

func (o oracle) daily(f RunFilter, since, until time.Time) []DayTotal {
	var out []DayTotal
	for d := since.UTC().Truncate(24 * time.Hour); !d.After(until); d = d.Add(24 * time.Hour) {
		out = append(out, DayTotal{Day: d.Format(time.DateOnly), Runs: map[string]int{}})
	}
	for _, r := range o.runs {
		if !o.runMatches(f, r) {
			continue
		}
		for i := range out {
			if out[i].Day != r.CreatedAt.UTC().Format(time.DateOnly) {
				continue
			}
			out[i].Runs[string(r.Status)]++
			for _, ls := range o.sessions {
				if ls.RunID == r.ID && ls.MailboxID == r.MailboxID {
					out[i].InputTokens += ls.InputTokens
					out[i].OutputTokens += ls.OutputTokens
					out[i].CostUSD += ls.CostUSD
				}
			}
		}
	}
	return out
}

// allMailboxes pages through ListMailboxes with limit.
func allMailboxes(t *testing.T, s *Store, f MailboxFilter, limit int) []MailboxRow {
	t.Helper()
	var out []MailboxRow
	cur := ""
	for range 10_000 {
		rows, next, err := s.ListMailboxes(f, cur, limit)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) > limit || (next != "" && len(rows) != limit) {
			t.Fatalf("page of %d rows with next %q, limit %d", len(rows), next, limit)
		}
		out = append(out, rows...)
		if next == "" {
			return out
		}
		cur = next
	}
	t.Fatal("paging does not end")
	return nil
}

func allRuns(t *testing.T, s *Store, f RunFilter, limit int) []Run {
	t.Helper()
	var out []Run
	cur := ""
	for range 10_000 {
		runs, next, err := s.ListRuns(f, cur, limit)
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) > limit || (next != "" && len(runs) != limit) {
			t.Fatalf("page of %d runs with next %q, limit %d", len(runs), next, limit)
		}
		out = append(out, runs...)
		if next == "" {
			return out
		}
		cur = next
	}
	t.Fatal("paging does not end")
	return nil
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func sameRows(t *testing.T, what string, got, want []MailboxRow) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d rows, want %d", what, len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Mailbox.ID != w.Mailbox.ID || g.Runs != w.Runs || g.InputTokens != w.InputTokens ||
			g.OutputTokens != w.OutputTokens || !near(g.CostUSD, w.CostUSD) || !g.Mailbox.UpdatedAt.Equal(w.Mailbox.UpdatedAt) ||
			g.Mailbox.Status != w.Mailbox.Status {
			t.Fatalf("%s: row %d = %s runs=%d in=%d out=%d cost=%v, want %s runs=%d in=%d out=%d cost=%v", what, i,
				g.Mailbox.ID, g.Runs, g.InputTokens, g.OutputTokens, g.CostUSD, w.Mailbox.ID, w.Runs, w.InputTokens, w.OutputTokens, w.CostUSD)
		}
		if (g.LastRun == nil) != (w.LastRun == nil) || (g.LastRun != nil && (g.LastRun.ID != w.LastRun.ID || g.LastRun.Status != w.LastRun.Status)) {
			t.Fatalf("%s: row %d (%s) last run %+v, want %+v", what, i, g.Mailbox.ID, g.LastRun, w.LastRun)
		}
		if (g.LastSession == nil) != (w.LastSession == nil) || (g.LastSession != nil && g.LastSession.ID != w.LastSession.ID) {
			t.Fatalf("%s: row %d (%s) last session %+v, want %+v", what, i, g.Mailbox.ID, g.LastSession, w.LastSession)
		}
	}
}

func runIDs(runs []Run) []string {
	out := make([]string, len(runs))
	for i, r := range runs {
		out[i] = r.MailboxID + " " + r.ID + " " + string(r.Status)
	}
	return out
}

func sameDaily(t *testing.T, what string, got, want []DayTotal) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d days, want %d", what, len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Day != w.Day || g.InputTokens != w.InputTokens || g.OutputTokens != w.OutputTokens || !near(g.CostUSD, w.CostUSD) ||
			fmt.Sprint(g.Runs) != fmt.Sprint(w.Runs) {
			t.Fatalf("%s: day %d = %+v, want %+v", what, i, g, w)
		}
	}
}

var onlyAcme = func(forge, owner, project string) bool { return owner == "acme" }

var mailboxFilters = []struct {
	name string
	f    MailboxFilter
	want int // rows among the 60 seeded mailboxes
}{
	{"all", MailboxFilter{}, 60},
	{"forge", MailboxFilter{Forge: "gitlab"}, 15},
	{"owner", MailboxFilter{Owner: "acme"}, 30},
	{"project name in two owners", MailboxFilter{Project: "widget"}, 30},
	{"project", MailboxFilter{Forge: "forgejo", Owner: "acme", Project: "widget"}, 15},
	{"escaped project", MailboxFilter{Forge: "gitlab", Owner: "group/sub", Project: "app.json"}, 15},
	{"unknown project", MailboxFilter{Forge: "forgejo", Owner: "acme", Project: "nope"}, 0},
	{"status", MailboxFilter{Statuses: []string{"blocked"}}, 15},
	{"statuses", MailboxFilter{Statuses: []string{"blocked", "waiting_info"}}, 30},
	{"status and project", MailboxFilter{Forge: "forgejo", Owner: "acme", Project: "gadget", Statuses: []string{"waiting_info"}}, 15},
	{"status and other project", MailboxFilter{Forge: "forgejo", Owner: "acme", Project: "gadget", Statuses: []string{"blocked"}}, 0},
	{"quarantined", MailboxFilter{Quarantined: true}, 9},
	{"title", MailboxFilter{Title: "LOGIN"}, 20},
	{"title and status", MailboxFilter{Title: "crash", Statuses: []string{"in_review"}}, 5},
	{"visible", MailboxFilter{Visible: onlyAcme}, 30},
	{"visible and forge", MailboxFilter{Forge: "forgejo", Visible: func(_, owner, _ string) bool { return owner == "other" }}, 15},
	{"nothing visible", MailboxFilter{Visible: func(string, string, string) bool { return false }}, 0},
}

var runFilters = []struct {
	name string
	f    RunFilter
}{
	{"all", RunFilter{}},
	{"project", RunFilter{Forge: "forgejo", Owner: "acme", Project: "widget"}},
	{"owner", RunFilter{Owner: "acme"}},
	{"escaped project", RunFilter{Forge: "gitlab", Owner: "group/sub", Project: "app.json"}},
	{"mailbox", RunFilter{MailboxID: listMailbox(7).Key().ID()}},
	{"mailbox of a hidden project", RunFilter{MailboxID: listMailbox(7).Key().ID(), Visible: onlyAcme}},
	{"mailbox and other project", RunFilter{MailboxID: listMailbox(7).Key().ID(), Project: "widget"}},
	{"status", RunFilter{Statuses: []string{"failed"}}},
	{"statuses and project", RunFilter{Statuses: []string{"failed", "timeout"}, Forge: "forgejo", Owner: "acme", Project: "gadget"}},
	{"phase", RunFilter{Phases: []string{"ci_fix"}}},
	{"adapter and status", RunFilter{Adapters: []string{"codex"}, Statuses: []string{"succeeded"}}},
	{"visible", RunFilter{Visible: onlyAcme}},
	{"visible and phase", RunFilter{Visible: onlyAcme, Phases: []string{"analysis", "development"}}},
}

func TestListMailboxesFilters(t *testing.T) {
	clock := fakeClock(t)
	s := openStore(t, t.TempDir())
	defer s.Close()
	seedList(t, s, clock, 0, 60)
	o := readOracle(t, s)
	for _, tc := range mailboxFilters {
		t.Run(tc.name, func(t *testing.T) {
			want := o.mailboxRows(tc.f)
			if len(want) != tc.want {
				t.Fatalf("oracle finds %d rows, the table says %d", len(want), tc.want)
			}
			for _, limit := range []int{1, 7, 100} {
				sameRows(t, fmt.Sprintf("limit %d", limit), allMailboxes(t, s, tc.f, limit), want)
			}
		})
	}
}

func TestListRunsFilters(t *testing.T) {
	clock := fakeClock(t)
	s := openStore(t, t.TempDir())
	defer s.Close()
	seedList(t, s, clock, 0, 60)
	o := readOracle(t, s)
	for _, tc := range runFilters {
		t.Run(tc.name, func(t *testing.T) {
			want := runIDs(o.runList(tc.f))
			if tc.name != "mailbox of a hidden project" && tc.name != "mailbox and other project" && len(want) == 0 {
				t.Fatal("the oracle selects nothing: a weak case")
			}
			for _, limit := range []int{1, 4, 1000} {
				if got := runIDs(allRuns(t, s, tc.f, limit)); !slices.Equal(got, want) {
					t.Fatalf("limit %d:\n got %v\nwant %v", limit, got, want)
				}
			}
		})
	}
}

// TestListPagingWhileWriting: records added between pages (newer ones, and
// runs dated inside the pages already read) neither repeat nor hide the
// ones present when paging began.
func TestListPagingWhileWriting(t *testing.T) {
	clock := fakeClock(t)
	s := openStore(t, t.TempDir())
	defer s.Close()
	seedList(t, s, clock, 0, 40)
	before := readOracle(t, s)
	wantMB := before.mailboxRows(MailboxFilter{})
	wantRuns := before.runList(RunFilter{})

	seen := map[string]bool{}
	var got []string
	cur, added := "", 40
	for {
		rows, next, err := s.ListMailboxes(MailboxFilter{}, cur, 6)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if seen[r.Mailbox.ID] {
				t.Fatalf("mailbox %s shown twice", r.Mailbox.ID)
			}
			seen[r.Mailbox.ID] = true
			got = append(got, r.Mailbox.ID)
		}
		if next == "" {
			break
		}
		seedList(t, s, clock, added, 3) // newer mailboxes, older and newer runs
		added += 3
		cur = next
	}
	var want []string
	for _, r := range wantMB {
		want = append(want, r.Mailbox.ID)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("pages while writing:\n got %v\nwant %v", got, want)
	}

	// Runs: add runs both newer than every page and dated between pages.
	old := map[string]bool{}
	for _, r := range wantRuns {
		old[r.ID] = true
	}
	seenRun := map[string]bool{}
	var gotRuns []string
	cur = ""
	for i := 0; ; i++ {
		runs, next, err := s.ListRuns(RunFilter{}, cur, 5)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range runs {
			if seenRun[r.MailboxID+r.ID] {
				t.Fatalf("run %s shown twice", r.ID)
			}
			seenRun[r.MailboxID+r.ID] = true
			if old[r.ID] {
				gotRuns = append(gotRuns, r.ID)
			}
		}
		if next == "" {
			break
		}
		mb := listMailbox(1).Key().ID()
		err = s.Update(context.Background(), func(tx *Tx) error {
			if err := tx.PutRun(Run{ID: fmt.Sprintf("late-new-%d", i), MailboxID: mb, Status: RunQueued, CreatedAt: listT0.AddDate(1, 0, 0)}); err != nil {
				return err
			}
			return tx.PutRun(Run{ID: fmt.Sprintf("late-mid-%d", i), MailboxID: mb, Status: RunQueued, CreatedAt: runs[len(runs)-1].CreatedAt.Add(time.Hour)})
		})
		if err != nil {
			t.Fatal(err)
		}
		cur = next
	}
	var wantIDs []string
	for _, r := range wantRuns {
		wantIDs = append(wantIDs, r.ID)
	}
	if !slices.Equal(gotRuns, wantIDs) {
		t.Fatalf("run pages while writing:\n got %v\nwant %v", gotRuns, wantIDs)
	}
}

func TestListBadCursor(t *testing.T) {
	s := openStore(t, t.TempDir())
	defer s.Close()
	for _, c := range []string{"%%%", "bm90LWEtY3Vyc29y", encodeCursorRaw("x|id"), encodeCursorRaw("12|"), "MTI"} {
		if _, _, err := s.ListMailboxes(MailboxFilter{}, c, 10); !errors.Is(err, ErrBadCursor) {
			t.Errorf("ListMailboxes(cursor %q) error %v, want ErrBadCursor", c, err)
		}
		if _, _, err := s.ListRuns(RunFilter{}, c, 10); !errors.Is(err, ErrBadCursor) {
			t.Errorf("ListRuns(cursor %q) error %v, want ErrBadCursor", c, err)
		}
	}
	// A well-formed cursor past every record is an empty last page.
	rows, next, err := s.ListMailboxes(MailboxFilter{}, encodeCursorRaw("5|zzz"), 10)
	if err != nil || len(rows) != 0 || next != "" {
		t.Fatalf("valid cursor on an empty store: %v %q %v", rows, next, err)
	}
}

// encodeCursorRaw makes a cursor of any text, well-formed or not.
func encodeCursorRaw(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

func TestListVisibleOncePerProject(t *testing.T) {
	clock := fakeClock(t)
	s := openStore(t, t.TempDir())
	defer s.Close()
	seedList(t, s, clock, 0, 40)
	calls := map[ProjectRef]int{}
	vis := func(forge, owner, project string) bool {
		calls[ProjectRef{forge, owner, project}]++
		return owner != "group/sub"
	}
	rows, _, err := s.ListMailboxes(MailboxFilter{Visible: vis}, "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Mailbox.Owner == "group/sub" {
			t.Fatalf("hidden project shown: %s", r.Mailbox.ID)
		}
	}
	if len(rows) != 30 {
		t.Fatalf("%d rows, want 30", len(rows))
	}
	for p, n := range calls {
		if n != 1 {
			t.Fatalf("Visible called %d times for %v", n, p)
		}
	}
	if len(calls) != len(listProjects) {
		t.Fatalf("Visible asked about %d projects, want %d", len(calls), len(listProjects))
	}
	clear(calls)
	runs, _, err := s.ListRuns(RunFilter{Visible: vis}, "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if strings.HasPrefix(r.MailboxID, "gitlab/") {
			t.Fatalf("run of a hidden project shown: %s", r.ID)
		}
	}
	clear(calls)
	s.Daily(RunFilter{Visible: vis, Phases: []string{"analysis"}}, listT0, listT0.AddDate(0, 0, 30))
	for p, n := range calls {
		if n != 1 {
			t.Fatalf("Daily: Visible called %d times for %v", n, p)
		}
	}
}

func TestDaily(t *testing.T) {
	clock := fakeClock(t)
	s := openStore(t, t.TempDir())
	defer s.Close()
	seedList(t, s, clock, 0, 60)
	o := readOracle(t, s)
	since, until := listT0.AddDate(0, 0, -3).Add(17*time.Hour), listT0.AddDate(0, 0, 40).Add(5*time.Hour)
	for _, tc := range runFilters {
		t.Run(tc.name, func(t *testing.T) {
			sameDaily(t, tc.name, s.Daily(tc.f, since, until), o.daily(tc.f, since, until))
		})
	}
	days := s.Daily(RunFilter{}, since, until)
	if len(days) != 44 || days[0].Day != "2026-11-17" || days[43].Day != "2026-12-30" {
		t.Fatalf("days %s .. %s (%d), want 2026-11-17 .. 2026-12-30 (44)", days[0].Day, days[len(days)-1].Day, len(days))
	}
	if len(days[0].Runs) != 0 || days[0].InputTokens != 0 || days[0].CostUSD != 0 || days[0].Runs == nil {
		t.Fatalf("a day without runs: %+v", days[0])
	}
	total, tokens := 0, int64(0)
	for _, d := range days {
		for _, n := range d.Runs {
			total += n
		}
		tokens += d.InputTokens
	}
	var wantTokens int64
	for _, ls := range o.sessions {
		wantTokens += ls.InputTokens
	}
	if total != len(o.runs) || tokens != wantTokens {
		t.Fatalf("Daily adds up to %d runs and %d input tokens, want %d and %d", total, tokens, len(o.runs), wantTokens)
	}
	if got := s.Daily(RunFilter{}, until, since); len(got) != 0 {
		t.Fatalf("since after now: %d days", len(got))
	}
	if got := s.Daily(RunFilter{}, listT0.Add(23*time.Hour), listT0.Add(time.Hour)); len(got) != 1 {
		t.Fatalf("the same day: %d days", len(got))
	}
}

// checkAll compares every query with the oracle.
func checkAll(t *testing.T, s *Store, what string) {
	t.Helper()
	o := readOracle(t, s)
	for _, tc := range mailboxFilters {
		sameRows(t, what+": "+tc.name, allMailboxes(t, s, tc.f, 5), o.mailboxRows(tc.f))
	}
	for _, tc := range runFilters {
		if got, want := runIDs(allRuns(t, s, tc.f, 6)), runIDs(o.runList(tc.f)); !slices.Equal(got, want) {
			t.Fatalf("%s: runs %s:\n got %v\nwant %v", what, tc.name, got, want)
		}
		since, until := listT0.AddDate(0, 0, -1), listT0.AddDate(0, 0, 40)
		sameDaily(t, what+": daily "+tc.name, s.Daily(tc.f, since, until), o.daily(tc.f, since, until))
	}
	var want []ProjectRef
	for _, m := range o.mailboxes {
		p := ProjectRef{m.Forge, m.Owner, m.Project}
		if !slices.Contains(want, p) {
			want = append(want, p)
		}
	}
	slices.SortFunc(want, func(a, b ProjectRef) int {
		return strings.Compare(a.Forge+"\x00"+a.Owner+"\x00"+a.Project, b.Forge+"\x00"+b.Owner+"\x00"+b.Project)
	})
	if got := s.Projects(); !slices.Equal(got, want) {
		t.Fatalf("%s: Projects() = %v, want %v", what, got, want)
	}
}

// TestListIndexesFollowWrites: mailboxes rewritten and removed, runs
// rewritten with a new status, llm sessions rewritten and removed, records
// written in the same commit in any order; then a reopen builds the same
// indexes from the tip.
func TestListIndexesFollowWrites(t *testing.T) {
	clock := fakeClock(t)
	dir := t.TempDir()
	s := openStore(t, dir)
	seedList(t, s, clock, 0, 48)
	checkAll(t, s, "seeded")

	ctx := context.Background()
	step := func(what string, fn func(tx *Tx) error) {
		t.Helper()
		*clock = clock.Add(time.Hour)
		if err := s.Update(ctx, fn); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		checkAll(t, s, what)
	}
	m5, m6, m7 := listMailbox(5), listMailbox(6), listMailbox(13)
	step("mailbox rewritten (moves to the top, new status)", func(tx *Tx) error {
		m, err := tx.Mailbox(m5.Key())
		if err != nil {
			return err
		}
		m.Status = "blocked"
		m.Quarantined = nil
		return tx.PutMailbox(m)
	})
	step("run rewritten with a new status", func(tx *Tx) error {
		r, err := tx.Run(m7.Key().ID(), "run-13-1")
		if err != nil {
			return err
		}
		r.Status = RunCanceled
		return tx.PutRun(r)
	})
	step("newest run rewritten with a new CreatedAt", func(tx *Tx) error {
		r, err := tx.Run(m7.Key().ID(), "run-13-2")
		if err != nil {
			return err
		}
		r.CreatedAt = listT0.AddDate(0, 0, -1)
		return tx.PutRun(r)
	})
	step("llm session rewritten and another removed", func(tx *Tx) error {
		ls, err := tx.LLMSession(m7.Key().ID(), "ls-13-1-1")
		if err != nil {
			return err
		}
		ls.InputTokens, ls.CostUSD = 999_999, 1.5
		if err := tx.PutLLMSession(ls); err != nil {
			return err
		}
		p, _ := sessionPath(m7.Key().ID(), "ls-13-0-0")
		return tx.Delete(p)
	})
	step("newest session of the newest run removed", func(tx *Tx) error {
		p, _ := sessionPath(m7.Key().ID(), "ls-13-1-1")
		return tx.Delete(p)
	})
	step("mailbox removed with its runs and sessions", func(tx *Tx) error { return tx.DeleteMailbox(m6.Key()) })
	step("every mailbox of a project removed", func(tx *Tx) error {
		for i := 3; i < 48; i += 4 {
			if err := tx.DeleteMailbox(listMailbox(i).Key()); err != nil {
				return err
			}
		}
		return nil
	})
	step("run removed, then a new one with its sessions first", func(tx *Tx) error {
		p, _ := runPath(m5.Key().ID(), "run-5-0")
		if err := tx.Delete(p); err != nil {
			return err
		}
		if err := tx.PutLLMSession(LLMSession{ID: "ls-new", RunID: "run-new", MailboxID: m5.Key().ID(), AdapterID: "codex",
			InputTokens: 7, OutputTokens: 8, CostUSD: 0.25, CreatedAt: listT0.AddDate(0, 0, 2)}); err != nil {
			return err
		}
		return tx.PutRun(Run{ID: "run-new", MailboxID: m5.Key().ID(), Phase: "ci_fix", AdapterID: "codex",
			Status: RunRunning, CreatedAt: listT0.AddDate(0, 0, 2)})
	})
	step("mailbox record removed, its runs kept", func(tx *Tx) error {
		return tx.Delete(m5.Key().dir() + "/mailbox.json")
	})
	live := snapshotOfQueries(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir)
	defer s.Close()
	checkAll(t, s, "reopened")
	if got := snapshotOfQueries(t, s); got != live {
		t.Fatalf("reopened store answers differently:\n got %s\nwant %s", got, live)
	}
}

// snapshotOfQueries renders the answers of every query.
func snapshotOfQueries(t *testing.T, s *Store) string {
	var b strings.Builder
	rows := allMailboxes(t, s, MailboxFilter{}, 1000)
	for _, r := range rows {
		fmt.Fprintf(&b, "%s %d %d %d %.9f|", r.Mailbox.ID, r.Runs, r.InputTokens, r.OutputTokens, r.CostUSD)
	}
	fmt.Fprint(&b, runIDs(allRuns(t, s, RunFilter{}, 1000)))
	fmt.Fprint(&b, s.Daily(RunFilter{}, listT0, listT0.AddDate(0, 0, 40)), s.Projects())
	return b.String()
}

func TestListLimitAndEmpty(t *testing.T) {
	s := openStore(t, t.TempDir())
	defer s.Close()
	if rows, next, err := s.ListMailboxes(MailboxFilter{}, "", 10); err != nil || rows != nil || next != "" {
		t.Fatalf("empty store: %v %q %v", rows, next, err)
	}
	if runs, next, err := s.ListRuns(RunFilter{}, "", 0); err != nil || runs != nil || next != "" {
		t.Fatalf("limit 0: %v %q %v", runs, next, err)
	}
	if p := s.Projects(); len(p) != 0 {
		t.Fatalf("projects of an empty store: %v", p)
	}
	if d := s.Daily(RunFilter{}, listT0, listT0); len(d) != 1 || len(d[0].Runs) != 0 {
		t.Fatalf("daily of an empty store: %+v", d)
	}
}
