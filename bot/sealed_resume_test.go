package bot

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/agents/grok"
	"github.com/alchemic-studio/alfred/agents/mockllm"
	"github.com/alchemic-studio/alfred/gateway"
	"github.com/alchemic-studio/alfred/sandbox"
	"github.com/alchemic-studio/alfred/state"
)

// The prompts of a sealed run and of its resume: the second run's model
// requests must carry the first one as history.
const (
	firstTurnPrompt  = "First question: say hello, and remember the word kumquat."
	secondTurnPrompt = "Second question: say hello again."
	sealedReply      = "hello from the sealed container"
)

// sealedTurn is one sealed run of a CLI, as the engine makes it: its
// result, what the gateway recorded on the run at unseal, its token, and
// the model requests it made.
type sealedTurn struct {
	res   *agents.Result
	rg    *state.RunGateway
	token string
	reqs  []mockllm.Request
	spec  sandbox.Spec // as the runner got it, before the probe
}

// sealedResumeInDocker (issue 21, item 5): a fresh run of a, sealed in the
// agent image, then a resume of the same named session, sealed too, its
// state kept between them in the mailbox's session folder
// (SessionStore.Ensure, mounted at the descriptor's SessionStatePath), as
// the engine does. Both containers have lo only; each run gets a token of
// its own, refused once its run has ended; the gateway's figures agree
// with the CLI's own (checkMetering). A CLI that keeps no sessions (Grok)
// runs twice with no session reference, as the engine runs it.
func sealedResumeInDocker(t *testing.T, runner sandbox.Runner, image, fwd string, a *agents.Local, c sealedCLI) {
	mock := mockllm.Start(mockllm.Options{Reply: sealedReply})
	t.Cleanup(mock.Close)
	e, g := sealingEngine(t, runner, fwd, c.provider, mock.URL)
	base := sealedSpec(t, image, a.Descriptor(), c.env)
	resumable := a.Capabilities().ResumableSessions
	if !resumable && a.ID() != grok.ID { // grok: see the package doc of agents/grok
		t.Fatalf("%s declares no resumable sessions: only Grok's CLI has none", a.ID())
	}
	var ref *agents.SessionRef
	if resumable {
		ref = sessionRef(t, e, a.ID())
	}

	first := runSealedTurn(t, e, runner, a, c, base, mock, "run-1", firstTurnPrompt, ref)
	checkTokenRefused(t, g, c.provider, first.token, mock)
	if resumable {
		checkFresh(t, first.res, ref.HostStateDir)
		ref = &agents.SessionRef{Name: ref.Name, HostStateDir: ref.HostStateDir, ResumeID: first.res.NativeSessionID}
	}
	second := runSealedTurn(t, e, runner, a, c, base, mock, "run-2", secondTurnPrompt, ref)
	checkTokenRefused(t, g, c.provider, second.token, mock)
	if first.token == second.token {
		t.Errorf("both runs had the token %q", first.token)
	}
	checkMetering(t, a.ID(), c.usage, first, nil)
	checkMetering(t, a.ID(), c.usage, second, first.rg)
	if !resumable {
		checkNotResumed(t, second)
		return
	}
	checkResumed(t, first, second)
}

// sessionRef is the named session of the engine's first run of adapterID
// on an issue mailbox: its folder made (and handed to the sandbox's uid)
// by the engine's SessionStore, no prior session.
func sessionRef(t *testing.T, e *Engine, adapterID string) *agents.SessionRef {
	t.Helper()
	mb := state.Mailbox{ID: "mb-7", Forge: "gitea", Owner: "acme", Project: "app", Kind: state.KindIssue, IID: 7,
		BranchName: "agent/issue-7-add-a-greeting"}
	dir, err := e.cfg.Sessions.Ensure(mb, adapterID, 1000, 1000)
	if err != nil {
		t.Fatal(err)
	}
	return &agents.SessionRef{Name: mb.BranchName, HostStateDir: dir, FreshReason: agents.FallbackNoPriorSession}
}

// runSealedTurn seals one run (runID) of a with the engine, runs prompt in
// a fresh copy of base under the named session ref (nil: none), unseals it,
// and checks the run: the answer came back, the container had lo only (the
// probe), the run's token and no key in its environment, the provider's
// key on every model request, the gateway's count of them.
func runSealedTurn(t *testing.T, e *Engine, runner sandbox.Runner, a *agents.Local, c sealedCLI, base sandbox.Spec,
	mock *mockllm.Server, runID, prompt string, ref *agents.SessionRef) sealedTurn {
	t.Helper()
	spec := base
	s, err := e.seal(runID, Scope{}, a, &spec)
	if err != nil || s == nil {
		t.Fatalf("%s: seal: %v, %v", runID, s, err)
	}
	if err := e.configure(t.TempDir(), a, &spec); err != nil {
		t.Fatal(err)
	}
	before := len(mock.Requests())
	probe := &netProbe{Runner: runner}
	res, err := a.Run(context.Background(), agents.Request{Prompt: prompt, Phase: agents.PhaseDevelopment, Session: ref,
		Provider: c.provider, Model: c.model, Timeout: 4 * time.Minute, Sandbox: spec, Runner: probe})
	run := &state.Run{ID: runID}
	e.unseal(s, run)
	if err != nil {
		t.Fatalf("%s: %v", runID, err)
	}
	turn := sealedTurn{res: res, rg: run.Gateway, token: s.Token(), reqs: mock.Requests()[before:], spec: probe.spec()}
	t.Logf("%s %s: %s %q id=%q resumed=%v fallback=%q, %d model requests, CLI in/out %d/%d, gateway %+v",
		a.ID(), runID, res.Outcome, res.Text, res.NativeSessionID, res.Resumed, res.ResumeFallback,
		len(turn.reqs), res.InputTokens, res.OutputTokens, run.Gateway)
	if res.Outcome != agents.OutcomeSucceeded || res.Text != sealedReply {
		t.Fatalf("%s: outcome %s %q\nstdout %s\nstderr %s\nunhandled %v", runID, res.Outcome, res.Text, res.Stdout, res.Stderr, mock.Unhandled())
	}
	checkSealedContainer(t, turn.spec, turn.token)
	checkOnlyLoopback(t, runID, res)
	checkSealedModel(t, turn.reqs, turn.rg)
	checkNoKey(t, res, mock)
	if turn.rg.RefusedTotal != 0 {
		t.Errorf("%s: refusals %v", runID, turn.rg.Refused)
	}
	return turn
}

// probeMark starts the line the probe writes on the container's stderr.
const probeMark = "alfred-test network devices: "

// netProbe runs each spec (recording the last one) with a shell between
// the forwarder and the CLI, in the same container, that writes to stderr
// how many network devices the container has, then execs the CLI (same
// argv, same stdin).
type netProbe struct {
	sandbox.Runner
	mu   sync.Mutex
	last sandbox.Spec
}

func (p *netProbe) Run(ctx context.Context, spec sandbox.Spec) (*sandbox.Result, error) {
	p.mu.Lock()
	p.last = spec
	p.mu.Unlock()
	spec.Prefix = append(slices.Clone(spec.Prefix), "sh", "-c",
		`echo "`+probeMark+`$(tail -n +3 /proc/net/dev | wc -l) $(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | tr '\n' ' ')" >&2; exec "$@"`, "sh")
	return p.Runner.Run(ctx, spec)
}

func (p *netProbe) spec() sandbox.Spec {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last
}

// checkOnlyLoopback: every attempt's container had one network device, lo.
func checkOnlyLoopback(t *testing.T, runID string, res *agents.Result) {
	t.Helper()
	for i, at := range res.Attempts {
		_, line, ok := strings.Cut(string(at.Stderr), probeMark)
		line, _, _ = strings.Cut(line, "\n")
		if !ok || strings.TrimSpace(line) != "1 lo" {
			t.Errorf("%s, attempt %d: network devices %q, want only lo (stderr %q)", runID, i+1, line, at.Stderr)
		}
	}
}

// checkFresh: the first run started the named session, reported its id,
// and wrote its state into the session folder.
func checkFresh(t *testing.T, res *agents.Result, dir string) {
	t.Helper()
	if res.NativeSessionID == "" || res.Resumed || res.ResumeFallback != agents.FallbackNoPriorSession || len(res.Attempts) != 1 {
		t.Fatalf("fresh run: id %q resumed %v fallback %q, %d attempts; want an id, not resumed, no_prior_session, 1 attempt",
			res.NativeSessionID, res.Resumed, res.ResumeFallback, len(res.Attempts))
	}
	if entries, _ := os.ReadDir(dir); len(entries) == 0 {
		t.Fatalf("fresh run: nothing written into the session folder %s", dir)
	}
}

// checkResumed: the second run resumed the first's session in one attempt,
// and its model requests carried the first run's prompt before its own.
func checkResumed(t *testing.T, first, second sealedTurn) {
	t.Helper()
	r := second.res
	if !r.Resumed || r.NativeSessionID != first.res.NativeSessionID || r.ResumeFallback != "" || len(r.Attempts) != 1 || r.Attempts[0].Mode != agents.ModeResume {
		t.Fatalf("resume: id %q resumed %v fallback %q, %d attempts; want %q resumed in one attempt",
			r.NativeSessionID, r.Resumed, r.ResumeFallback, len(r.Attempts), first.res.NativeSessionID)
	}
	for _, q := range second.reqs {
		if i := slices.IndexFunc(q.UserTexts, holds(firstTurnPrompt)); i >= 0 && slices.ContainsFunc(q.UserTexts[i+1:], holds(secondTurnPrompt)) {
			return
		}
	}
	t.Errorf("resume: no model request carried the first prompt before the second: %v", userTexts(second.reqs))
}

// checkNotResumed: a CLI without sessions starts anew: no session id, and
// the second run's requests do not carry the first prompt.
func checkNotResumed(t *testing.T, second sealedTurn) {
	t.Helper()
	if second.res.Resumed || second.res.NativeSessionID != "" {
		t.Errorf("a CLI without sessions resumed: id %q resumed %v", second.res.NativeSessionID, second.res.Resumed)
	}
	for _, q := range second.reqs {
		if slices.ContainsFunc(q.UserTexts, holds(firstTurnPrompt)) {
			t.Errorf("the second run of a CLI without sessions carried the first prompt: %v", q.UserTexts)
		}
	}
}

func holds(s string) func(string) bool {
	return func(text string) bool { return strings.Contains(text, s) }
}

func userTexts(reqs []mockllm.Request) [][]string {
	var out [][]string
	for _, q := range reqs {
		out = append(out, q.UserTexts)
	}
	return out
}

// checkTokenRefused: a request with an ended run's token, on the socket of
// another session of the gateway, is refused (401) and never reaches the
// model.
func checkTokenRefused(t *testing.T, g *gateway.Gateway, provider, token string, mock *mockllm.Server) {
	t.Helper()
	probe, err := g.Open("token-probe")
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	before := len(mock.Requests())
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", probe.SocketPath())
	}}}
	req, _ := http.NewRequest("POST", "http://127.0.0.1:47080/"+provider+"/v1/chat/completions",
		strings.NewReader(`{"model":"mock","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("x-api-key", token)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("an ended run's token: %d %s, want 401", resp.StatusCode, body)
	}
	if n := len(mock.Requests()); n != before {
		t.Errorf("an ended run's token reached the model: %d requests, want %d", n, before)
	}
}

// usageReport is what a CLI's own usage figures (agents.Result's tokens,
// what the run page showed before the gateway) are, next to the gateway's
// figures for the same run (issue 21, item 3).
type usageReport int

const (
	// usagePerRun: the run's own tokens, over all its model requests: equal
	// to the gateway's.
	usagePerRun usageReport = iota
	// usageSessionTotal: the session's tokens so far: equal to the
	// gateway's on a fresh run, and on a resume to the earlier runs'
	// gateway figures plus this run's.
	usageSessionTotal
	// usageSteps: the tokens of the run's steps, which leave out the
	// request that titles a session started without a title (a run without
	// a named session, whose argv has no --title): equal to the gateway's
	// less that one request's.
	usageSteps
	// usageNone: the CLI reports no tokens (0 and 0); the gateway's figures
	// are the only ones.
	usageNone
)

// titlePrompt starts the request OpenCode's title agent sends (on its
// small model) for a session started without a title.
const titlePrompt = "Generate a title for this conversation"

// checkMetering: the gateway's figures for a run and the CLI's own agree as
// the CLI's usageReport says; prior is what the gateway metered for the
// earlier runs of the session (nil on a fresh run). The gateway's figures
// themselves are checked against the mock by checkSealedModel.
func checkMetering(t *testing.T, id string, report usageReport, turn sealedTurn, prior *state.RunGateway) {
	t.Helper()
	res, rg := turn.res, turn.rg
	if rg == nil {
		t.Fatalf("%s: no gateway record", id)
	}
	wantIn, wantOut := rg.InputTokens, rg.OutputTokens
	switch {
	case report == usageNone:
		wantIn, wantOut = 0, 0
	case report == usageSessionTotal && prior != nil:
		wantIn, wantOut = prior.InputTokens+rg.InputTokens, prior.OutputTokens+rg.OutputTokens
	case report == usageSteps:
		titles := int64(titleRequests(t, id, turn))
		wantIn, wantOut = wantIn-titles*mockInputTokens, wantOut-titles*mockOutputTokens
	}
	if res.InputTokens != wantIn || res.OutputTokens != wantOut {
		t.Errorf("%s: the CLI reports %d input and %d output tokens, want %d and %d (gateway %d and %d, earlier runs %+v)\nstdout %s",
			id, res.InputTokens, res.OutputTokens, wantIn, wantOut, rg.InputTokens, rg.OutputTokens, prior, res.Stdout)
	}
}

// titleRequests is how many of the run's model requests titled its
// session: one without a named session, none with one.
func titleRequests(t *testing.T, id string, turn sealedTurn) int {
	t.Helper()
	n := 0
	for _, q := range turn.reqs {
		if len(q.UserTexts) > 0 && strings.HasPrefix(q.UserTexts[0], titlePrompt) {
			n++
		}
	}
	want := 0
	if turn.res.Attempts[0].Mode == agents.ModeNone {
		want = 1
	}
	if n != want {
		t.Errorf("%s: %d requests titled the session in mode %s, want %d: %v", id, n, turn.res.Attempts[0].Mode, want, userTexts(turn.reqs))
	}
	return n
}
