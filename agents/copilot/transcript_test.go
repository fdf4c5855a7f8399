package copilot

import (
	"testing"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/agents/internal/clitest"
	"github.com/alchemic-studio/alfred/agents/mockllm"
)

// recording is the recorded session in testdata/transcript.
const recording = "session"

// TestRealTranscript records a real session, fresh then resumed, in which
// the mock model has Copilot create a file (create) and run a command
// (bash) for the first prompt, and reads it back. Under -record it keeps
// the session in testdata/transcript.
func TestRealTranscript(t *testing.T) {
	dir := clitest.Workspace(t)
	m := clitest.Real(t, CLI{}, mockllm.Options{Reply: "done", Shell: clitest.TranscriptShell}, nil)
	clitest.WithEdit(t, &m, clitest.Edit{Tool: "create", Args: map[string]any{"path": dir + "/notes.txt", "file_text": "one\ntwo\nthree\n"}})
	onMock(t)(&m)
	clitest.Transcript{Mocked: m, Dir: dir}.RecordAndCheck(t, CLI{}, clitest.TranscriptCase{Name: recording,
		Kinds: []agents.StepKind{agents.StepPrompt, agents.StepToolCall, agents.StepToolResult, agents.StepEdit,
			agents.StepToolCall, agents.StepToolResult, agents.StepAssistant, agents.StepPrompt, agents.StepAssistant},
		Text: func(string) bool { return true },
		How:  "For the first prompt the model (clitest.WithEdit in front of the mock, then the mock's Options.Shell) has the CLI create notes.txt with its create tool, then run a command with bash."})
}

// TestTranscript reads the recorded session (golden steps) and checks the
// reader's tolerance of unknown entries, unreadable and torn lines, and a
// missing session.
func TestTranscript(t *testing.T) {
	clitest.GoldenTranscript(t, CLI{}, recording)
	clitest.Tolerance{Reader: CLI{}, Name: recording, File: "*/events.jsonl",
		Unknown: `{"type":"mystery.event","data":{},"id":"x","timestamp":"2026-12-02T05:00:00.000Z","parentId":null}`}.Check(t)
}

// FuzzParseEvents: no events file makes the parser panic.
func FuzzParseEvents(f *testing.F) {
	dir, _ := clitest.RecordedTranscript(f, recording)
	clitest.SeedLines(f, dir)
	f.Fuzz(func(t *testing.T, data []byte) { parseEvents(data) })
}
