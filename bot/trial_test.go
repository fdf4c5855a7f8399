package bot

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/alchemic-studio/alfred/agents/fake"
	"github.com/alchemic-studio/alfred/bot/lifecycle"
	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/state"
)

func TestParseTrial(t *testing.T) {
	for _, tt := range []struct {
		in      string
		want    string // trialText of the arms; "" for none
		wantErr string
	}{
		{in: "", want: ""},
		{in: "  ", want: ""},
		{in: "claude-code:1,codex:1", want: "claude-code:1,codex:1"},
		{in: " claude-code:1 , codex:3 ", want: "claude-code:1,codex:3"},
		{in: "claude-code/claude-opus-4:2,codex/gpt-5:1", want: "claude-code/claude-opus-4:2,codex/gpt-5:1"},
		{in: "opencode/anthropic/claude-sonnet-4:1,opencode/ollama/llama3:8b:1", want: "opencode/anthropic/claude-sonnet-4:1,opencode/ollama/llama3:8b:1"},
		{in: "codex/gpt-5:1,codex:1", want: "codex/gpt-5:1,codex:1"}, // one adapter, two models
		{in: "claude-code:1", wantErr: "two arms or more"},
		{in: "claude-code,codex", wantErr: `arm "claude-code" has no share`},
		{in: "claude-code:0,codex:1", wantErr: `the share "0" is not a whole number from 1 to 100`},
		{in: "claude-code:-1,codex:1", wantErr: `the share "-1"`},
		{in: "claude-code:1.5,codex:1", wantErr: `the share "1.5"`},
		{in: "claude-code:101,codex:1", wantErr: `the share "101"`},
		{in: "claude-code:1,claude-code:2", wantErr: `arm "claude-code" is named twice`},
		{in: "codex/gpt-5:1,codex/gpt-5:1", wantErr: `arm "codex/gpt-5" is named twice`},
		{in: "Claude:1,codex:1", wantErr: `"Claude" is not an adapter id`},
		{in: ":1,codex:1", wantErr: `"" is not an adapter id`},
		{in: "codex/:1,claude-code:1", wantErr: "the model after"},
		{in: "claude-code:1,,codex:1", wantErr: "has no share"},
	} {
		t.Run(tt.in, func(t *testing.T) {
			arms, err := ParseTrial(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				if _, perr := AgentTrial.Def().Parse(tt.in); perr == nil {
					t.Errorf("the catalogue takes %q", tt.in)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := trialText(arms); got != tt.want {
				t.Errorf("%q, want %q", got, tt.want)
			}
		})
	}
}

// The round-robin follows the shares from the first issues on, and the
// first declared arm wins a tie.
func TestPickArmFollowsTheShares(t *testing.T) {
	for _, tt := range []struct {
		trial string
		n     int
		want  string // the arms in the order given
	}{
		{"a:1,b:1", 6, "ababab"},
		{"b:1,a:1", 4, "baba"},
		{"a:2,b:1", 6, "abaaba"},
		{"a:1,b:1,c:2", 8, "cabccabc"},
		{"a:3,b:1", 8, "aabaaaba"},
	} {
		t.Run(tt.trial, func(t *testing.T) {
			arms, err := ParseTrial(tt.trial)
			if err != nil {
				t.Fatal(err)
			}
			assigned := map[string]int{}
			var got strings.Builder
			for range tt.n {
				a := arms[pickArm(arms, assigned)].Name()
				assigned[a]++
				got.WriteString(a)
			}
			if got.String() != tt.want {
				t.Errorf("%s, want %s", got.String(), tt.want)
			}
		})
	}
}

// TestTrialSplitsIssues: on a 1:1 trial of fake and fake-b, four issues
// assigned at once get two arms each, recorded in their mailboxes, and
// every run of an issue, analysis and development, uses its arm's adapter,
// even after AGENT_ADAPTER changed between the two (no handoff: the arm
// did not change).
func TestTrialSplitsIssues(t *testing.T) {
	t.Parallel()
	fb, err := fake.New(fake.Options{ResumableSessions: true, Reply: analysisReply})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, func(s *setup) {
		s.adapters["fake-b"] = renamed{&scripted{Adapter: fb}, "fake-b"}
		s.settings = append(s.settings, projectSetting("AGENT_TRIAL", "fake:1,fake-b:1"))
	})
	iids := []int64{11, 12, 13, 14}
	for _, iid := range iids {
		h.openIssue(iid, fmt.Sprintf("Add greeting %d", iid), "type::task")
	}
	for _, iid := range iids {
		h.send(forges.Event{Type: forges.EventIssueAssigned, Actor: "alice", Assignee: "alfred", Target: h.issueTarget(iid), Labels: []string{"type::task"}})
	}
	for _, iid := range iids {
		h.waitStatus(iid, lifecycle.StatusWaitingValidation)
	}
	// The project's adapter changes: the issues keep their arms.
	h.setSetting(projectSetting("AGENT_ADAPTER", "fake-b"))
	for _, iid := range iids {
		h.forge.AddLabels(context.Background(), h.issueTarget(iid), "ai::validate_plan")
		h.send(forges.Event{Type: forges.EventIssueLabeled, Actor: "alice", Target: h.issueTarget(iid), Labels: h.forge.labels(iid)})
	}
	perArm := map[string]int{}
	for _, iid := range iids {
		mb := h.waitStatus(iid, lifecycle.StatusInCI)
		tr := mb.Trial
		if tr == nil || tr.Setting != "fake:1,fake-b:1" || tr.Arm != tr.Adapter || tr.Model != "" {
			t.Fatalf("issue %d: trial %+v", iid, tr)
		}
		perArm[tr.Arm]++
		checkTrialRuns(t, h, mb)
	}
	if perArm["fake"] != 2 || perArm["fake-b"] != 2 {
		t.Errorf("arms %v, want two issues each", perArm)
	}
	if got := len(h.adapter.Requests()) + len(fb.Requests()); got != 8 {
		t.Errorf("%d requests to the adapters, want 8 (two runs of four issues)", got)
	}
}

// checkTrialRuns checks that every run of mb, and its session, used its
// trial arm's adapter, and that no session started fresh for a change of
// adapter.
func checkTrialRuns(t *testing.T, h *harness, mb state.Mailbox) {
	t.Helper()
	runs := mustRuns(t, h.store, mb.ID)
	if len(runs) != 2 {
		t.Fatalf("issue %d: %d runs, want 2", mb.IID, len(runs))
	}
	for _, r := range runs {
		if r.AdapterID != mb.Trial.Adapter {
			t.Errorf("issue %d: %s run with %s, its arm is %s", mb.IID, r.Phase, r.AdapterID, mb.Trial.Adapter)
		}
	}
	for _, ls := range h.sessions(t, mb) {
		if ls.AdapterID != mb.Trial.Adapter || ls.ResumeFallback != nil && *ls.ResumeFallback == "adapter_changed" {
			t.Errorf("issue %d: session %+v with arm %s", mb.IID, ls, mb.Trial.Adapter)
		}
	}
}

// The round-robin counts the records: an engine that starts anew goes on
// from the project's issues assigned under the same value of the setting,
// not those of another value or another project.
func TestTrialCountsFromTheRecords(t *testing.T) {
	t.Parallel()
	fb, err := fake.New(fake.Options{ResumableSessions: true, Reply: analysisReply})
	if err != nil {
		t.Fatal(err)
	}
	const trial = "fake:1,fake-b:1"
	h := newHarness(t, func(s *setup) {
		s.adapters["fake-b"] = renamed{&scripted{Adapter: fb}, "fake-b"}
		s.settings = append(s.settings, projectSetting("AGENT_TRIAL", trial))
	})
	seeded := func(project string, iid int64, arm, setting string) state.Mailbox {
		return state.Mailbox{Forge: "forgejo", Owner: "alice", Project: project, Kind: state.KindIssue, IID: iid, Status: "done",
			Trial: &state.Trial{Arm: arm, Adapter: arm, Setting: setting}}
	}
	err = h.store.Update(context.Background(), func(tx *state.Tx) error {
		for _, mb := range []state.Mailbox{
			seeded("demo", 1, "fake", trial),
			seeded("demo", 2, "fake-b", "fake:2,fake-b:1"), seeded("demo", 3, "fake-b", "fake:2,fake-b:1"),
			seeded("other", 1, "fake-b", trial), seeded("other", 2, "fake-b", trial), seeded("other", 3, "fake-b", trial),
		} {
			mb.ID = mb.Key().ID()
			if err := tx.PutMailbox(mb); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	h.openIssue(21, "Add a greeting", "type::task")
	h.send(forges.Event{Type: forges.EventIssueAssigned, Actor: "alice", Assignee: "alfred", Target: h.issueTarget(21), Labels: []string{"type::task"}})
	mb := h.waitStatus(21, lifecycle.StatusWaitingValidation)
	if mb.Trial == nil || mb.Trial.Arm != "fake-b" {
		t.Fatalf("trial %+v, want fake-b (fake has the project's one issue of this trial)", mb.Trial)
	}
	if runs := mustRuns(t, h.store, mb.ID); len(runs) != 1 || runs[0].AdapterID != "fake-b" {
		t.Errorf("runs %+v, want one of fake-b", runs)
	}
}

// BenchmarkTrialCounts is the count an assignment makes on a project of
// 5,000 issues, half of them in the trial.
func BenchmarkTrialCounts(b *testing.B) {
	st := openStore(b)
	const trial = "fake:1,fake-b:1"
	err := st.Update(context.Background(), func(tx *state.Tx) error {
		for i := range 5000 {
			mb := state.Mailbox{Forge: "forgejo", Owner: "alice", Project: "demo", Kind: state.KindIssue, IID: int64(i + 1), Status: "done"}
			if i%2 == 0 {
				mb.Trial = &state.Trial{Arm: []string{"fake", "fake-b"}[i/2%2], Setting: trial}
			}
			mb.ID = mb.Key().ID()
			if err := tx.PutMailbox(mb); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	e := &Engine{store: st}
	mb := &state.Mailbox{Forge: "forgejo", Owner: "alice", Project: "demo"}
	b.ResetTimer()
	for b.Loop() {
		if n, err := e.trialCounts(mb, trial); err != nil || n["fake"] != 1250 {
			b.Fatal(n, err)
		}
	}
}
