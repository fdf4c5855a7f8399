package agents

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/sandbox"
)

// stubCLI prints {"id":..,"ok":..} and classifies stderr "missing" as state_missing.
type stubCLI struct{ statePath string }

func (c stubCLI) Descriptor() Descriptor {
	return Descriptor{
		ID: "stub", Executable: "stub", SessionStatePath: c.statePath, VerifiedRange: ">=1.0.0",
		EnvAllowlist: []string{"STUB_KEY"}, FixedEnv: map[string]string{"STUB_FIXED": "1"}, TakesSessionID: true,
	}
}
func (stubCLI) Argv(inv Invocation) []string {
	return []string{"stub", string(inv.Mode), inv.SessionID, inv.SessionName, inv.Prompt}
}
func (stubCLI) Parse(res *sandbox.Result) Output {
	var o struct {
		ID string `json:"id"`
		OK bool   `json:"ok"`
	}
	_ = json.Unmarshal(res.Stdout, &o)
	return Output{Succeeded: res.ExitCode == 0 && o.OK, NativeSessionID: o.ID, Text: "t"}
}
func (stubCLI) Classify(res *sandbox.Result) FallbackReason {
	if strings.Contains(string(res.Stderr), "missing") {
		return FallbackStateMissing
	}
	return FallbackNone
}

// step is one scripted process.
type step struct {
	rc      int
	stdout  string
	stderr  string
	outcome sandbox.Outcome
	takes   time.Duration // advances the test clock
}

type scriptRunner struct {
	steps []step
	specs []sandbox.Spec
	clock *time.Time
}

func (r *scriptRunner) Name() string { return "script" }
func (r *scriptRunner) Run(_ context.Context, spec sandbox.Spec) (*sandbox.Result, error) {
	r.specs = append(r.specs, spec)
	if len(r.steps) == 0 {
		return nil, errors.New("script: no step left")
	}
	s := r.steps[0]
	r.steps = r.steps[1:]
	if r.clock != nil {
		*r.clock = r.clock.Add(s.takes)
	}
	if s.outcome == "" {
		s.outcome = sandbox.OutcomeExited
	}
	return &sandbox.Result{Outcome: s.outcome, ExitCode: s.rc, Stdout: []byte(s.stdout), Stderr: []byte(s.stderr)}, nil
}

func newStub(t *testing.T, clock *time.Time) *Local {
	t.Helper()
	l, err := NewLocal(stubCLI{statePath: "/home/agent/.stub"})
	if err != nil {
		t.Fatal(err)
	}
	if clock != nil {
		l.now = func() time.Time { return *clock }
	}
	return l
}

func TestCapabilitiesValidate(t *testing.T) {
	tests := []struct {
		name string
		caps Capabilities
		ok   bool
	}{
		{"local not resumable", Capabilities{Kind: KindLocal}, true},
		{"api", Capabilities{Kind: KindAPI}, true},
		{"resumable under home", Capabilities{Kind: KindLocal, ResumableSessions: true, SessionStatePath: "/home/agent/.claude/projects"}, true},
		{"resumable outside home", Capabilities{Kind: KindLocal, ResumableSessions: true, SessionStatePath: "/var/lib/claude"}, false},
		{"resumable at home itself", Capabilities{Kind: KindLocal, ResumableSessions: true, SessionStatePath: "/home/agent"}, false},
		{"resumable sibling prefix", Capabilities{Kind: KindLocal, ResumableSessions: true, SessionStatePath: "/home/agentx/s"}, false},
		{"resumable relative", Capabilities{Kind: KindLocal, ResumableSessions: true, SessionStatePath: "home/agent/s"}, false},
		{"resumable unclean", Capabilities{Kind: KindLocal, ResumableSessions: true, SessionStatePath: "/home/agent/../etc"}, false},
		{"resumable empty path", Capabilities{Kind: KindLocal, ResumableSessions: true}, false},
		{"api resumable", Capabilities{Kind: KindAPI, ResumableSessions: true, SessionStatePath: "/home/agent/x"}, false},
		{"path without resumable", Capabilities{Kind: KindLocal, SessionStatePath: "/home/agent/x"}, false},
		{"unknown kind", Capabilities{Kind: "remote"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.caps.Validate(); (err == nil) != tt.ok {
				t.Fatalf("Validate() = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

func TestNewLocalRefusesResumableOutsideHome(t *testing.T) {
	_, err := NewLocal(stubCLI{statePath: "/root/.stub"})
	if err == nil || !strings.Contains(err.Error(), "/home/agent") {
		t.Fatalf("NewLocal error = %v, want one naming /home/agent", err)
	}
}

func TestLocalRun(t *testing.T) {
	const ok1 = `{"id":"old-id","ok":true}`
	tests := []struct {
		name      string
		session   *SessionRef
		steps     []step
		want      Result
		wantModes []Mode
	}{
		{
			name:      "no session",
			steps:     []step{{stdout: `{"id":"printed","ok":true}`}},
			want:      Result{Outcome: OutcomeSucceeded},
			wantModes: []Mode{ModeNone},
		},
		{
			name:      "fresh",
			session:   &SessionRef{Name: "agent/issue-7-x", HostStateDir: "/state", FreshReason: FallbackNoPriorSession},
			steps:     []step{{stdout: `{"id":"new-id","ok":true}`}},
			want:      Result{Outcome: OutcomeSucceeded, NativeSessionID: "new-id", ResumeFallback: FallbackNoPriorSession},
			wantModes: []Mode{ModeFresh},
		},
		{
			name:      "resume",
			session:   &SessionRef{Name: "b", ResumeID: "old-id", HostStateDir: "/state"},
			steps:     []step{{stdout: ok1}},
			want:      Result{Outcome: OutcomeSucceeded, NativeSessionID: "old-id", Resumed: true},
			wantModes: []Mode{ModeResume},
		},
		{
			name:      "resume missing falls back fresh",
			session:   &SessionRef{Name: "b", ResumeID: "old-id", HostStateDir: "/state"},
			steps:     []step{{rc: 1, stderr: "missing"}, {stdout: `{"id":"new-id","ok":true}`}},
			want:      Result{Outcome: OutcomeSucceeded, NativeSessionID: "new-id", ResumeFallback: FallbackStateMissing},
			wantModes: []Mode{ModeResume, ModeFresh},
		},
		{
			name:      "fallback attempt failing keeps its outcome",
			session:   &SessionRef{Name: "b", ResumeID: "old-id", HostStateDir: "/state"},
			steps:     []step{{rc: 1, stderr: "missing"}, {rc: 1, stdout: `{"id":"new-id","ok":false}`}},
			want:      Result{Outcome: OutcomeFailed, NativeSessionID: "new-id", ResumeFallback: FallbackStateMissing, ExitCode: 1},
			wantModes: []Mode{ModeResume, ModeFresh},
		},
		{
			name:      "ambiguous failure keeps outcome",
			session:   &SessionRef{Name: "b", ResumeID: "old-id", HostStateDir: "/state"},
			steps:     []step{{rc: 1, stdout: `{"id":"old-id","ok":false}`, stderr: "401"}},
			want:      Result{Outcome: OutcomeFailed, NativeSessionID: "old-id", Resumed: true, ExitCode: 1},
			wantModes: []Mode{ModeResume},
		},
		{
			name:      "timeout is not classified",
			session:   &SessionRef{Name: "b", ResumeID: "old-id", HostStateDir: "/state"},
			steps:     []step{{outcome: sandbox.OutcomeTimeout, stderr: "missing"}},
			want:      Result{Outcome: OutcomeTimeout},
			wantModes: []Mode{ModeResume},
		},
		{
			name:      "echo mismatch is not resumed",
			session:   &SessionRef{Name: "b", ResumeID: "old-id", HostStateDir: "/state"},
			steps:     []step{{stdout: `{"id":"other","ok":true}`}},
			want:      Result{Outcome: OutcomeSucceeded, NativeSessionID: "other", ResumeFallback: FallbackStateMissing},
			wantModes: []Mode{ModeResume},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &scriptRunner{steps: tt.steps}
			base := sandbox.Spec{Workdir: "/workspace", Env: map[string]string{"HOME": "/home/agent", "STUB_KEY": "k", "SECRET": "s", "STUB_FIXED": "0"}}
			res, err := newStub(t, nil).Run(context.Background(), Request{Prompt: "do it", Runner: r, Sandbox: base, Session: tt.session, Timeout: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome != tt.want.Outcome || res.NativeSessionID != tt.want.NativeSessionID ||
				res.Resumed != tt.want.Resumed || res.ResumeFallback != tt.want.ResumeFallback || res.ExitCode != tt.want.ExitCode {
				t.Errorf("got outcome=%s id=%q resumed=%v fallback=%q rc=%d, want %s %q %v %q %d",
					res.Outcome, res.NativeSessionID, res.Resumed, res.ResumeFallback, res.ExitCode,
					tt.want.Outcome, tt.want.NativeSessionID, tt.want.Resumed, tt.want.ResumeFallback, tt.want.ExitCode)
			}
			var modes []Mode
			for _, a := range res.Attempts {
				modes = append(modes, a.Mode)
			}
			if !slices.Equal(modes, tt.wantModes) {
				t.Errorf("attempt modes = %v, want %v", modes, tt.wantModes)
			}
			for i, spec := range r.specs {
				if got := spec.Argv[len(spec.Argv)-1]; got != "do it" {
					t.Errorf("attempt %d prompt = %q, want the same prompt in every mode", i, got)
				}
				if want := map[string]string{"HOME": "/home/agent", "STUB_KEY": "k", "STUB_FIXED": "1"}; !mapsEqual(spec.Env, want) {
					t.Errorf("attempt %d env = %v, want %v", i, spec.Env, want)
				}
				if tt.session == nil {
					if spec.Session != nil {
						t.Errorf("no-session run got a session mount %+v", spec.Session)
					}
				} else if spec.Session == nil || spec.Session.Host != "/state" || spec.Session.Container != "/home/agent/.stub" || spec.Session.ReadOnly {
					t.Errorf("attempt %d session mount = %+v, want /state rw at /home/agent/.stub", i, spec.Session)
				}
			}
			if len(r.specs) == 2 {
				if got := r.specs[1].Argv[3]; got != tt.session.Name {
					t.Errorf("fallback attempt name = %q, want the same name %q", got, tt.session.Name)
				}
			}
		})
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestFallbackGetsOnlyTheRemainingTime(t *testing.T) {
	clock := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	r := &scriptRunner{clock: &clock, steps: []step{
		{rc: 1, stderr: "missing", takes: 7 * time.Second},
		{stdout: `{"id":"new-id","ok":true}`, takes: 2 * time.Second},
	}}
	l := newStub(t, &clock)
	res, err := l.Run(context.Background(), Request{
		Prompt: "p", Runner: r, Timeout: 10 * time.Second,
		Session: &SessionRef{Name: "b", ResumeID: "old-id"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := []time.Duration{r.specs[0].Timeout, r.specs[1].Timeout}; got[0] != 10*time.Second || got[1] != 3*time.Second {
		t.Fatalf("attempt timeouts = %v, want [10s 3s]", got)
	}
	if res.Outcome != OutcomeSucceeded || res.ResumeFallback != FallbackStateMissing || res.Duration != 9*time.Second {
		t.Fatalf("result = %s %q %v, want succeeded state_missing 9s", res.Outcome, res.ResumeFallback, res.Duration)
	}
}

func TestFallbackWithNoTimeLeftTimesOut(t *testing.T) {
	clock := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	r := &scriptRunner{clock: &clock, steps: []step{{rc: 1, stderr: "missing", takes: 10 * time.Second}}}
	res, err := newStub(t, &clock).Run(context.Background(), Request{
		Prompt: "p", Runner: r, Timeout: 10 * time.Second,
		Session: &SessionRef{Name: "b", ResumeID: "old-id"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.specs) != 1 {
		t.Fatalf("ran %d attempts, want 1 (no time left for the fallback)", len(r.specs))
	}
	if res.Outcome != OutcomeTimeout || res.ResumeFallback != FallbackStateMissing || len(res.Attempts) != 2 {
		t.Fatalf("result = %s %q attempts=%d, want timeout state_missing 2", res.Outcome, res.ResumeFallback, len(res.Attempts))
	}
}

func TestRunRejects(t *testing.T) {
	l := newStub(t, nil)
	if _, err := l.Run(context.Background(), Request{Prompt: "p"}); err == nil {
		t.Error("run without a runner: no error")
	}
	if _, err := l.Run(context.Background(), Request{Prompt: "p", Runner: &scriptRunner{}, Session: &SessionRef{}}); err == nil {
		t.Error("session without a name: no error")
	}
	nr, err := NewLocal(stubCLI{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nr.Run(context.Background(), Request{Prompt: "p", Runner: &scriptRunner{}, Session: &SessionRef{Name: "b"}}); err == nil {
		t.Error("session on a non-resumable adapter: no error")
	}
}

func TestFindVersion(t *testing.T) {
	tests := map[string]string{
		"2.1.197 (Claude Code)\n": "2.1.197",
		"codex-cli 0.171.0\n":     "0.171.0",
		"v1.18.33":                "1.18.33",
		"GitHub Copilot CLI 1.0.102.\nRun 'copilot update'": "1.0.102",
	}
	for in, want := range tests {
		v, err := FindVersion([]byte(in))
		if err != nil || v.String() != want {
			t.Errorf("FindVersion(%q) = %v, %v; want %s", in, v, err, want)
		}
	}
	if _, err := FindVersion([]byte("command not found")); !errors.Is(err, ErrNoVersion) {
		t.Errorf("FindVersion(garbage) error = %v, want ErrNoVersion", err)
	}
}

func TestStripANSI(t *testing.T) {
	in := "\x1b[91m\x1b[1mError: \x1b[0mSession not found"
	if got := string(StripANSI([]byte(in))); got != "Error: Session not found" {
		t.Fatalf("StripANSI = %q", got)
	}
}

// stdinStub reads its prompt from stdin.
type stdinStub struct{ stubCLI }

func (s stdinStub) Descriptor() Descriptor {
	d := s.stubCLI.Descriptor()
	d.PromptOnStdin = true
	return d
}

func (stdinStub) Argv(inv Invocation) []string {
	return []string{"stub", string(inv.Mode), inv.SessionID}
}

func TestPromptOnStdinInEveryAttempt(t *testing.T) {
	l, err := NewLocal(stdinStub{stubCLI{statePath: "/home/agent/.stub"}})
	if err != nil {
		t.Fatal(err)
	}
	var prompts []string
	r := &stdinRunner{scriptRunner: scriptRunner{steps: []step{{rc: 1, stderr: "missing"}, {stdout: `{"id":"new-id","ok":true}`}}}, prompts: &prompts}
	prompt := strings.Repeat("context ", 20000) // 160 KB: too long for one argv element
	res, err := l.Run(context.Background(), Request{Prompt: prompt, Runner: r, Session: &SessionRef{Name: "b", ResumeID: "old-id"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.ResumeFallback != FallbackStateMissing || len(prompts) != 2 || prompts[0] != prompt || prompts[1] != prompt {
		t.Fatalf("fallback=%q, %d prompts on stdin, want the same prompt on both attempts", res.ResumeFallback, len(prompts))
	}
}

type stdinRunner struct {
	scriptRunner
	prompts *[]string
}

func (r *stdinRunner) Run(ctx context.Context, spec sandbox.Spec) (*sandbox.Result, error) {
	if spec.Stdin == nil {
		return nil, errors.New("no stdin")
	}
	b, err := io.ReadAll(spec.Stdin)
	if err != nil {
		return nil, err
	}
	*r.prompts = append(*r.prompts, string(b))
	return r.scriptRunner.Run(ctx, spec)
}
