package claudecode

import (
	"testing"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/agents/internal/clitest"
	"github.com/alchemic-studio/alfred/agents/mockllm"
)

// recording is the recorded session in testdata/transcript.
const recording = "session"

// TestRealTranscript records a real session, fresh then resumed, in which
// the mock model has Claude Code run a command (Bash) and write a file
// (Write) for the first prompt and write another for the second, and reads
// it back. Under -record it keeps the session in testdata/transcript.
func TestRealTranscript(t *testing.T) {
	dir := clitest.Workspace(t)
	m := clitest.Real(t, CLI{}, mockllm.Options{Reply: "done", Shell: clitest.TranscriptShell, WriteDir: dir}, onMock)
	clitest.Transcript{Mocked: m, Dir: dir}.RecordAndCheck(t, CLI{}, clitest.TranscriptCase{Name: recording,
		Kinds: []agents.StepKind{agents.StepPrompt, agents.StepToolCall, agents.StepToolResult,
			agents.StepToolCall, agents.StepToolResult, agents.StepEdit, agents.StepAssistant, agents.StepPrompt,
			agents.StepEdit, agents.StepAssistant},
		Text: func(string) bool { return true },
		How:  "The mock model (Options.Shell and WriteDir) has the CLI run a command with Bash and write a file with Write for the first prompt, and write another file for the second."})
}

// TestTranscript reads the recorded session (golden steps) and checks the
// reader's tolerance of unknown entries, unreadable and torn lines, and a
// missing session.
func TestTranscript(t *testing.T) {
	clitest.GoldenTranscript(t, CLI{}, recording)
	clitest.Tolerance{Reader: CLI{}, Name: recording, File: "*/*.jsonl",
		Unknown: `{"type":"mystery-entry","timestamp":"2026-12-02T05:00:00.000Z","sessionId":"x"}`}.Check(t)
}

// FuzzParseTranscript: no transcript makes the parser panic.
func FuzzParseTranscript(f *testing.F) {
	dir, _ := clitest.RecordedTranscript(f, recording)
	clitest.SeedLines(f, dir)
	f.Fuzz(func(t *testing.T, data []byte) { parseTranscript(data) })
}
