package codex

import (
	"testing"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/agents/internal/clitest"
	"github.com/alchemic-studio/alfred/agents/mockllm"
)

// recording is the recorded session in testdata/transcript.
const recording = "session"

// patchCommand is the shell command the mock model has codex run: an
// apply_patch, which codex runs as a patch and records as a FileChange.
const patchCommand = "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: notes.txt\n+one\n+two\n+three\n*** End Patch\nEOF\n"

// TestRealTranscript records a real session, fresh then resumed, in which
// the mock model has codex run apply_patch in a shell command (a new file)
// for the first prompt, and reads it back. Under -record it keeps the
// session in testdata/transcript.
func TestRealTranscript(t *testing.T) {
	m := clitest.Real(t, CLI{}, mockllm.Options{Reply: "done", Shell: patchCommand}, onMock)
	clitest.Transcript{Mocked: m}.RecordAndCheck(t, CLI{}, clitest.TranscriptCase{Name: recording,
		Kinds: []agents.StepKind{agents.StepPrompt, agents.StepToolCall, agents.StepEdit, agents.StepToolResult,
			agents.StepAssistant, agents.StepPrompt, agents.StepAssistant},
		Text: func(string) bool { return true },
		How:  "The mock model (Options.Shell) has the CLI run, with exec_command, a shell command that is an apply_patch adding notes.txt, for the first prompt; codex applies it as a patch (a FileChange)."})
}

// TestTranscript reads the recorded session (golden steps) and checks the
// reader's tolerance of unknown entries, unreadable and torn lines, and a
// missing session.
func TestTranscript(t *testing.T) {
	clitest.GoldenTranscript(t, CLI{}, recording)
	clitest.Tolerance{Reader: CLI{}, Name: recording, File: "*/*/*/rollout-*.jsonl",
		Unknown: `{"timestamp":"2026-12-02T05:00:00.000Z","type":"mystery_line","payload":{}}`}.Check(t)
}

// TestToolOutput: the header codex puts before a command's output is left
// out, and a non-zero exit code marks the result failed.
func TestToolOutput(t *testing.T) {
	for _, tt := range []struct {
		name, raw, want string
		failed          bool
	}{
		{"exec_command", `"Chunk ID: af8d09\nWall time: 0.0000 seconds\nProcess exited with code 0\nOriginal token count: 4\nOutput:\none\ntwo\n"`, "one\ntwo\n", false},
		{"failed", `"Chunk ID: 1\nWall time: 0.1 seconds\nProcess exited with code 2\nOutput:\nno such file\n"`, "no such file\n", true},
		{"nested apply_patch", `"Wall time: 0.0000 seconds\nOutput:\nExit code: 0\nWall time: 0 seconds\nOutput:\nSuccess.\n"`, "Success.\n", false},
		{"output naming Output:", `"Exit code: 0\nOutput:\nOutput:\nkept\n"`, "Output:\nkept\n", false},
		{"plain", `"just text"`, "just text", false},
		{"object", `{"content":"bad","success":false}`, "bad", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, failed := output([]byte(tt.raw))
			if got != tt.want || failed != tt.failed {
				t.Errorf("output(%s) = %q, %v; want %q, %v", tt.raw, got, failed, tt.want, tt.failed)
			}
		})
	}
}

// FuzzParseRollout: no rollout makes the parser panic.
func FuzzParseRollout(f *testing.F) {
	dir, _ := clitest.RecordedTranscript(f, recording)
	clitest.SeedLines(f, dir)
	f.Fuzz(func(t *testing.T, data []byte) { parseRollout(data) })
}
