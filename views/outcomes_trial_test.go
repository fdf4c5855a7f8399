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

// seedTrial is a store whose project alice/demo ran a 1:1 trial over six
// finished issues (claude-code merged 2 of 3, codex 1 of 3) and had one
// issue before it, and whose project alice/other ran none.
func seedTrial(t *testing.T) Deps {
	t.Helper()
	st := newStore(t)
	t0 := overviewNow.Add(-5 * 24 * time.Hour)
	issue := func(project string, iid int64, arm string, merged bool) state.Mailbox {
		mb := state.Mailbox{Forge: "forgejo", Owner: "alice", Project: project, Kind: state.KindIssue, IID: iid, Title: "an issue", Status: "done",
			CreatedAt: t0, MergeRequestAt: t0.Add(time.Hour), End: &state.MailboxEnd{How: state.EndClosed, At: t0.Add(3 * time.Hour)}}
		if merged {
			mb.End = &state.MailboxEnd{How: state.EndMerged, By: "alice", At: t0.Add(time.Duration(iid) * time.Hour)}
		}
		if arm != "" {
			mb.Trial = &state.Trial{Arm: arm, Adapter: arm, Setting: "claude-code:1,codex:1"}
		}
		return mb
	}
	list := []state.Mailbox{
		issue("demo", 1, "", true),
		issue("demo", 2, "claude-code", true), issue("demo", 3, "codex", true), issue("demo", 4, "claude-code", true),
		issue("demo", 5, "codex", false), issue("demo", 6, "claude-code", false), issue("demo", 7, "codex", false),
		issue("other", 1, "", true),
	}
	err := st.Update(context.Background(), func(tx *state.Tx) error {
		for _, mb := range list {
			if err := tx.PutMailbox(mb); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return Deps{Records: st, Runner: "image", Clock: func() time.Time { return overviewNow }, Statuses: lifecycle}
}

// The outcomes compare the arms of a project's trial, and on three issues
// each say the difference is within noise, on the page and in the JSON.
func TestOutcomesTrialWithinNoise(t *testing.T) {
	srv := serve(t, seedTrial(t))
	code, body := httpGet(t, srv.URL+"/api/outcomes")
	if code != 200 || strings.Contains(body, "NaN") {
		t.Fatalf("%d %s", code, body)
	}
	var a struct {
		Trial []struct {
			Forge, Project string
			outcomes.Trial
		} `json:"trial"`
	}
	if err := json.Unmarshal([]byte(body), &a); err != nil {
		t.Fatal(err)
	}
	if len(a.Trial) != 1 || a.Trial[0].Project != "alice/demo" {
		t.Fatalf("trial: %+v, want alice/demo's alone", a.Trial)
	}
	tr := a.Trial[0]
	if tr.Verdict != outcomes.VerdictNoise || tr.Better != "" || len(tr.Arms) != 2 {
		t.Fatalf("trial %+v, want within noise over two arms", tr.Trial)
	}
	cc, cx := tr.Arms[0], tr.Arms[1]
	if cc.Arm != "claude-code" || cc.Issues != 3 || cc.MergeRate.Count != 2 || cx.Arm != "codex" || cx.MergeRate.Count != 1 || cx.MergeRate.Of != 3 {
		t.Errorf("arms %+v", tr.Arms)
	}
	if cc.ToMerge == nil || cc.ToMerge.Median != 3*time.Hour || cc.Interval == nil || cc.Interval.Low >= cx.Interval.High {
		t.Errorf("claude-code: to merge %+v, interval %+v against codex %+v", cc.ToMerge, cc.Interval, cx.Interval)
	}

	code, page := httpGet(t, srv.URL+"/outcomes")
	section := page[strings.Index(page, `data-test="trial"`)+1:]
	for _, want := range []string{
		"within noise: fewer than 5 finished issues meant to merge in claude-code 2 of 3 merged (67%, 95% interval 21–94%); codex 1 of 3 merged (33%, 95% interval 6–79%)",
		"<td data-label=\"arm\">claude-code</td>", "67% (2 of 3)", "21–94%", "3h (n=2)", "33% (1 of 3)",
	} {
		if code != 200 || !strings.Contains(section, want) {
			t.Errorf("the page's trial section lacks %q", want)
		}
	}
	if strings.Count(page, `data-test="trial"`) != 1 {
		t.Error("a trial section for a project that ran none")
	}
	if _, body := httpGet(t, srv.URL+"/api/outcomes?project=alice/other"); strings.Contains(body, `"trial"`) {
		t.Errorf("a project with no trial has one: %s", body)
	}
}
