package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/alchemic-studio/alfred/agents/mockllm"
	"github.com/alchemic-studio/alfred/internal/browsertest"
	"github.com/alchemic-studio/alfred/state"
)

// TestE2ELiveSteps: through the built binary, the real Claude Code of the
// shipped agent image works an issue, sealed, against a mock model that asks it
// to Write a file and then takes 45 s to answer the request carrying the
// result (mockllm HoldAfter, HoldFor). Chromium, on the run's page while
// the run goes, shows the agent's first tool call as a step of the
// timeline (the tool, its arguments), never the stream's JSON; then the
// run's end, without a reload.
func TestE2ELiveSteps(t *testing.T) {
	var model *mockllm.Server
	dockerHost, image, instance := shippedImage(t)
	s := startOn(t, newFakeWorld(t), dockerHost, image, instance, func(t testing.TB, _ *bot, _, _ string) []string {
		model = mockllm.Start(mockllm.Options{Reply: agentReply, WriteDir: "/workspace", HoldAfter: 1, HoldFor: 45 * time.Second})
		t.Cleanup(model.Close)
		return []string{"ANTHROPIC_BASE_URL=" + model.URL} // the gateway's upstream
	})
	s.n = s.w.openIssue("Greet the users", "The demo should greet its users.", "type::task")
	s.key = state.MailboxKey{Forge: "forgejo", Owner: s.owner, Project: s.name, Kind: state.KindIssue, IID: s.n}
	s.w.assign(s.n)
	var runID string
	waitFor(t, 3*time.Minute, "the analysis run started", func() bool {
		s.b.look(func(st *state.Store) {
			if m, err := st.Mailbox(s.key); err == nil {
				runID = m.ActiveRunID
			}
		})
		return runID != ""
	})

	ctx := browsertest.Start(t, 4*time.Minute)
	call := `[data-test="live-step"][data-kind="tool_call"]`
	if err := chromedp.Do(ctx, chromedp.Navigate("http://"+s.b.addr+"/runs/"+runID),
		chromedp.WaitVisible(chromedp.CSS(call+` [data-test="tool"]`))); err != nil {
		t.Fatalf("the run page never showed a tool call: %v", err)
	}
	text := func(sel string) string {
		v, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("read %s: %v", sel, err)
		}
		return strings.TrimSpace(v)
	}
	ended, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`!document.querySelector('[data-test="live-end"]').hidden`))
	if err != nil {
		t.Fatal(err)
	}
	if ended || len(model.Requests()) > 2 {
		t.Errorf("the call was shown only after the run's end (ended %v, %d model requests)", ended, len(model.Requests()))
	}
	if tool, args := text(call+` [data-test="tool"]`), text(call+` [data-test="args"]`); tool != "Write" || !strings.Contains(args, `"file_path":"/workspace/greeting-`) {
		t.Errorf("the call shows tool %q args %q, want the mock's Write", tool, args)
	}
	live := text(`[data-test="live"]`)
	for _, raw := range []string{`"type":`, `"session_id"`, `tool_use`, apiKey} {
		if strings.Contains(live, raw) {
			t.Errorf("the live output shows %q:\n%s", raw, live)
		}
	}
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`[data-test="live-end"]`))); err != nil {
		t.Fatalf("the run's end never showed: %v", err)
	}
	if end := text(`[data-test="live-end"]`); !strings.HasPrefix(end, "Run ended: succeeded") {
		t.Errorf("end %q", end)
	}
	s.waitStatus("waiting_validation")
}
