package run

import (
	"errors"
	"fmt"
	"iter"
	"slices"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/bot/lifecycle"
	"github.com/alchemic-studio/alfred/state"
)

// A run's steps: after the adapter call, the run reads the session's
// transcript from the mailbox's session folder and keeps on the run the
// steps the run added to it. The previous run of the same native session
// recorded the transcript's length when it ended (RunTranscript.Total):
// this run's steps start there. A fresh session (first run, fallback,
// another adapter) has a transcript of its own and starts at 0.

// keepSteps records the run's steps of its session's transcript on run,
// redacted with redactRun and bounded, when the run had a named session
// with a native id and the adapter reads transcripts. A transcript that
// cannot be read leaves a note on the run, never a failure. Nothing is
// read when the engine is shutting down.
func (r *Runner) keepSteps(mb *state.Mailbox, run *state.Run, adapter agents.Adapter, ls *state.LLMSession, redactRun func(string) string) {
	if r.Stopping() || ls == nil || ls.SessionName == nil || ls.NativeSessionID == nil {
		return
	}
	native := *ls.NativeSessionID
	steps, err := ReadTranscript(adapter, r.Sessions.Dir(*mb, adapter.ID()), native)
	if errors.Is(err, agents.ErrNoTranscriptReader) {
		return
	}
	if err != nil {
		r.Log.Warn("read transcript", "mailbox", mb.ID, "run", run.ID, "adapter", adapter.ID(), "session", native, "err", err)
		run.Transcript = &state.RunTranscript{Note: lifecycle.Clip(redactRun(err.Error()), 200)}
		return
	}
	from, note := r.stepsFrom(mb.ID, run.ID, adapter.ID(), native, steps)
	run.Steps = KeptSteps(steps[from:], redactRun)
	run.Transcript = &state.RunTranscript{From: from, Total: len(steps), Dropped: len(steps) - from - len(run.Steps), Note: note}
}

// ReadTranscript reads a session's transcript with the adapter: itself
// when it reads transcripts (a wrapper), else its CLI's reader.
func ReadTranscript(a agents.Adapter, dir, native string) ([]agents.Step, error) {
	if r, ok := a.(agents.TranscriptReader); ok {
		steps, err := r.ReadTranscript(dir, native)
		if err != nil {
			return nil, fmt.Errorf("adapter %s: %w", a.ID(), err)
		}
		return steps, nil
	}
	return agents.ReadTranscript(a, dir, native)
}

// stepsFrom is where the run's steps start in the transcript of session
// native: where the latest earlier run of that session left it. When that
// run left no count (its transcript could not be read), or the transcript
// is now shorter (the CLI compacted it), the run's steps start at its
// last prompt, and note says so.
func (r *Runner) stepsFrom(mailboxID, runID, adapterID, native string, steps []agents.Step) (int, string) {
	prev, found := r.previousInSession(mailboxID, runID, adapterID, native)
	switch {
	case !found:
		return 0, ""
	case counted(prev) && prev.Transcript.Total <= len(steps):
		return prev.Transcript.Total, ""
	case counted(prev):
		return lastPrompt(steps), "the transcript is shorter than the previous run left it: steps from this run's prompt"
	}
	return lastPrompt(steps), "the previous run of the session left no count: steps from this run's prompt"
}

// counted: the run read its transcript and left its length.
func counted(r state.Run) bool { return r.Transcript != nil && r.Transcript.Total > 0 }

// previousInSession is the latest run of the mailbox before runID whose
// llm session has native id native with adapterID.
func (r *Runner) previousInSession(mailboxID, runID, adapterID, native string) (state.Run, bool) {
	for run, sessions := range r.runsBefore(mailboxID, runID, "the transcript") {
		for _, s := range sessions {
			if s.AdapterID == adapterID && s.NativeSessionID != nil && *s.NativeSessionID == native {
				return run, true
			}
		}
	}
	return state.Run{}, false
}

// runsBefore yields the mailbox's runs before runID (all of them when it is
// not among them), newest first, each with its llm sessions; what says in
// the log what they were read for when the runs cannot be read.
func (r *Runner) runsBefore(mailboxID, runID, what string) iter.Seq2[state.Run, []state.LLMSession] {
	return func(yield func(state.Run, []state.LLMSession) bool) {
		runs, err := r.Store.Runs(mailboxID)
		if err != nil {
			r.Log.Warn("read runs for "+what, "mailbox", mailboxID, "run", runID, "err", err)
		}
		end := len(runs)
		if i := slices.IndexFunc(runs, func(run state.Run) bool { return run.ID == runID }); i >= 0 {
			end = i
		}
		for i := end - 1; i >= 0; i-- {
			run, sessions, _ := r.Store.RunWithSessions(runs[i].ID)
			if !yield(run, sessions) {
				return
			}
		}
	}
}

// lastPrompt is the index of the transcript's last prompt, 0 when it has
// none.
func lastPrompt(steps []agents.Step) int {
	for i := len(steps) - 1; i >= 0; i-- {
		if steps[i].Kind == agents.StepPrompt {
			return i
		}
	}
	return 0
}

// KeptSteps are the first steps within state.MaxRunSteps and
// state.MaxRunStepBytes, as records keep them, every text redacted.
func KeptSteps(steps []agents.Step, redactRun func(string) string) []state.RunStep {
	var out []state.RunStep
	size := 0
	for _, s := range steps {
		rs := state.RunStep{Kind: string(s.Kind), At: s.At, Text: redactRun(s.Text), Tool: s.Tool, CallID: s.CallID,
			Args: redactRun(s.Args), Path: redactRun(s.Path), Failed: s.Failed}
		if size += rs.Size(); len(out) == state.MaxRunSteps || size > state.MaxRunStepBytes {
			break
		}
		out = append(out, rs)
	}
	return out
}
