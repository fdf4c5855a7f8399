package views

import (
	"context"
	"strings"
	"testing"

	"github.com/alchemic-studio/alfred/config"
	"github.com/alchemic-studio/alfred/state"
)

const headSHA = "0123abcd4567ef89"

// withSteps adds to the fixture's runs the steps of their session: the
// fresh analysis run pushed and edited a file, with a secret in a call and
// in a failed result; the resumed run carries on the same transcript.
func withSteps(t *testing.T, f fixture) fixture {
	t.Helper()
	steps := map[string]struct {
		steps []state.RunStep
		tr    state.RunTranscript
	}{
		f.fresh: {[]state.RunStep{
			{Kind: "prompt", Text: "Analyse issue #7"},
			{Kind: "tool_call", Tool: "Bash", CallID: "c1", Args: `{"command":"echo sk-live-0123456789"}`},
			{Kind: "tool_result", Tool: "Bash", CallID: "c1", Text: "exit 1: sk-live-0123456789 refused", Failed: true},
			{Kind: "edit", Tool: "Write", CallID: "c2", Path: "hello.go"},
			{Kind: "assistant", Text: "Plan written."},
		}, state.RunTranscript{Total: 8, Dropped: 3}},
		f.resumed: {[]state.RunStep{
			{Kind: "prompt", Text: "Implement the plan"},
			{Kind: "assistant", Text: "Implemented."},
		}, state.RunTranscript{From: 8, Total: 10}},
	}
	err := f.store.Update(context.Background(), func(tx *state.Tx) error {
		for id, s := range steps {
			r, _, err := f.store.RunWithSessions(id)
			if err != nil {
				return err
			}
			tr := s.tr
			r.Steps, r.Transcript = s.steps, &tr
			if id == f.fresh {
				r.Pushed, r.HeadSHA = true, headSHA
			}
			if err := tx.PutRun(r); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestRunTimeline(t *testing.T) {
	f := withSteps(t, newFixture(t))
	srv := serve(t, f.deps())
	commit := "http://forge.test/alice/demo/commit/" + headSHA
	tests := []struct {
		name      string
		run       string
		want, not []string
	}{
		{"fresh", f.fresh, []string{"<h3>Timeline</h3>", `data-kind="prompt"`, "Analyse issue #7",
			`<code data-test="tool">Bash</code>`, `<details data-test="tool-result"><summary><span class="bad" data-test="failed">failed</span>`,
			`data-test="edited-file" href="` + commit + `">hello.go<`, `data-test="edit-link" href="` + commit + `"`,
			"[redacted]", `data-test="dropped">3 more steps not kept<`}, []string{"sk-live", "<details open"}},
		{"resumed, not pushed", f.resumed, []string{"Implement the plan", "Implemented."}, []string{"/commit/", `data-test="dropped"`}},
		{"no steps", f.apiRun, nil, []string{"<h3>Timeline</h3>"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := get(t, srv.URL+"/runs/"+tt.run)
			if code != 200 {
				t.Fatalf("run page: %d", code)
			}
			for _, s := range tt.want {
				if !strings.Contains(body, s) {
					t.Errorf("run page lacks %q", s)
				}
			}
			for _, s := range tt.not {
				if strings.Contains(body, s) {
					t.Errorf("run page shows %q", s)
				}
			}
		})
	}
}

func TestMailboxSession(t *testing.T) {
	f := withSteps(t, newFixture(t))
	srv := serve(t, f.deps())
	code, body := get(t, srv.URL+"/mailboxes/"+f.mb.ID)
	if code != 200 {
		t.Fatalf("mailbox page: %d", code)
	}
	for _, s := range []string{"<h3>Session</h3>", `data-run="` + f.fresh + `"`, "fresh (no prior session)",
		`data-run="` + f.resumed + `"`, `data-test="session-start" class="ok">resumed<`, "Analyse issue #7", "Implement the plan"} {
		if !strings.Contains(body, s) {
			t.Errorf("mailbox page lacks %q", s)
		}
	}
	if strings.Contains(body, "sk-live") || strings.Contains(body, `data-run="`+f.apiRun+`"`) {
		t.Errorf("mailbox page shows a secret or a run without steps")
	}
	if i, j := strings.Index(body, "Analyse issue #7"), strings.Index(body, "Implement the plan"); i > j {
		t.Errorf("the session is not in the runs' order")
	}
}

func TestCommitURL(t *testing.T) {
	gh := state.Mailbox{IssueURL: "https://github.com/alice/demo/issues/7"}
	gl := state.Mailbox{IssueURL: "https://gitlab.example/group/sub/demo/-/issues/7"}
	fj := state.Mailbox{IssueURL: "https://forge.example/alice/demo/issues/7"}
	mr := state.Mailbox{Kind: state.KindMR, MergeRequestURL: "https://gitlab.example/alice/demo/-/merge_requests/3"}
	pr := state.Mailbox{Kind: state.KindMR, MergeRequestURL: "https://github.com/alice/demo/pull/3"}
	tests := []struct {
		name, kind string
		mb         state.Mailbox
		sha, want  string
	}{
		{"github", "github", gh, "abc", "https://github.com/alice/demo/commit/abc"},
		{"gitlab", "gitlab", gl, "abc", "https://gitlab.example/group/sub/demo/-/commit/abc"},
		{"gitlab, kind unknown", "", gl, "abc", "https://gitlab.example/group/sub/demo/-/commit/abc"},
		{"forgejo", "forgejo", fj, "abc", "https://forge.example/alice/demo/commit/abc"},
		{"forgejo pull", "", state.Mailbox{MergeRequestURL: "https://forge.example/alice/demo/pulls/3"}, "abc", "https://forge.example/alice/demo/commit/abc"},
		{"gitlab merge request", "", mr, "abc", "https://gitlab.example/alice/demo/-/commit/abc"},
		{"github pull", "github", pr, "abc", "https://github.com/alice/demo/commit/abc"},
		{"no sha", "github", gh, "", ""},
		{"no address", "github", state.Mailbox{}, "abc", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := commitURL(tt.kind, tt.mb, tt.sha); got != tt.want {
				t.Errorf("commitURL = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestForgeKind(t *testing.T) {
	d := Deps{Config: &config.Config{Forges: []config.Forge{{Name: "work", Kind: "gitlab"}, {Name: "home", Kind: "forgejo"}}}}
	for name, want := range map[string]string{"work": "gitlab", "home": "forgejo", "other": ""} {
		if got := d.forgeKind(name); got != want {
			t.Errorf("forgeKind(%s) = %q, want %q", name, got, want)
		}
	}
	if got := (Deps{}).forgeKind("work"); got != "" {
		t.Errorf("no configuration: %q", got)
	}
}
