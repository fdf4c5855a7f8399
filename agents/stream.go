package agents

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"time"
)

// Streams: what a CLI prints on stdout while it works, one event a line,
// decoded for people into the same Steps as a transcript (assistant text,
// tool calls with their clipped arguments, tool results, edits). The run
// page shows them as they come; the stall watchdog takes a CLI that streams
// as one that shows its progress, and names its last step when it stops it.
//
// A CLI package implements StreamDecoder next to its CLI; Local.DecodeLine
// calls it. Decoders never fail: a line that is not an event of the CLI's
// stream (a log line, a malformed or torn JSON line) is ok=false, shown as
// plain text; an event of the stream that is bookkeeping (init, usage, the
// final result) gives no step, or a short StepOther.

// StreamDecoder is what a CLI implements when its stdout is a stream of
// events. DecodeLine turns one stdout line (without its newline) into the
// steps it shows; ok is false when the line is no event of the stream. It
// must be a pure function of line, and never panic on any input.
type StreamDecoder interface {
	DecodeLine(line []byte) (steps []Step, ok bool)
}

// ProgressReporter is what a CLI implements to say whether its stdout comes
// as it works (true) or only at its end (false). A CLI with a StreamDecoder
// and no ProgressReporter reports progress.
type ProgressReporter interface {
	ReportsProgress() bool
}

// DecodeLine decodes one stdout line of the CLI's stream (StreamDecoder):
// ok is false for a line that is not an event, and for every line of a CLI
// that has no decoder. A decoder that panics is logged and the line is
// plain text: what a CLI prints never stops a run.
func (l *Local) DecodeLine(line []byte) (steps []Step, ok bool) {
	d, has := l.cli.(StreamDecoder)
	if !has {
		return nil, false
	}
	defer func() {
		if p := recover(); p != nil {
			slog.Error("stream decoder panicked: the line is shown as text", "adapter", l.ID(), "panic", p)
			steps, ok = nil, false
		}
	}()
	return d.DecodeLine(line)
}

// ReportsProgress tells whether the CLI prints as it works: a silent stdout
// then means it is stuck (the stall watchdog). True for a CLI with a
// StreamDecoder, unless it says otherwise (ProgressReporter).
func (l *Local) ReportsProgress() bool {
	if p, ok := l.cli.(ProgressReporter); ok {
		return p.ReportsProgress()
	}
	_, ok := l.cli.(StreamDecoder)
	return ok
}

// JSONObject decodes line into v when it is one JSON object; false for
// anything else (blank, text, an array, a torn line). A field of another
// type than v's is left zero, the rest decoded: a CLI that changes the
// shape of one field still streams events. The first step of every decoder.
func JSONObject(line []byte, v any) bool {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return false
	}
	err := json.Unmarshal(line, v)
	if _, typ := errors.AsType[*json.UnmarshalTypeError](err); typ {
		return true
	}
	return err == nil
}

// CallStep is a tool call: the tool's name and its arguments (Args). The
// name and the call id are clipped, as every text a step keeps.
func CallStep(tool, callID string, args json.RawMessage) Step {
	s := Step{Kind: StepToolCall, Tool: Clip(tool, 1, maxNameBytes), CallID: Clip(callID, 1, maxNameBytes)}
	if len(args) > 0 && string(args) != "null" {
		s.Args = Args(args)
	}
	return s
}

// ResultStep is a tool's result, summarized (Summary).
func ResultStep(tool, callID, text string, failed bool) Step {
	return Step{Kind: StepToolResult, Tool: Clip(tool, 1, maxNameBytes), CallID: Clip(callID, 1, maxNameBytes), Text: Summary(text), Failed: failed}
}

// EditStep is a file a tool wrote (Path, clipped to MaxPathBytes).
func EditStep(tool, callID, path string) Step {
	return Step{Kind: StepEdit, Tool: Clip(tool, 1, maxNameBytes), CallID: Clip(callID, 1, maxNameBytes), Path: Clip(path, 1, MaxPathBytes)}
}

// Steps is the steps of text, when it is not blank: a helper for decoders
// that show one text.
func Steps(kind StepKind, text string) []Step {
	if s, ok := TextStep(kind, text, time.Time{}); ok {
		return []Step{s}
	}
	return nil
}

// Note is a short StepOther: what a bookkeeping event says (an error, the
// end of the run).
func Note(text string) []Step {
	return []Step{OtherStep(text, time.Time{})}
}
