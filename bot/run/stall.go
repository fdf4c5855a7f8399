package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/gateway"
	"github.com/alchemic-studio/alfred/internal/live"
	"github.com/alchemic-studio/alfred/state"
)

// The stall watchdog (issue 21): a run whose CLI neither prints nor makes a
// model request for AGENT_STALL_TIMEOUT is stopped, failed with a sentence
// that says so, and its mailbox blocks at once (lifecycle.DecideRunEnd): a CLI that
// stalls is set up wrong (an endpoint it ignores, a prompt it waits on) and
// would stall again, so retrying it would only hold the mailbox longer.
//
// What counts as activity depends on what can show it. A sealed run's
// gateway session always can (gateway.Session.LastActivity: a request, an
// answer still coming, bytes through a tunnel), and then any line the CLI
// prints counts too. Without a gateway only the output is left, and it
// means something only for a CLI that prints as it works (an adapter that
// says so, progressReporter: every CLI whose stdout is a stream of events,
// agents.StreamDecoder); a CLI that prints only at its end is not watched
// unsealed (RUN_TIMEOUT still bounds it). This holds on every runner: the
// host runner feeds the live output as the image runner does.
//
// When the watchdog stops a run, its outcome names the last step the agent
// took, as decoded from its stream (live.Output.LastStep): "last: a call of
// Bash `go test ./...`".

// StallSetting is the key of the setting that gives the stall timeout
// (Settings.StallTimeout), as the thread names it.
const StallSetting = "AGENT_STALL_TIMEOUT"

// errStalled is why the watchdog stopped a run, as the thread says it.
type errStalled struct {
	idle    time.Duration // AGENT_STALL_TIMEOUT
	gateway bool          // a model request would have counted: a sealed run
	last    string        // the last step the agent took (lastStep), "" when none was seen
}

func (e errStalled) Error() string {
	what := "no output"
	if e.gateway {
		what = "no output and no model request"
	}
	last := ""
	if e.last != "" {
		last = " after " + e.last
	}
	return fmt.Sprintf("the agent stalled: %s for %s%s, so Alfred stopped it (%s); check the CLI's provider settings",
		what, e.idle, last, StallSetting)
}

// progressReporter is an adapter whose CLI prints as it works (a stream of
// JSON events, a log), so that a silent output means it is stuck.
type progressReporter interface{ ReportsProgress() bool }

func reportsProgress(a agents.Adapter) bool {
	p, ok := a.(progressReporter)
	return ok && p.ReportsProgress()
}

// stallWatch is what the watchdog of one run looks at. A nil source is not
// looked at; with none, nothing is watched.
type stallWatch struct {
	timeout time.Duration
	now     func() time.Time
	output  func() time.Time // when the CLI last printed (zero: not yet)
	gateway func() time.Time // when the run's gateway session was last active
	step    func() string    // the agent's last step, said (lastStep); nil: not known
}

// stallTick is how often the watchdog looks: a fraction of the timeout,
// bounded, so that a stall is seen at most a tick after the timeout.
func stallTick(timeout time.Duration) time.Duration {
	return min(max(timeout/8, 10*time.Millisecond), 5*time.Second)
}

// start watches the run that ctx bounds: the context it returns is canceled
// with an errStalled once no source has moved for the timeout. stop ends the
// watch (call it when the run has ended) and returns that errStalled when
// the watchdog stopped the run, else nil.
func (w stallWatch) start(ctx context.Context) (watched context.Context, stop func() error) {
	if w.timeout <= 0 || (w.output == nil && w.gateway == nil) {
		return ctx, func() error { return nil }
	}
	wctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.loop(wctx, cancel)
	}()
	return wctx, func() error {
		cancel(nil) // a cause set before stays
		<-done
		var s errStalled
		if errors.As(context.Cause(wctx), &s) {
			return s
		}
		return nil
	}
}

// loop looks at the sources every tick until the run ends or stalls.
func (w stallWatch) loop(ctx context.Context, cancel context.CancelCauseFunc) {
	start := w.now()
	t := time.NewTicker(stallTick(w.timeout))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if w.now().Sub(w.last(start)) >= w.timeout {
			why := errStalled{idle: w.timeout, gateway: w.gateway != nil}
			if w.step != nil {
				why.last = w.step()
			}
			cancel(why)
			return
		}
	}
}

// last is the latest sign of life: the start of the watch, or later.
func (w stallWatch) last(start time.Time) time.Time {
	last := start
	for _, source := range []func() time.Time{w.output, w.gateway} {
		if source == nil {
			continue
		}
		if t := source(); t.After(last) {
			last = t
		}
	}
	return last
}

// watchStall starts the stall watchdog of a run about to call its adapter,
// on the sources that can show its activity (see above): out is its live
// output (nil: not launched here) and gw its gateway session (nil when the
// run is not sealed); timeout is AGENT_STALL_TIMEOUT.
func (r *Runner) watchStall(ctx context.Context, timeout time.Duration, out *live.Output, run *state.Run, adapter agents.Adapter, gw *gateway.Session) (context.Context, func() error) {
	w := stallWatch{timeout: timeout, now: r.Now}
	if gw != nil {
		w.gateway = gw.LastActivity
	}
	if out != nil && (gw != nil || reportsProgress(adapter)) {
		w.output = out.LastWrite
	}
	if out != nil {
		w.step = func() string { return lastOf(out) }
	}
	if w.output == nil && w.gateway == nil {
		r.Log.Debug("stall watchdog off: the run shows no activity before its end", "run", run.ID, "adapter", adapter.ID())
	}
	return w.start(ctx)
}

// stalled records the end of a run the watchdog stopped: the adapter saw a
// cancellation, but the run failed (Stalled, which blocks its mailbox at
// once) with why as its outcome, and keeps what its CLI printed before.
func stalled(run *state.Run, ls *state.LLMSession, res *agents.Result, why error, named bool, logOf func(*agents.Result) string) (*agents.Result, error) {
	run.Stalled = true
	if res != nil {
		recordUsage(ls, res, named)
		run.Log = logOf(res)
	}
	ls.Outcome = string(agents.OutcomeFailed)
	return nil, why
}

// lastOf says the last step of the agent decoded from out ("" before the
// first): a tool's result says which call it answers, when one was seen.
func lastOf(out *live.Output) string {
	l, ok := out.LastStep()
	if !ok {
		return ""
	}
	if c, ok := out.LastCall(); ok && l.Kind == "tool_result" && (l.Tool == "" || l.Tool == c.Tool) {
		return "the result of " + lastStep(c)
	}
	return lastStep(l)
}

// lastStep says a step of the agent in a few words, for the thread: "a
// call of Bash `go test ./...`", "an edit of `main.go`", "the answer
// `…`". The words are the agent's, redacted by the live output and
// untrusted: its texts go into code spans (no link nor image renders
// there) and a tool's name keeps only the letters of a name.
func lastStep(l live.Line) string {
	tool := toolName(l.Tool)
	switch l.Kind {
	case "tool_call":
		if a := callArg(l.Args); a != "" {
			return fmt.Sprintf("a call of %s %s", tool, code(a))
		}
		return "a call of " + tool
	case "tool_result":
		if l.Failed {
			return "a failed result of " + tool
		}
		return "a result of " + tool
	case "edit":
		return "an edit of " + code(l.Path)
	case "assistant":
		return "the answer " + code(l.Text)
	}
	return code(l.Text)
}

// toolName is a tool's name as the thread shows it: letters, digits and
// ._- only, at most 40 of them; "a tool" when none is left.
func toolName(name string) string {
	kept := strings.Map(func(r rune) rune {
		if r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-", r)) {
			return r
		}
		return -1
	}, name)
	if kept == "" {
		return "a tool"
	}
	return clipWords(kept, 40)
}

// callArg is what shows a call best: the command, file or pattern among its
// arguments, else the arguments as they are.
func callArg(args string) string {
	var m map[string]any
	if json.Unmarshal([]byte(args), &m) == nil {
		for _, k := range []string{"command", "cmd", "file_path", "filePath", "path", "pattern", "query", "url"} {
			switch v := m[k].(type) {
			case string:
				return v
			case []any: // codex: ["bash","-lc","go test ./..."]
				if len(v) > 0 {
					if s, ok := v[len(v)-1].(string); ok {
						return s
					}
				}
			}
		}
	}
	return args
}

// code quotes s as inline code, on one line, clipped.
func code(s string) string {
	return "`" + strings.ReplaceAll(clipWords(s, 80), "`", "'") + "`"
}

// clipWords is s on one line, at most n runes.
func clipWords(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
