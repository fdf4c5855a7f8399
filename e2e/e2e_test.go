// Package e2e drives the built alfred binary from webhook to merge request,
// with the real Docker daemon make test starts and the real Claude Code in
// the agent container, talking to a mock model server inside that container.
// The same scenario runs on two forges: the Forgejo fake that speaks the
// Forgejo 7 API over HTTP and sends signed webhooks (TestE2E), and the real
// Gitea and Forgejo started by scripts/gitea.sh and scripts/forgejo.sh
// (TestE2ERealForges), where what only a real forge shows is tried too.
package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/forges"
	"github.com/alchemic-studio/alfred/state"
)

// TestE2E plays the scenario on the Forgejo fake and ends it by closing the
// issue.
func TestE2E(t *testing.T) {
	started := time.Now()
	s := start(t, newFakeWorld(t))
	s.play()
	s.sealed()
	s.w.close(s.n)
	s.waitStatus("done")
	s.stateGone()
	s.metricsAfterRestart()
	t.Logf("e2e wall time %s; webhook to the agent being started %s", time.Since(started).Round(time.Millisecond), s.webhookToAgent.Round(time.Millisecond))
}

// scenario is one issue worked from assignment to review by the built bot.
type scenario struct {
	t        testing.TB
	w        world
	b        *bot
	docker   string
	instance string
	owner    string
	name     string
	n        int64 // the issue
	key      state.MailboxKey

	mb             state.Mailbox
	runs           []state.Run
	sessions       []state.LLMSession
	native         string // the agent's session id
	webhookToAgent time.Duration
	// beforeDevelopment, when set, runs between the analysis and the
	// development of toPullRequest (the two-node test moves the runs there).
	beforeDevelopment func()
}

// startOption changes how the bot runs (where its agents run, what its
// model is): it gets the bot before it starts, the agent image and the
// instance, and returns settings that replace the bot's.
type startOption func(t testing.TB, b *bot, image, instance string) []string

// start builds the agent image and the bot, syncs the labels, starts the bot
// with its webhook set on the forge, and waits for Claude Code's detection.
func start(t testing.TB, w world, opts ...startOption) *scenario {
	t.Helper()
	dockerHost, image, instance := agentImage(t)
	return startOn(t, w, dockerHost, image, instance, opts...)
}

// startOn is start with the agents in image (of dockerHost) under instance.
func startOn(t testing.TB, w world, dockerHost, image, instance string, opts ...startOption) *scenario {
	t.Helper()
	b := newBot(t, w.forgeEnv(), dockerHost, image, instance)
	for _, o := range opts {
		b.env = append(b.env, o(t, b, image, instance)...) // the last value of a variable wins
	}
	owner, name, _ := strings.Cut(w.project(), "/")
	s := &scenario{t: t, w: w, b: b, docker: dockerHost, instance: instance, owner: owner, name: name}
	if out := b.run("labels", "sync", "-project", w.project()); !strings.Contains(out, "19 labels created") {
		t.Fatalf("labels sync: %s", out)
	}
	b.serve()
	w.hook("http://"+b.addr+"/webhooks/forgejo", "s3cret")
	// Detection runs claude --version in the image at start.
	waitFor(t, time.Minute, "claude-code detected as resumable", func() (ok bool) {
		b.look(func(st *state.Store) {
			all, _ := st.Installations()
			for _, in := range all {
				ok = ok || in.AdapterID == "claude-code" && in.Image == image && in.ResumableSessions
			}
		})
		return ok
	})
	return s
}

// waitStatus waits until the mailbox has status and no run in progress, and
// reads it with its runs and sessions.
func (s *scenario) waitStatus(status string) {
	s.t.Helper()
	defer s.sayRunsIfFailed()
	waitFor(s.t, 3*time.Minute, "status "+status, func() (ok bool) {
		s.b.look(func(st *state.Store) {
			m, err := st.Mailbox(s.key)
			if err != nil || m.Status != status || m.ActiveRunID != "" {
				return
			}
			s.mb, s.runs, s.sessions = m, nil, nil
			s.runs, _ = st.Runs(m.ID)
			for _, r := range s.runs {
				_, ls, _ := st.RunWithSessions(r.ID)
				s.sessions = append(s.sessions, ls...)
			}
			ok = true
		})
		return ok
	})
}

// sayRunsIfFailed logs the mailbox and its runs when the test failed (a
// wait timed out): where the work stopped, and why.
func (s *scenario) sayRunsIfFailed() {
	if !s.t.Failed() {
		return
	}
	s.b.look(func(st *state.Store) {
		m, err := st.Mailbox(s.key)
		if err != nil {
			s.t.Logf("mailbox %v: %v", s.key, err)
			return
		}
		s.t.Logf("mailbox %s: %s, active run %q", m.ID, m.Status, m.ActiveRunID)
		runs, _ := st.Runs(m.ID)
		for _, r := range runs {
			s.t.Logf("run %s: %s by %s, %s: %s\n%s", r.ID, r.Phase, r.AdapterID, r.Status, r.Outcome, clip(r.Log, 3000))
		}
	})
	for _, r := range s.b.model.Requests() {
		s.t.Logf("model request %s %s: %d user texts, tools %v, tool output %q, last %q", r.API, r.Path, len(r.UserTexts), r.Tools,
			clip(r.ToolOutput, 200), clip(r.LastUserText, 200))
	}
}

// clip is s cut to n bytes.
func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func (s *scenario) lastSession() state.LLMSession { return s.sessions[len(s.sessions)-1] }

func (s *scenario) lastRun() state.Run { return s.runs[len(s.runs)-1] }

// phaseRuns counts the runs of phase.
func (s *scenario) phaseRuns(phase string) int {
	n := 0
	for _, r := range s.runs {
		if r.Phase == phase {
			n++
		}
	}
	return n
}

// stateDir is the agent's session state folder of the issue.
func (s *scenario) stateDir() string {
	return filepath.Join(s.b.data, ".agent-sessions", "forgejo", fmt.Sprintf("%s-%s-issue-%d", s.owner, s.name, s.n), "claude-code")
}

// stateGone checks that the session state of the issue was removed.
func (s *scenario) stateGone() {
	s.t.Helper()
	if _, err := os.Stat(filepath.Dir(s.stateDir())); !os.IsNotExist(err) {
		s.t.Errorf("session state still there: %v", err)
	}
}

// kinds counts the bot's managed comments on the issue by kind.
func (s *scenario) kinds() map[string]int {
	_, _, comments := s.w.issue(s.n)
	out := map[string]int{}
	for _, c := range comments {
		if _, k, ok := forges.ParseMarker(c.Body); ok {
			out[k]++
		}
	}
	return out
}

// play works the issue from assignment to review: analysis and plan,
// validation, development and pull request, a red CI fixed, green, the pages,
// a lost session state, and a bot killed in the middle of a run.
func (s *scenario) play() {
	t, w := s.t, s.w
	s.toPullRequest()

	// A red commit status (found by polling): ci_fix, resumed; green: in review.
	w.status(s.mb.HeadSHA, "failure", "1 test failed")
	waitFor(t, 3*time.Minute, "ci_fix", func() bool { s.waitStatus("in_ci"); return s.mb.CIFixAttempts == 1 })
	if l := s.lastSession(); !l.Resumed || *l.NativeSessionID != s.native {
		t.Fatalf("ci_fix session: %+v", l)
	}
	w.status(s.mb.HeadSHA, "success", "ok")
	s.waitStatus("in_review")
	s.pages()

	// The session state deleted on disk: the next run falls back to fresh, silently.
	entries, _ := os.ReadDir(s.stateDir())
	if len(entries) == 0 {
		t.Fatalf("no session state in %s", s.stateDir())
	}
	for _, e := range entries {
		os.RemoveAll(filepath.Join(s.stateDir(), e.Name()))
	}
	w.review(s.mb.MergeRequestIID, "Please greet in French too.")
	waitFor(t, 3*time.Minute, "review_fix", func() bool { s.waitStatus("in_ci"); return s.lastRun().Phase == "review_fix" })
	if l := s.lastSession(); l.Resumed || l.ResumeFallback == nil || *l.ResumeFallback != "state_missing" || l.Outcome != "succeeded" {
		t.Fatalf("after deleting the state: %+v", l)
	}
	if s.mb.LLMRetries != 0 {
		t.Errorf("the fallback counted as a retry: %d", s.mb.LLMRetries)
	}
	s.native = *s.lastSession().NativeSessionID
	s.killMidRun()
}

// sealed checks that the runs were sealed, the default: each that asked the
// model and ended went through the bot's model gateway (its record counts
// the requests), and every request the model saw carried the real key,
// which the gateway adds (the containers had only their run's token; the
// pages never show the key).
func (s *scenario) sealed() {
	t := s.t
	for _, r := range s.runs {
		if r.Status != state.RunSucceeded || r.NothingToDo {
			continue // killed in the middle (its work done again by a run of its own), or no model asked
		}
		if r.Gateway == nil || r.Gateway.Requests == 0 || r.Gateway.RefusedTotal != 0 {
			t.Errorf("run %s (%s) was not sealed, or was refused: %+v", r.ID, r.Phase, r.Gateway)
		}
	}
	reqs := s.b.model.Requests()
	if len(reqs) == 0 {
		t.Fatal("the model saw no request")
	}
	for _, r := range reqs {
		if r.Key != apiKey {
			t.Fatalf("a model request carried %q, not the key the gateway holds", r.Key)
		}
	}
}

// toPullRequest works the issue from assignment to its pull request:
// analysis and plan, ai::validate_plan, development resuming the analysis'
// session, the agent's file pushed.
func (s *scenario) toPullRequest() {
	t, w := s.t, s.w
	// Assign: acknowledgement, analysis, plan, waiting for validation.
	s.n = w.openIssue("Greet the users", "The demo should greet its users.", "type::task")
	s.key = state.MailboxKey{Forge: "forgejo", Owner: s.owner, Project: s.name, Kind: state.KindIssue, IID: s.n}
	assigned := time.Now()
	w.assign(s.n)
	s.waitStatus("waiting_validation")
	if len(s.sessions) != 1 {
		t.Fatalf("sessions after the analysis: %d, want 1: %+v", len(s.sessions), s.sessions)
	}
	first := s.sessions[0]
	// The llm_session is recorded right before the agent's container is created.
	s.webhookToAgent = first.CreatedAt.Sub(assigned)
	branch := fmt.Sprintf("agent/issue-%d-greet-the-users", s.n)
	if first.SessionName == nil || *first.SessionName != branch || first.NativeSessionID == nil ||
		first.Resumed || first.ResumeFallback == nil || *first.ResumeFallback != "no_prior_session" {
		t.Fatalf("first session: %+v", first)
	}
	s.native = *first.NativeSessionID
	if body, _, _ := w.issue(s.n); !strings.Contains(section(body), "The demo should greet its users.") {
		t.Errorf("description section: %q", body)
	}
	// The agent's container wrote its session where the bot keeps it.
	if entries, err := os.ReadDir(s.stateDir()); err != nil || len(entries) == 0 {
		t.Fatalf("no session state in %s: %v", s.stateDir(), err)
	}

	// ai::validate_plan: development resumes the session, pushes, opens the pull request.
	if s.beforeDevelopment != nil {
		s.beforeDevelopment()
	}
	w.label(s.n, []string{"ai::validate_plan"}, nil)
	s.waitStatus("in_ci")
	if l := s.lastSession(); s.lastRun().Phase != "development" || !l.Resumed || l.NativeSessionID == nil || *l.NativeSessionID != s.native {
		t.Fatalf("development session (run %s): %+v; want resumed %s", s.lastRun().Phase, l, s.native)
	}
	if s.mb.MergeRequestIID == 0 || !s.lastRun().Pushed {
		t.Fatalf("no pull request or push: %+v", s.mb)
	}
	if _, labels, _ := w.issue(s.n); contains(labels, "ai::validate_plan") {
		t.Error("ai::validate_plan stays on the issue")
	}
	// What was pushed is the file Claude Code wrote with its Write tool.
	var written string
	for _, f := range w.files(s.mb.HeadSHA) {
		if strings.HasPrefix(f, "greeting-") {
			written = w.file(s.mb.HeadSHA, f)
		}
	}
	if !strings.Contains(written, "Written by the agent") {
		t.Fatalf("the development commit lacks the agent's file: tree %q", w.files(s.mb.HeadSHA))
	}
	// The run keeps its steps, read from Claude Code's own transcript of the
	// resumed session: they start after the analysis' and hold the Write.
	dev := s.lastRun()
	wrote := slices.ContainsFunc(dev.Steps, func(st state.RunStep) bool { return st.Kind == "edit" && strings.Contains(st.Path, "greeting-") })
	if dev.Transcript == nil || dev.Transcript.From == 0 || !wrote {
		t.Errorf("the development run's steps: transcript %+v, %d steps %+v", dev.Transcript, len(dev.Steps), dev.Steps)
	}
}

// pages checks the run page and the status comment show the session.
func (s *scenario) pages() {
	t := s.t
	resp, err := http.Get("http://" + s.b.addr + "/runs/" + s.lastRun().ID)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`data-test="session-mode">resumed<`, s.native, fmt.Sprintf("agent/issue-%d-greet-the-users", s.n)} {
		if !strings.Contains(string(page), want) {
			t.Errorf("run page lacks %q", want)
		}
	}
	if strings.Contains(string(page), apiKey) {
		t.Error("run page shows the API key")
	}
	_, _, comments := s.w.issue(s.n)
	var status string
	for _, c := range comments {
		if _, k, _ := forges.ParseMarker(c.Body); k == "session" {
			status = c.Body
		}
	}
	if !strings.Contains(status, s.native) || !strings.Contains(status, "resumed") || !strings.Contains(status, "fresh (no prior session)") {
		t.Errorf("status comment: %q", status)
	}
}

// killMidRun holds a ci_fix run back, SIGKILLs the bot, starts it again and
// checks the run is done once, resumed, with no comment doubled and no
// container left.
func (s *scenario) killMidRun() {
	t := s.t
	before := s.kinds()
	os.WriteFile(filepath.Join(s.stateDir(), "e2e-slow"), nil, 0o644)
	s.w.status(s.mb.HeadSHA, "failure", "flaky")
	waitFor(t, time.Minute, "the held run", func() (ok bool) {
		s.b.look(func(st *state.Store) {
			m, _ := st.Mailbox(s.key)
			if m.ActiveRunID != "" {
				r, _, _ := st.RunWithSessions(m.ActiveRunID)
				ok = r.Status == state.RunRunning && r.Phase == "ci_fix"
			}
		})
		return ok
	})
	time.Sleep(2 * time.Second) // the container is up
	s.b.kill()
	os.Remove(filepath.Join(s.stateDir(), "e2e-slow"))
	s.b.serve()
	waitFor(t, 3*time.Minute, "the interrupted ci_fix done", func() bool { s.waitStatus("in_ci"); return s.mb.CIFixAttempts == 2 })
	s.redoneOnce(before, 3)
	// The new bot detects the agent CLIs in containers of its own, in the
	// background, after it starts: wait for those to end. A container left
	// behind by the killed bot or by a run never does.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		out, _ := exec.Command("docker", "-H", s.docker, "ps", "-aq", "--filter", "label=alfred.instance="+s.instance).Output()
		if strings.TrimSpace(string(out)) == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("containers left behind: %s", out)
		}
	}
}

// redoneOnce checks the run a restart of the bot interrupted: fixes ci_fix
// runs in all, one of them canceled as interrupted, the last one resuming
// the session, and no comment but the session's posted again since
// comments were counted.
func (s *scenario) redoneOnce(comments map[string]int, fixes int) {
	t := s.t
	t.Helper()
	var interrupted, n int
	for _, r := range s.runs {
		if r.Phase == "ci_fix" {
			n++
			if r.Status == state.RunCanceled && strings.Contains(r.Outcome, "interrupted") {
				interrupted++
			}
		}
	}
	if n != fixes || interrupted != 1 {
		t.Errorf("ci_fix runs: %d, interrupted %d; want %d and 1", n, interrupted, fixes)
	}
	if l := s.lastSession(); !l.Resumed || l.NativeSessionID == nil || *l.NativeSessionID != s.native {
		t.Errorf("the session after the restart: %+v; want %s resumed", l, s.native)
	}
	for kind, c := range s.kinds() {
		if kind != "session" && c != comments[kind] {
			t.Errorf("%s comments: %d before the restart, %d after", kind, comments[kind], c)
		}
	}
}

// metricsAfterRestart scrapes /metrics of the bot started again after the
// kill: since then it redid the interrupted ci_fix (resumed) and handled
// the close, over the forge's API, with no panic, writing the state branch;
// once the webhooks its own changes caused are handled too, no event waits
// and no container runs, and every event found its mailbox.
func (s *scenario) metricsAfterRestart() {
	t := s.t
	var body string
	waitFor(t, time.Minute, "no event waiting, no container running", func() bool {
		body = s.scrape()
		return seriesValue(body, `alfred_events_waiting{state="new"}`) == 0 && seriesSum(body, "alfred_events_waiting{") == 0 &&
			seriesValue(body, `alfred_containers_running{runner="image"}`) == 0
	})
	var ours []string
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "alfred_") && !strings.Contains(line, "_bucket{") {
			ours = append(ours, line)
		}
	}
	t.Logf("Alfred's series on /metrics after the restart:\n%s", strings.Join(ours, "\n"))
	for _, want := range []string{
		`alfred_runs_total{adapter="claude-code",phase="ci_fix",status="succeeded"} 1`,
		`alfred_sessions_total{start="resumed"} 1`,
		`alfred_build_info{version=`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	for _, series := range []string{
		`alfred_webhooks_total{forge="forgejo",outcome="accepted"}`,
		`alfred_forge_calls_total{forge="forgejo",method="GET",status="2xx"}`,
		`alfred_forge_calls_total{forge="forgejo",method="POST",status="2xx"}`,
		`alfred_state_commits_total{result="committed"}`,
		`alfred_state_write_duration_seconds_count`,
	} {
		if n := seriesValue(body, series); n < 1 {
			t.Errorf("%s = %v, want at least 1", series, n)
		}
	}
	for _, absent := range []string{`alfred_panics_recovered_total{`, `alfred_runs_total{adapter="claude-code",phase="development"`,
		`alfred_routing_errors_total{`, `alfred_state_commits_total{result="failed"}`} {
		if strings.Contains(body, absent) {
			t.Errorf("/metrics has %s", absent)
		}
	}
}

// scrape reads the bot's /metrics.
func (s *scenario) scrape() string {
	s.t.Helper()
	resp, err := http.Get("http://" + s.b.addr + "/metrics")
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return string(raw)
}

// seriesSum adds the values of the series starting with prefix (-1 when
// there is none).
func seriesSum(body, prefix string) float64 {
	sum, found := 0.0, false
	for _, line := range strings.Split(body, "\n") {
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		var f float64
		if _, err := fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &f); err == nil {
			sum, found = sum+f, true
		}
	}
	if !found {
		return -1
	}
	return sum
}

// seriesValue is the value of one series in a Prometheus text scrape (-1
// when it is not there).
func seriesValue(body, series string) float64 {
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			var f float64
			if _, err := fmt.Sscan(v, &f); err == nil {
				return f
			}
		}
	}
	return -1
}

func section(body string) string {
	s, _ := forges.Section(body)
	return s
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// seedRepo makes the bare repository with one commit on main.
func seedRepo(t testing.TB, bare string) {
	t.Helper()
	work := t.TempDir()
	for _, args := range [][]string{
		{"git", "init", "--quiet", "--bare", "--initial-branch=main", bare},
		{"git", "-C", bare, "config", "http.receivepack", "true"},
		{"git", "-C", work, "init", "--quiet", "--initial-branch=main"},
	} {
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	os.WriteFile(filepath.Join(work, "README.md"), []byte("demo\n"), 0o644)
	for _, args := range [][]string{
		{"git", "-C", work, "add", "."},
		{"git", "-C", work, "-c", "user.name=alice", "-c", "user.email=a@x", "commit", "--quiet", "-m", "initial"},
		{"git", "-C", work, "push", "--quiet", bare, "main"},
	} {
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
}
