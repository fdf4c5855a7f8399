package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/state"
)

// seedOutcomeRecords writes to the state store at dir, on forge gitea:
// alice/demo, issue 1 merged 2h after its assignment (its pull request at
// 1h; claude-code, opus: $1, 1000 tokens) and issue 2 closed unmerged
// (codex); bob/secret, issue 1 merged at $99.
func seedOutcomeRecords(t *testing.T, dir string) {
	t.Helper()
	ctx := context.Background()
	st, err := state.Open(ctx, dir, state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now().Add(-48 * time.Hour).Truncate(time.Second)
	issue := func(owner, project string, iid int64, how string) state.Mailbox {
		return state.Mailbox{Forge: "gitea", Owner: owner, Project: project, Kind: state.KindIssue, IID: iid, Status: "done", CreatedAt: t0,
			MergeRequestAt: t0.Add(time.Hour), End: &state.MailboxEnd{How: how, At: t0.Add(2 * time.Hour)}}
	}
	seeds := []struct {
		mb             state.Mailbox
		adapter, model string
		usd            float64
	}{
		{issue("alice", "demo", 1, state.EndMerged), "claude-code", "opus", 1},
		{issue("alice", "demo", 2, state.EndClosed), "codex", "", 0.5},
		{issue("bob", "secret", 1, state.EndMerged), "claude-code", "opus", 99},
	}
	err = st.Update(ctx, func(tx *state.Tx) error {
		for i, s := range seeds {
			if err := tx.PutMailbox(s.mb); err != nil {
				return err
			}
			id, runID := s.mb.Key().ID(), "run-"+string(rune('a'+i))
			r := state.Run{ID: runID, MailboxID: id, Phase: "development", AdapterID: s.adapter, Model: s.model, Runner: "image",
				Status: state.RunSucceeded, Pushed: true, CreatedAt: t0, StartedAt: t0, FinishedAt: t0.Add(time.Minute)}
			if err := tx.PutRun(r); err != nil {
				return err
			}
			if err := tx.PutLLMSession(state.LLMSession{ID: "s-" + runID, RunID: runID, MailboxID: id, AdapterID: s.adapter, Model: s.model,
				InputTokens: int64(s.usd * 1000), CostUSD: s.usd, CreatedAt: t0}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestServeOutcomeGauges: alfred serve over a seeded state store exports
// the outcome gauges with the seeded figures; the public project under its
// name, the other one pooled under project "" and never named.
func TestServeOutcomeGauges(t *testing.T) {
	bin := buildBinary(t)
	addr := freePort(t)
	dir := t.TempDir()
	seedOutcomeRecords(t, filepath.Join(dir, "state.git"))
	cmd := exec.Command(bin, "serve")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "ALFRED_STATE_DIR=" + filepath.Join(dir, "state.git"),
		"ALFRED_LISTEN=" + addr, "ALFRED_LOG_FORMAT=json", "ALFRED_PUBLIC_PROJECTS=alice/demo"}
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	out := watch(stderr)
	out.waitFor(t, `"msg":"serving"`, 20*time.Second)

	code, body := getWithToken(t, addr, "/metrics", "")
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	const demo = `forge="gitea",model="*",project="alice/demo"`
	for _, want := range []string{
		`alfred_outcomes_issues{adapter="*",` + demo + `} 2`,
		`alfred_outcomes_merge_rate{adapter="*",` + demo + `} 0.5`,
		`alfred_outcomes_merge_rate{adapter="codex",` + demo + `} 0`,
		`alfred_outcomes_finished_issues{adapter="*",end="closed_unmerged",` + demo + `} 1`,
		`alfred_outcomes_time_to_pull_request_seconds{adapter="*",` + demo + `,quantile="0.5"} 3600`,
		`alfred_outcomes_time_to_merge_seconds{adapter="claude-code",forge="gitea",model="opus",project="alice/demo",quantile="0.9"} 7200`,
		`alfred_outcomes_cost_per_merged_usd{adapter="claude-code",` + demo + `} 1`,
		`alfred_outcomes_tokens_per_merged{adapter="claude-code",` + demo + `} 1000`,
		`alfred_outcomes_issues{adapter="*",forge="gitea",model="*",project=""} 1`,
		`alfred_outcomes_cost_per_merged_usd{adapter="*",forge="gitea",model="*",project=""} 99`,
	} {
		if !strings.Contains(body, "\n"+want+"\n") { // the whole line: its value exactly
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if !strings.Contains(body, "\nalfred_outcomes_compute_seconds ") {
		t.Error("/metrics lacks alfred_outcomes_compute_seconds")
	}
	for _, never := range []string{"bob", "secret"} {
		for _, line := range strings.Split(body, "\n") {
			if strings.HasPrefix(line, "alfred_outcomes_") && strings.Contains(line, never) {
				t.Errorf("a gauge names the private project: %s", line)
			}
		}
	}
	if strings.Contains(body, "alfred_outcomes_time_to_merge_seconds{adapter=\"codex\"") {
		t.Error("a time to merge for codex, which merged nothing")
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	out.waitFor(t, `"msg":"stopped"`, 20*time.Second)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
}
