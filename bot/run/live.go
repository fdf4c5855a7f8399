package run

import (
	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/internal/live"
)

// The live output of a run shows the steps of the agent as they come: the
// adapter decodes each line its CLI prints on stdout (agents.StreamDecoder,
// through agents.Local.DecodeLine) inside the live output, which redacts
// the raw line before and every field of the steps after, and keeps them
// within its bound (internal/live).

// streamDecoder is an adapter that decodes its CLI's stdout lines into
// steps (agents.Local).
type streamDecoder interface {
	DecodeLine(line []byte) ([]agents.Step, bool)
}

// liveDecoder is the live output's decoder of an adapter's stdout; nil when
// the adapter decodes nothing (every line is text).
func liveDecoder(a agents.Adapter) live.Decoder {
	d, ok := a.(streamDecoder)
	if !ok {
		return nil
	}
	return func(line []byte) ([]live.Line, bool) {
		steps, ok := d.DecodeLine(line)
		if !ok {
			return nil, false
		}
		out := make([]live.Line, 0, len(steps))
		for _, s := range steps {
			out = append(out, liveLine(s))
		}
		return out, true
	}
}

// liveLine is a step as the live output keeps it.
func liveLine(s agents.Step) live.Line {
	return live.Line{Kind: string(s.Kind), Text: s.Text, Tool: s.Tool, Args: s.Args, Path: s.Path, Failed: s.Failed, Partial: s.Partial}
}
