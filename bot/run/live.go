package run

import (
	"bufio"
	"bytes"
	"strings"

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

// readable is what the CLI printed on stdout as the run's record keeps it
// for a person: each event of its stream as the step it is, one line each
// ("call Bash: {...}"), other lines as they are; raw events are never kept.
func readable(a agents.Adapter, stdout []byte) string {
	d, ok := a.(streamDecoder)
	if !ok {
		return string(stdout)
	}
	var b strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(stdout))
	sc.Buffer(make([]byte, 64<<10), live.MaxEventLine)
	for sc.Scan() {
		steps, ok := d.DecodeLine(sc.Bytes())
		if !ok {
			b.Write(sc.Bytes())
			b.WriteByte('\n')
			continue
		}
		for _, s := range steps {
			b.WriteString(stepLine(s))
			b.WriteByte('\n')
		}
	}
	if sc.Err() != nil {
		b.WriteString("(the rest of the output: a line too long to read)\n")
	}
	return b.String()
}

// stepLine is one step of the agent as one line of text.
func stepLine(s agents.Step) string {
	var head string
	switch s.Kind {
	case agents.StepToolCall:
		head = "call " + s.Tool
		if s.Args != "" {
			head += " " + s.Args
		}
		return head
	case agents.StepToolResult:
		head = "result"
		if s.Failed {
			head = "failed result"
		}
		if s.Tool != "" {
			head += " of " + s.Tool
		}
	case agents.StepEdit:
		return "edited " + s.Path
	default:
		head = string(s.Kind)
	}
	if s.Text == "" {
		return head
	}
	return head + ": " + strings.ReplaceAll(s.Text, "\n", "\n  ")
}
