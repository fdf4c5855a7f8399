package clitest

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/alchemic-studio/alfred/agents"
)

// DecodedLine is what a stream decoder made of one line of a recorded
// stdout: whether it is an event of the stream, and its steps.
type DecodedLine struct {
	Line  int           `json:"line"` // 1-based
	Event bool          `json:"event"`
	Steps []agents.Step `json:"steps,omitempty"`
}

// CheckStream decodes every non-blank line of each recorded stdout, the file
// dir/<name> or else dir/<name>.stdout, with d, and compares what it made
// with the golden file dir/stream/<name>.golden.json (-update rewrites it
// after a change is checked).
func CheckStream(t *testing.T, d agents.StreamDecoder, dir string, names ...string) {
	t.Helper()
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			out, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				out = Recorded(t, dir, name).Stdout
			}
			var got []DecodedLine
			for i, line := range bytes.Split(out, []byte("\n")) {
				if len(bytes.TrimSpace(line)) == 0 {
					continue
				}
				steps, ok := d.DecodeLine(line)
				got = append(got, DecodedLine{Line: i + 1, Event: ok, Steps: steps})
				checkSteps(t, steps)
			}
			GoldenJSON(t, filepath.Join(dir, "stream", name+".golden.json"), got)
		})
	}
}

// BadLines are lines a CLI may print that are no event of its stream, or
// events it does not know: torn, malformed, of another shape.
var BadLines = []string{
	"", "   ", "plain text from a tool", "{", `{"type":`, `{"type":"assistant","message":{"content":[{"type":"text","text":"cut`,
	"[1,2,3]", "null", "42", `"a string"`, "\xff\xfe not utf-8", `{"type":5}`, `{"type":null}`, `{"type":["x"]}`,
	`{"type":"assistant","message":{"content":"not blocks"}}`, `{"type":"assistant","message":null}`,
	`{"type":"user","message":{"content":[{"type":"tool_result","content":{"weird":true}}]}}`,
	`{"type":"item.completed","item":null}`, `{"type":"tool_use","part":{"state":null}}`,
	`{"type":"assistant.message","data":{"toolRequests":[null,{"name":5}]}}`, `{"role":5,"content":[]}`,
	`{"type":"message","role":"assistant","content":{"x":1}}`,
	strings.Repeat(`{"a":`, 5000) + strings.Repeat("}", 5000),
}

// CheckBadLines runs d on BadLines and on the given lines: it must never
// panic, a line that is not a JSON object is never an event, and the steps
// of the others are well formed and bounded.
func CheckBadLines(t *testing.T, d agents.StreamDecoder, more ...string) {
	t.Helper()
	for _, line := range append(BadLines, more...) {
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("DecodeLine(%.80q) panicked: %v", line, p)
				}
			}()
			steps, ok := d.DecodeLine([]byte(line))
			var obj map[string]any
			if ok && json.Unmarshal([]byte(line), &obj) != nil {
				t.Errorf("DecodeLine(%.80q) is an event, but the line is no JSON object", line)
			}
			checkSteps(t, steps)
		}()
	}
}

// checkSteps: every step has a known kind, valid UTF-8 and bounded fields.
func checkSteps(t *testing.T, steps []agents.Step) {
	t.Helper()
	for _, s := range steps {
		switch s.Kind {
		case agents.StepPrompt, agents.StepAssistant, agents.StepToolCall, agents.StepToolResult, agents.StepEdit, agents.StepOther:
		default:
			t.Errorf("step of kind %q: %+v", s.Kind, s)
		}
		for _, f := range []string{s.Text, s.Tool, s.Args, s.Path} {
			if len(f) > agents.MaxTextBytes+len("…") || !utf8.ValidString(f) {
				t.Errorf("step field of %d bytes, or not UTF-8: %.80q", len(f), f)
			}
		}
	}
}
