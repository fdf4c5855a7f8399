package e2e

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"html"
	"io"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/agents/mockllm"
	"github.com/alchemic-studio/alfred/forges/forgejo/giteatest"
	"github.com/alchemic-studio/alfred/internal/live"
	"github.com/alchemic-studio/alfred/state"
)

var updateMatrix = flag.Bool("update-matrix", false, "write the real-CLI matrix the suite saw into the README")

// matrixCLI is one CLI of the matrix and the settings its project gets: the
// provider and model a sealed run of it names (none: the CLI's own), what
// else is offered, and whether it resumes a session.
type matrixCLI struct {
	id, provider, model string
	resumes             bool
}

// matrixCLIs are the six CLIs of the shipped agent image.
var matrixCLIs = []matrixCLI{
	{id: "claude-code", resumes: true},
	{id: "codex", model: "gpt-5", resumes: true}, // its default model's tools are JavaScript (code mode), which the mock does not play
	{id: "opencode", provider: "openai", model: "gpt-5", resumes: true},
	{id: "copilot", provider: "openai", model: "gpt-5", resumes: true},
	{id: "gemini", provider: "gemini", model: "gemini-2.5-flash", resumes: true},
	{id: "grok", provider: "xai", model: "grok-code-fast-1"},
}

// matrixRow is what the suite saw of one CLI: the stable cells go into the
// README's table, the figures into the test's log.
type matrixRow struct {
	cli                          string
	analysis, plan, development  bool
	pullRequest, pageFields      bool
	session                      string // "resumed", or what the run page says instead
	gatewayTokens, cliTokens     bool
	liveLines                    int64
	gatewayIn, gatewayOut, cliIn int64
}

// TestE2ECLIMatrix (issue 30, item 6): each of the six CLIs of the shipped
// agent image, sealed behind the bot's gateway (the mock model as every
// provider), works an issue of a project of its own through the built bot
// on the real Gitea: assignment, analysis, the plan, validation,
// development resuming the analysis' session (Grok has none: fresh every
// run, and the run page says so), the pull request; the gateway and the
// CLI count tokens (where the CLI reports them), the live output of the
// development run is seen while it goes, and the run page shows the run's
// fields. The README's table is what this test saw (-update-matrix writes
// it; without the flag a difference fails).
func TestE2ECLIMatrix(t *testing.T) {
	in := giteatest.FromEnv(t, giteatest.Gitea)
	worlds := make([]*giteaWorld, len(matrixCLIs))
	shell := map[string]string{}
	for i, c := range matrixCLIs {
		worlds[i] = newGiteaWorld(t, in)
		shell[matrixTitle(c)] = "echo 'made by " + c.id + "' > /workspace/" + strings.ToUpper(c.id) + ".md && echo wrote it"
	}
	dockerHost, image, instance := shippedImage(t)
	// Each answer of the model takes a second, so that a run lasts long
	// enough for its live output to be followed while it goes (a mock
	// answering at once ends Claude Code's run in under one).
	opts := []startOption{withModel(mockllm.Options{Reply: agentReply, ReadOnlyPhrase: "Do not change any file", ShellFor: shell, Delay: time.Second}),
		withEveryProvider()}
	for i, c := range matrixCLIs {
		opts = append(opts, withProject(worlds[i], c))
	}
	s := startOn(t, worlds[0], dockerHost, image, instance, opts...)
	for _, w := range worlds[1:] { // the first is start's
		s.b.run("labels", "sync", "-project", w.project())
		w.hook("http://"+s.b.addr+"/webhooks/forgejo", "s3cret")
	}
	for _, c := range matrixCLIs {
		s.waitDetected(c.id, image, c.resumes)
	}
	rows := make([]matrixRow, len(matrixCLIs))
	t.Run("lanes", func(t *testing.T) {
		for i, c := range matrixCLIs {
			t.Run(c.id, func(t *testing.T) {
				t.Parallel()
				lane := *s
				lane.t, lane.w, lane.runs, lane.sessions = t, worlds[i], nil, nil
				lane.owner, lane.name = worlds[i].repo.Owner, worlds[i].repo.Name
				rows[i] = lane.matrixLane(c)
			})
		}
	})
	checkMatrixTable(t, rows)
}

// matrixTitle is the title of c's issue: the model has c's CLI write a
// file of its own for it.
func matrixTitle(c matrixCLI) string { return "Greet the users with " + c.id }

// withEveryProvider offers the mock model as each provider the CLIs call,
// with the same key: the gateway serves them all.
func withEveryProvider() startOption {
	return func(_ testing.TB, b *bot, _, _ string) []string {
		return []string{
			"ALFRED_AGENT_ENV=ANTHROPIC_BASE_URL,ANTHROPIC_API_KEY,OPENAI_BASE_URL,OPENAI_API_KEY,GOOGLE_GEMINI_BASE_URL,GEMINI_API_KEY,GROK_BASE_URL,GROK_API_KEY,OPENCODE_DISABLE_MODELS_FETCH",
			"OPENAI_BASE_URL=" + b.model.URL + "/v1", "OPENAI_API_KEY=" + apiKey,
			"GOOGLE_GEMINI_BASE_URL=" + b.model.URL, "GEMINI_API_KEY=" + apiKey,
			"GROK_BASE_URL=" + b.model.URL + "/v1", "GROK_API_KEY=" + apiKey,
			"OPENCODE_DISABLE_MODELS_FETCH=1",
		}
	}
}

// withProject gives w's project c's settings.
func withProject(w *giteaWorld, c matrixCLI) startOption {
	return func(t testing.TB, b *bot, _, _ string) []string {
		set := map[string]string{"AGENT_ADAPTER": c.id, "AGENT_PROVIDER": c.provider, "AGENT_MODEL": c.model}
		for _, k := range []string{"AGENT_ADAPTER", "AGENT_PROVIDER", "AGENT_MODEL"} {
			if set[k] != "" {
				withSetting(w, k, set[k])(t, b, "", "")
			}
		}
		return nil
	}
}

// matrixLane works c's issue to its pull request and says what it saw.
func (s *scenario) matrixLane(c matrixCLI) matrixRow {
	t := s.t
	row := matrixRow{cli: c.id}
	s.redTeamIssue(matrixTitle(c), "The demo should greet its users.")
	an := s.lastRun()
	row.analysis = an.Phase == "analysis" && an.AdapterID == c.id && an.Status == state.RunSucceeded
	row.plan = strings.Contains(s.planComment(), "1. Add a greeting.") // the plan of agentReply
	var live atomic.Int64
	done := s.followNextRun(&live)
	s.w.label(s.n, []string{"ai::validate_plan"}, nil)
	s.waitStatus("in_ci")
	<-done
	dev, ls := s.lastRun(), s.lastSession()
	row.development = dev.Phase == "development" && dev.AdapterID == c.id && dev.Status == state.RunSucceeded && dev.Pushed
	row.pullRequest = s.mb.MergeRequestIID > 0
	switch {
	case ls.Resumed:
		row.session = "resumed"
	case dev.NoSession != "":
		row.session = "fresh every run"
	default:
		row.session = "fresh: " + ls.Start()
	}
	if g := dev.Gateway; g != nil {
		row.gatewayIn, row.gatewayOut = g.InputTokens, g.OutputTokens
	}
	row.gatewayTokens = row.gatewayIn > 0 && row.gatewayOut > 0
	row.cliIn = ls.InputTokens
	row.cliTokens = ls.InputTokens > 0
	row.liveLines = live.Load()
	row.pageFields = s.runPageShows(dev, ls)
	t.Logf("%s: %+v (analysis %s, development %s: %s)", c.id, row, an.ID, dev.ID, dev.Outcome)
	if !row.analysis || !row.development || !row.pullRequest {
		t.Errorf("%s did not work the issue: analysis %+v\ndevelopment %+v", c.id, an, dev)
	}
	if c.resumes != (row.session == "resumed") {
		t.Errorf("%s: the development run's session %q (no session: %q)", c.id, row.session, dev.NoSession)
	}
	return row
}

// planComment is the body of the issue's plan comment.
func (s *scenario) planComment() string {
	_, _, comments := s.w.issue(s.n)
	for _, c := range comments {
		if strings.Contains(c.Body, "kind=plan") {
			return c.Body
		}
	}
	return ""
}

// followNextRun follows the live output of the issue's next run while it
// goes, counting the lines it sends into n; done closes when that run's
// stream ended (or after five minutes).
func (s *scenario) followNextRun(n *atomic.Int64) (done <-chan struct{}) {
	ch := make(chan struct{})
	before := len(s.runs)
	go func() {
		defer close(ch)
		deadline := time.Now().Add(5 * time.Minute)
		for time.Now().Before(deadline) {
			var active string
			s.b.look(func(st *state.Store) {
				if m, err := st.Mailbox(s.key); err == nil {
					if runs, _ := st.Runs(m.ID); len(runs) > before {
						active = m.ActiveRunID
					}
				}
			})
			// A run recorded before its agent is launched answers 204 (not
			// followed yet), as the page's first request may: ask again.
			if active != "" && countLive(s.b.addr, active, n) {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	return ch
}

// countLive reads run's live stream to its end, counting the agent's steps
// it carries (a line of text or of the standard error is no step: a CLI
// whose stream is not decoded shows none). It tells whether there was a
// stream to read: false when the run is not followed yet (204).
func countLive(addr, run string, n *atomic.Int64) bool {
	client := http.Client{Timeout: 5 * time.Minute} // a stream that never ends fails the wait, not the test binary
	resp, err := client.Get("http://" + addr + "/runs/" + run + "/live")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNoContent {
		return false
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: end"):
			return true
		case strings.HasPrefix(line, "data: "):
			var l live.Line
			if json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &l) == nil && l.Step() {
				n.Add(1)
			}
		}
	}
	return true
}

// runPageShows tells whether the run page shows the run's fields: its
// phase, its adapter, how its session started, and the gateway's count.
func (s *scenario) runPageShows(r state.Run, ls state.LLMSession) bool {
	resp, err := http.Get("http://" + s.b.addr + "/runs/" + r.ID)
	if err != nil {
		s.t.Errorf("run page: %v", err)
		return false
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	page := string(b)
	want := []string{r.Phase, r.AdapterID, ls.Start()}
	if r.NoSession != "" { // why it has none, as the run page says it
		want[2] = html.EscapeString(r.NoSession)
	}
	if r.Gateway != nil {
		want = append(want, fmt.Sprint(r.Gateway.Requests))
	}
	ok := !strings.Contains(page, apiKey)
	for _, w := range want {
		if !strings.Contains(page, w) {
			s.t.Errorf("the run page of %s lacks %q", r.ID, w)
			ok = false
		}
	}
	return ok
}

// The README's table of the matrix sits between these lines.
const (
	matrixBegin = "<!-- cli-matrix: written by TestE2ECLIMatrix -update-matrix; do not edit -->"
	matrixEnd   = "<!-- cli-matrix end -->"
)

// matrixTable is the README's table of rows.
func matrixTable(rows []matrixRow) string {
	yes := func(b bool) string {
		if b {
			return "yes"
		}
		return "**no**"
	}
	var b strings.Builder
	b.WriteString("| CLI | analysis | plan | development | pull request | session of the 2nd run | tokens (gateway) | tokens (CLI) | live output | run page |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.cli, yes(r.analysis), yes(r.plan), yes(r.development),
			yes(r.pullRequest), r.session, yes(r.gatewayTokens), map[bool]string{true: "yes", false: "none reported"}[r.cliTokens],
			yes(r.liveLines > 0), yes(r.pageFields))
	}
	return b.String()
}

// checkMatrixTable compares the README's table with what the suite saw,
// or writes it there with -update-matrix.
func checkMatrixTable(t *testing.T, rows []matrixRow) {
	t.Helper()
	const readme = "../README.md"
	raw, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	before, rest, ok1 := strings.Cut(string(raw), matrixBegin+"\n")
	had, after, ok2 := strings.Cut(rest, matrixEnd)
	if !ok1 || !ok2 {
		t.Fatalf("the README has no matrix section (%q ... %q)", matrixBegin, matrixEnd)
	}
	got := matrixTable(rows)
	t.Logf("the real-CLI matrix:\n%s", got)
	if *updateMatrix {
		if err := os.WriteFile(readme, []byte(before+matrixBegin+"\n"+got+matrixEnd+after), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if had != got {
		t.Errorf("the README's matrix is not what the suite saw (go test ./e2e -run TestE2ECLIMatrix -update-matrix):\nREADME:\n%s\nseen:\n%s", had, got)
	}
}
