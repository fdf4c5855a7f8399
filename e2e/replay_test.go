package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/agents/mockllm"
	"github.com/alchemic-studio/alfred/forges/forgejo/giteatest"
	"github.com/alchemic-studio/alfred/outcomes"
	"github.com/alchemic-studio/alfred/replay"
)

// The replay corpus's issues, as the mock model knows them: the key of
// each is the title, the command what the agent runs in
// development. The first two solve their issue; the third leaves a note
// where a Rust port was asked, which its check refuses.
var replayModel = map[string]string{
	"Add a Double function": `printf '\nfunc Double(n int) int {\n\treturn n * 2\n}\n' >> /workspace/calc.go && echo added Double`,
	"Fix Add, it subtracts": `sed -i 's/return a - b/return a + b/' /workspace/calc.go && echo fixed Add`,
	"Port calc to Rust":     `echo 'A port to Rust needs a person to choose the crate layout.' > /workspace/NOTES.md && echo wrote NOTES.md`,
}

// TestE2EReplay (issue 33, item 5): the built binary's `alfred replay` runs
// the suite's corpus (replay/testdata/corpus: three issues over a tiny Go
// module) through its engine on the real Gitea, with the real Claude Code
// and the real Codex of the shipped agent image, sealed behind the
// engine's gateway, and the mock model (Anthropic and OpenAI) scripted to
// solve two. Each case gets a fresh repository per adapter, its issue goes
// from the assignment to a pull request with no person, the check runs on
// a clone of the pull request's branch in a container, and the report says
// for each adapter 3 cases, 2 solved, with the outcome figures and no NaN.
func TestE2EReplay(t *testing.T) {
	in := giteatest.FromEnv(t, giteatest.Gitea)
	dockerHost, image, instance := shippedImage(t)
	b := newBot(t, []string{"ALFRED_FORGE=forgejo", "ALFRED_FORGE_URL=" + in.URL, "ALFRED_FORGE_TOKEN=" + in.Bot.Token}, dockerHost, image, instance)
	b.model.Close()
	b.model = mockllm.Start(mockllm.Options{Reply: agentReply, ReadOnlyPhrase: "Do not change any file", ShellFor: replayModel})
	t.Cleanup(b.model.Close)
	out := filepath.Join(t.TempDir(), "report.json")
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	// gpt-5 for both: Codex's default model calls its tools through
	// JavaScript (code mode), which the mock does not play; Claude Code
	// takes any name of the mock's.
	cmd := exec.CommandContext(ctx, b.bin, "replay", "-corpus", "../replay/testdata/corpus", "-adapter", "claude-code,codex", "-model", "gpt-5",
		"-person", in.User.Login, "-work", t.TempDir(), "-parallel", "3", "-o", out)
	cmd.Env = append(b.env, "ANTHROPIC_BASE_URL="+b.model.URL, "ALFRED_REPLAY_ADMIN_TOKEN="+in.Admin.Token, "ALFRED_LOG_FORMAT=text",
		"ALFRED_AGENT_ENV=ANTHROPIC_BASE_URL,ANTHROPIC_API_KEY,OPENAI_BASE_URL,OPENAI_API_KEY",
		"OPENAI_BASE_URL="+b.model.URL+"/v1", "OPENAI_API_KEY="+apiKey)
	started := time.Now()
	text, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("alfred replay: %v\n%s", err, text)
	}
	noContainerLeft(t, dockerHost, instance)
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("the report: %v\n%s", err, text)
	}
	var rep replay.Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	defer deleteReplayed(t, in, rep) // before t.Context ends
	if strings.Contains(string(raw), "NaN") || strings.Contains(string(raw), "Inf") {
		t.Errorf("the report has a NaN: %s", raw)
	}
	checkReplayReport(t, rep)
	if strings.Count(string(text), "67% (2 of 3, few)") != 2 {
		t.Errorf("the table lacks the merge rate:\n%s", text)
	}
	if t.Failed() || testing.Verbose() {
		t.Logf("alfred replay's output:\n%s", text)
	}
	t.Logf("replay of 3 cases with 2 adapters: %s wall; Claude Code %d tokens, %s to the pull request (median); Codex %d tokens, %s",
		time.Since(started).Round(time.Second), rep.Adapters[0].Tokens, rep.Adapters[0].Summary.ToPullRequest.Median.Round(time.Second),
		rep.Adapters[1].Tokens, rep.Adapters[1].Summary.ToPullRequest.Median.Round(time.Second))
}

// checkReplayReport checks the figures of the corpus's replay, for each
// adapter in turn.
func checkReplayReport(t *testing.T, rep replay.Report) {
	t.Helper()
	if len(rep.Adapters) != 2 || len(rep.Results) != 6 {
		t.Fatalf("report: %d adapters, %d results: %+v", len(rep.Adapters), len(rep.Results), rep)
	}
	for i, name := range []string{"claude-code", "codex"} {
		checkAdapter(t, rep.Adapters[i], name)
	}
	want := map[string]bool{"add-double": true, "fix-add": true, "port-to-rust": false}
	for _, r := range rep.Results {
		if r.Error != "" || r.PullRequest == 0 || r.Check == nil || r.Solved != want[r.Case] || r.Check.Passed() != want[r.Case] {
			t.Errorf("case %s with %s: solved %v (want %v), error %q, pull request %d, check %+v", r.Case, r.Adapter, r.Solved, want[r.Case], r.Error, r.PullRequest, r.Check)
		}
		if r.Outcome.PullRequest.After == nil || r.Outcome.Plan.After == nil || len(r.Outcome.Phases) < 2 || outcomes.AgentOf(r.Outcome).Adapter != r.Adapter {
			t.Errorf("case %s with %s: outcome %+v", r.Case, r.Adapter, r.Outcome)
		}
	}
}

// checkAdapter checks one adapter's figures: 3 cases, 2 solved.
func checkAdapter(t *testing.T, a replay.Adapter, name string) {
	t.Helper()
	s := a.Summary
	if a.Adapter != name || a.Model != "gpt-5" || a.Cases != 3 || a.Solved != 2 || s.MergeRate == nil || s.MergeRate.Count != 2 || s.MergeRate.Of != 3 {
		t.Errorf("%s's figures: %+v", name, a)
	}
	if s.ToPullRequest == nil || s.ToPullRequest.N != 3 || s.ToMerge == nil || s.ToMerge.N != 2 || s.PerMerged == nil || s.Runs < 6 {
		t.Errorf("%s's outcome figures: %+v", name, s)
	}
	if a.Tokens == 0 || s.Spend.Source() != outcomes.SourceGateway || a.Wall <= 0 {
		t.Errorf("%s's spend: %d tokens, %+v, wall %s", name, a.Tokens, s.Spend, a.Wall)
	}
}

// deleteReplayed deletes the repositories the replay made, unless the test
// failed: they are then kept for a look.
func deleteReplayed(t *testing.T, in *giteatest.Instance, rep replay.Report) {
	for _, r := range rep.Results {
		owner, name, ok := strings.Cut(r.Repository, "/")
		if !ok {
			continue
		}
		if t.Failed() {
			t.Logf("kept %s/%s for a look", in.URL, r.Repository)
			continue
		}
		if _, err := in.Client(t, "").DeleteRepo(owner, name); err != nil {
			t.Errorf("delete %s: %v", r.Repository, err)
		}
	}
}

// noContainerLeft checks that no container of a replay's instance (the
// test's, with a suffix of the replay's own) is left on the daemon: not a
// run's, a check's or a detection's.
func noContainerLeft(t *testing.T, dockerHost, instance string) {
	t.Helper()
	out, err := exec.Command("docker", "-H", dockerHost, "ps", "-a", "--format", `{{.ID}} {{.Label "alfred.instance"}} {{.Command}}`).Output()
	if err != nil {
		t.Fatalf("docker ps: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f := strings.Fields(line); len(f) > 1 && strings.HasPrefix(f[1], instance+"-replay-") {
			t.Errorf("a container of the replay left: %s", line)
		}
	}
}

// TestE2EReplayStopsClean: a replay that stops at once (its person cannot
// be made on the forge), while its engine's first detection of the agent
// CLIs runs in a container, says why and leaves no container behind.
func TestE2EReplayStopsClean(t *testing.T) {
	in := giteatest.FromEnv(t, giteatest.Gitea)
	dockerHost, image, instance := shippedImage(t)
	b := newBot(t, []string{"ALFRED_FORGE=forgejo", "ALFRED_FORGE_URL=" + in.URL, "ALFRED_FORGE_TOKEN=" + in.Bot.Token}, dockerHost, image, instance)
	cmd := exec.Command(b.bin, "replay", "-corpus", "../replay/testdata/corpus", "-person", "no such login!", "-work", t.TempDir())
	cmd.Env = append(b.env, "ALFRED_REPLAY_ADMIN_TOKEN="+in.Admin.Token)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "no such login!") {
		t.Fatalf("alfred replay: %v\n%s", err, out)
	}
	noContainerLeft(t, dockerHost, instance)
}
