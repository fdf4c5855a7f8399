package bot

import (
	"github.com/alchemic-studio/alfred/internal/live"
	"github.com/alchemic-studio/alfred/state"
)

// The live output of a run: each launched run has a live.Output, fed by its
// sandbox's Stdout and Stderr and redacted as the stored output is, that the
// run page follows while the run goes; it is closed with the run's end.

// endInterrupted is the end a follower sees of a run the bot's shutdown
// interrupted: the run starts again at the next start.
var endInterrupted = live.End{Status: "interrupted", Outcome: "Alfred stopped; the run starts again when it is back"}

// Follow returns the live output of a run launched by this engine and not
// ended yet; false for any other run (finished, unknown, or not launched yet).
// A follower keeps reading the output it got after the run has ended, up to
// its end.
func (e *Engine) Follow(runID string) (*live.Output, bool) {
	e.runs.mu.Lock()
	defer e.runs.mu.Unlock()
	if r := e.runs.running[runID]; r != nil && r.out != nil {
		return r.out, true
	}
	return nil, false
}

// newLiveOutput is the live output of a run about to be launched.
func (e *Engine) newLiveOutput() *live.Output { return live.New(e.secrets(), 0) }

// endLive closes a run's live output with the end its record says; it is
// called once the run has recorded its end (or left its record as running,
// when the bot is stopping).
func (e *Engine) endLive(runID string, out *live.Output) {
	if out == nil {
		return
	}
	run, _, err := e.store.RunWithSessions(runID)
	switch {
	case err != nil:
		e.log.Warn("live output: read the run's end", "run", runID, "err", err)
		out.Close(live.End{Status: "unknown", Outcome: "the run's record cannot be read"})
	case run.Status == state.RunQueued || run.Status == state.RunRunning:
		out.Close(endInterrupted)
	default:
		out.Close(live.End{Status: string(run.Status), Outcome: run.Outcome})
	}
}
