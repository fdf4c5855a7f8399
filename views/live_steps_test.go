package views

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/alchemic-studio/alfred/internal/live"
)

// stepDecoder decodes a small event stream as an agent CLI's decoder does:
// {"type":"tool_use",...} a call, {"type":"text",...} an answer,
// {"type":"init"} no step, anything else no event.
func stepDecoder(line []byte) ([]live.Line, bool) {
	var e struct {
		Type  string          `json:"type"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
		Text  string          `json:"text"`
	}
	if json.Unmarshal(line, &e) != nil || e.Type == "" {
		return nil, false
	}
	switch e.Type {
	case "tool_use":
		return []live.Line{{Kind: "tool_call", Tool: e.Name, Args: string(e.Input)}}, true
	case "text":
		return []live.Line{{Kind: "assistant", Text: e.Text}}, true
	case "delta":
		return []live.Line{{Kind: "assistant", Text: e.Text, Partial: true}}, true
	}
	return nil, true
}

const (
	callEvent   = `{"type":"tool_use","name":"Bash","input":{"command":"go test ./..."}}`
	answerEvent = `{"type":"text","text":"<img src=x onerror=\"document.title='pwned'\"> done"}`
)

// TestLiveStreamTypedLines: each data line of a message is one line as
// JSON with its kind; a decoded event is a step, never its raw JSON; a line
// that is no event and a line of stderr are text; secrets are hidden in
// every field.
func TestLiveStreamTypedLines(t *testing.T) {
	f := newFixture(t)
	out := live.New(nil, 0)
	out.Decode(stepDecoder)
	d := f.deps()
	d.Live = liveMap{f.resumed: out}
	srv := serve(t, d)

	write(t, out, `{"type":"init"}`+"\n"+callEvent+"\nnot an event "+fixtureSecret+"\n"+
		`{"type":"tool_use","name":"Write","input":{"content":"`+fixtureSecret+`"}}`+"\n")
	_, _ = out.Stderr().Write([]byte("warning on stderr\n"))
	c := openStream(t, srv.URL+"/runs/"+f.resumed+"/live", nil)
	lines, id := c.typed()
	want := []live.Line{
		{Kind: "tool_call", Tool: "Bash", Args: `{"command":"go test ./..."}`},
		{Kind: live.KindText, Text: "not an event [redacted]"},
		{Kind: "tool_call", Tool: "Write", Args: `{"content":"[redacted]"}`},
		{Kind: live.KindStderr, Text: "warning on stderr"},
	}
	if !slices.Equal(lines, want) || id != "4" {
		t.Errorf("message %+v id %s\nwant    %+v id 4", lines, id, want)
	}
}

// TestLiveStepsInABrowser: Chromium shows a tool call of the agent as a
// step (its tool and arguments), not as JSON, while the run goes; the
// agent's text is text, never markup.
func TestLiveStepsInABrowser(t *testing.T) {
	f := newFixture(t)
	out := live.New(nil, 0)
	out.Decode(stepDecoder)
	d := f.deps()
	d.Live = liveMap{f.resumed: out}
	srv := serve(t, d)
	ctx := browser(t)

	write(t, out, "starting\n"+callEvent+"\n")
	open(t, ctx, srv.URL+"/runs/"+f.resumed, `[data-test="live"]`)
	call := `[data-test="live-step"][data-kind="tool_call"]`
	waitText(t, ctx, call+` [data-test="tool"]`, "Bash")
	if got := text(t, ctx, call+` [data-test="args"]`); got != `{"command":"go test ./..."}` {
		t.Errorf("the call's arguments show %q", got)
	}
	write(t, out, answerEvent+"\n")
	waitText(t, ctx, `[data-test="live-step"][data-kind="assistant"]`, "done")
	// After another call, an answer streamed in fragments is one step.
	write(t, out, callEvent+"\n"+`{"type":"delta","text":"Hel"}`+"\n"+`{"type":"delta","text":"lo!"}`+"\n")
	waitText(t, ctx, `[data-test="live-step"]:last-child`, "Hello!")
	if n := count(t, ctx, `[data-test="live-step"][data-kind="assistant"]`); n != 2 {
		t.Errorf("%d answer steps, want 2: the fragments on one answer", n)
	}
	if got := text(t, ctx, `[data-test="live-step"]:last-child [data-test="step-text"]`); got != "Hello!" {
		t.Errorf("the streamed answer shows %q", got)
	}

	all := text(t, ctx, `[data-test="live"]`)
	if strings.Contains(all, `"type"`) || strings.Contains(all, "tool_use") {
		t.Errorf("raw JSON shows on the page: %q", all)
	}
	if !strings.Contains(all, `<img src=x onerror="document.title='pwned'"> done`) {
		t.Errorf("the answer's text is not shown as text: %q", all)
	}
	if n := count(t, ctx, `#live img`); n != 0 {
		t.Errorf("the agent's text made %d img elements", n)
	}
	if n := count(t, ctx, `[data-test="live-end"]:not([hidden])`); n != 0 {
		t.Error("the end shows before the run has ended")
	}
	if title, err := chromedp.Run(ctx, chromedp.Title()); err != nil || title == "pwned" {
		t.Errorf("title %q (%v)", title, err)
	}
	out.Close(live.End{Status: "succeeded", Outcome: "succeeded"})
}
