package views

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/state"
)

func str(s string) *string { return &s }

// fixture is a state store with one issue mailbox and three runs: a fresh
// session, a resumed one, and an API-mode run without a session.
type fixture struct {
	store                  *state.Store
	mb                     state.Mailbox
	fresh, resumed, apiRun string
}

// newStore is an empty state store of the test's own, closed with it.
func newStore(t *testing.T) *state.Store {
	t.Helper()
	st, err := state.Open(context.Background(), filepath.Join(t.TempDir(), "state.git"), state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	st := newStore(t)
	f := fixture{store: st, fresh: "11111111-aaaa", resumed: "22222222-bbbb", apiRun: "33333333-cccc"}
	f.mb = state.Mailbox{Forge: "forgejo", Owner: "alice", Project: "demo", Kind: state.KindIssue, IID: 7, Title: "Add a greeting",
		Status: "in_ci", BranchName: "agent/issue-7-add-a-greeting", IssueURL: "http://forge.test/alice/demo/issues/7",
		MergeRequestURL: "http://forge.test/alice/demo/pulls/9",
		Quarantined: []state.QuarantinedEvent{{Delivery: "delivery-q1", Type: "comment_created", Path: "events/x.json",
			Error: "panic: nil map", At: time.Date(2026, 11, 30, 9, 30, 0, 0, time.UTC)}}}
	f.mb.ID = f.mb.Key().ID()
	t0 := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	err := st.Update(context.Background(), func(tx *state.Tx) error {
		if err := tx.PutMailbox(f.mb); err != nil {
			return err
		}
		runs := []state.Run{
			{ID: f.fresh, Phase: "analysis", Trigger: "b6f1c2de-delivery", AdapterID: "claude-code", Runner: "image", Status: state.RunSucceeded, CreatedAt: t0, StartedAt: t0, FinishedAt: t0.Add(90 * time.Second),
				Log: "thinking with key sk-live-0123456789\n", Result: "## Implementation plan\n1. do it with sk-live-0123456789"},
			{ID: f.resumed, Phase: "development", AdapterID: "claude-code", Runner: "image", Status: state.RunRunning, CreatedAt: t0.Add(time.Hour), StartedAt: t0.Add(time.Hour)},
			{ID: f.apiRun, Phase: "answer", AdapterID: "api", Runner: "image", Status: state.RunSucceeded, CreatedAt: t0.Add(2 * time.Hour),
				NoSession: "the adapter does not declare resumable sessions"},
		}
		sessions := []state.LLMSession{
			{ID: "s1", RunID: f.fresh, AdapterID: "claude-code", SessionName: str(f.mb.BranchName), NativeSessionID: str("5f2c-native-1"),
				ResumeFallback: str("no_prior_session"), InputTokens: 1200, OutputTokens: 340, CostUSD: 0.0123},
			{ID: "s2", RunID: f.resumed, AdapterID: "claude-code", SessionName: str(f.mb.BranchName), NativeSessionID: str("5f2c-native-1"), Resumed: true},
			{ID: "s3", RunID: f.apiRun, AdapterID: "api", InputTokens: 10, OutputTokens: 5},
		}
		for _, r := range runs {
			r.MailboxID = f.mb.ID
			if err := tx.PutRun(r); err != nil {
				return err
			}
		}
		for _, s := range sessions {
			s.MailboxID = f.mb.ID
			if err := tx.PutLLMSession(s); err != nil {
				return err
			}
		}
		return tx.PutInstallation(state.AgentInstallation{AdapterID: "claude-code", Runner: "image", Image: "alfred-agent:1", Version: "2.1.197", ResumableSessions: true, DetectedAt: t0})
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (f fixture) deps() Deps {
	return Deps{
		Records: f.store, Runner: "image", Secrets: []string{"sk-live-0123456789"},
		Agents: []Agent{
			{ID: "claude-code", Kind: "local", Resumable: true, SessionStatePath: "/home/agent/.claude/projects"},
			{ID: "codex", Kind: "local", Resumable: true, SessionStatePath: "/home/agent/.codex/sessions"},
			{ID: "api", Kind: "api"},
		},
	}
}

func TestRunPage(t *testing.T) {
	f := newFixture(t)
	srv := serve(t, f.deps())

	code, body := get(t, srv.URL+"/runs/"+f.fresh)
	if code != 200 {
		t.Fatalf("run page: %d", code)
	}
	for _, want := range []string{`data-test="session-name">agent/issue-7-add-a-greeting<`, `data-test="native-id">5f2c-native-1<`,
		`data-test="session-mode">fresh (no prior session)<`, "1200 in · 340 out · $0.0123", `href="/runs/` + f.resumed + `"`,
		`data-test="issue-link" href="http://forge.test/alice/demo/issues/7"`, "1m30s"} {
		if !strings.Contains(body, want) {
			t.Errorf("fresh run page lacks %q", want)
		}
	}
	if strings.Contains(body, "sk-live-0123456789") || !strings.Contains(body, "[redacted]") {
		t.Error("the run page shows a secret")
	}
	if strings.Contains(body, `http-equiv="refresh"`) {
		t.Error("a finished run refreshes itself")
	}

	_, body = get(t, srv.URL+"/runs/"+f.resumed)
	if !strings.Contains(body, `data-test="session-mode">resumed<`) || !strings.Contains(body, `http-equiv="refresh"`) {
		t.Error("the running, resumed run page: no 'resumed' or no refresh")
	}

	_, body = get(t, srv.URL+"/runs/"+f.apiRun)
	if strings.Contains(body, `data-test="session-name"`) || !strings.Contains(body, `started fresh: <span data-test="no-session">the adapter does not declare resumable sessions<`) {
		t.Error("an API-mode run shows a session, or not why it has none")
	}

	if code, _ := get(t, srv.URL+"/runs/nope"); code != 404 {
		t.Errorf("unknown run: %d", code)
	}

	code, body = get(t, srv.URL+"/api/runs/"+f.resumed)
	var v struct {
		Run      state.Run          `json:"run"`
		Sessions []state.LLMSession `json:"llm_sessions"`
		Prev     string             `json:"prev_run_id"`
		Live     bool               `json:"live"`
	}
	if err := json.Unmarshal([]byte(body), &v); err != nil || code != 200 {
		t.Fatalf("run JSON: %d %v", code, err)
	}
	if !v.Live || v.Prev != f.fresh || len(v.Sessions) != 1 || !v.Sessions[0].Resumed {
		t.Errorf("run JSON: %+v", v)
	}
}

func TestMailboxPage(t *testing.T) {
	f := newFixture(t)
	srv := serve(t, f.deps())
	code, body := get(t, srv.URL+"/mailboxes/"+f.mb.ID)
	if code != 200 || !strings.Contains(body, "agent/issue-7-add-a-greeting") || strings.Count(body, `href="/runs/`) != 3 {
		t.Fatalf("mailbox page: %d\n%s", code, body)
	}
	if !strings.Contains(body, `data-test="quarantined"`) || !strings.Contains(body, "panic: nil map") || !strings.Contains(body, "delivery-q1") {
		t.Errorf("the mailbox page does not show the quarantined event:\n%s", body)
	}
	code, body = get(t, srv.URL+"/api/mailboxes/"+f.mb.ID)
	if code != 200 || !strings.Contains(body, "1. do it with [redacted]") || strings.Contains(body, "sk-live-0123456789") {
		t.Errorf("mailbox JSON shows a secret or no result: %d\n%s", code, body)
	}
	if code, _ := get(t, srv.URL+"/mailboxes/forgejo/alice/demo/issue/8"); code != 404 {
		t.Errorf("unknown mailbox: %d", code)
	}
	if code, _ := get(t, srv.URL+"/mailboxes/not-an-id"); code != 404 {
		t.Errorf("malformed mailbox id: %d", code)
	}
}

func TestAgentsScreenSaysWhyNot(t *testing.T) {
	f := newFixture(t)
	d := f.deps()
	// A CLI that is there but does not start (Gemini on a Node.js too old).
	d.Agents = append(d.Agents, Agent{ID: "gemini", Kind: "local", Resumable: true, SessionStatePath: "/home/agent/.gemini/tmp"})
	err := f.store.Update(context.Background(), func(tx *state.Tx) error {
		return tx.PutInstallation(state.AgentInstallation{AdapterID: "gemini", Runner: "image", Image: "alfred-agent:1",
			Reason: "installed but does not start: gemini --version exited 1: SyntaxError: Invalid regular expression flags"})
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := serve(t, d)
	_, body := get(t, srv.URL+"/agents")
	for _, want := range []string{"2.1.197", `<span class="ok">resumable</span>`, "not detected on the image runner", "does not declare resumable sessions",
		"installed, does not start", "SyntaxError: Invalid regular expression flags"} {
		if !strings.Contains(body, want) {
			t.Errorf("agents screen lacks %q", want)
		}
	}
	d.Agents[0].Shadowed = "credential mount /home/agent/.claude overlaps the session path /home/agent/.claude/projects"
	_, body = get(t, serve(t, d).URL+"/agents")
	if !strings.Contains(body, "credential mount /home/agent/.claude overlaps the session path /home/agent/.claude/projects") {
		t.Error("agents screen does not say the credential mount overlaps")
	}
	missing := "no: the gateway holds no anthropic credential: offer ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN or CLAUDE_CODE_OAUTH_TOKEN in ALFRED_AGENT_ENV"
	d.Agents[0].Sealed = missing
	_, body = get(t, serve(t, d).URL+"/agents")
	if !strings.Contains(body, `<td data-test="sealed">`+missing) {
		t.Error("agents screen does not say which credential the sealed runs miss")
	}
	d.Runner = "host"
	_, body = get(t, serve(t, d).URL+"/api/agents")
	var rows []agentRow
	if err := json.Unmarshal([]byte(body), &rows); err != nil || len(rows) != len(d.Agents) || rows[0].ResumesHere {
		t.Errorf("agents JSON on the host runner: %v %+v", err, rows)
	}
}
