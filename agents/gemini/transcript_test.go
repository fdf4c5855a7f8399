package gemini

import (
	"slices"
	"testing"

	"github.com/alchemic-studio/alfred/agents"
	"github.com/alchemic-studio/alfred/agents/internal/clitest"
	"github.com/alchemic-studio/alfred/agents/mockllm"
)

// recording is the recorded session in testdata/transcript.
const recording = "session"

// TestRealTranscript records a real session, fresh then resumed, in which
// the mock model has Gemini write a file (write_file) and run a command
// (run_shell_command) for the first prompt, and reads it back. Under
// -record it keeps the session in testdata/transcript.
func TestRealTranscript(t *testing.T) {
	dir := clitest.Workspace(t)
	m := clitest.Real(t, CLI{}, mockllm.Options{Reply: "done", Shell: clitest.TranscriptShell}, nil)
	clitest.WithEdit(t, &m, clitest.Edit{Tool: "write_file", Args: map[string]any{"file_path": dir + "/notes.txt", "content": "one\ntwo\nthree\n"}})
	onMock(&m)
	clitest.Transcript{Mocked: m, Dir: dir}.RecordAndCheck(t, CLI{}, clitest.TranscriptCase{Name: recording,
		Kinds: []agents.StepKind{agents.StepPrompt, agents.StepToolCall, agents.StepToolResult, agents.StepEdit,
			agents.StepToolCall, agents.StepToolResult, agents.StepAssistant, agents.StepPrompt, agents.StepAssistant},
		Text: func(string) bool { return true },
		How:  "For the first prompt the model (clitest.WithEdit in front of the mock, then the mock's Options.Shell) has the CLI write notes.txt with write_file, then run a command with run_shell_command."})
}

// TestTranscript reads the recorded session (golden steps) and checks the
// reader's tolerance of unknown entries, unreadable and torn lines, and a
// missing session.
func TestTranscript(t *testing.T) {
	clitest.GoldenTranscript(t, CLI{}, recording)
	clitest.Tolerance{Reader: CLI{}, Name: recording, File: "*/chats/session-*.jsonl",
		Unknown: `{"$mystery":{"x":1}}`}.Check(t)
}

// TestReplay: records replace messages in place, $set replaces the list,
// $rewindTo drops a message and those after it.
func TestReplay(t *testing.T) {
	const head = `{"sessionId":"s1","projectHash":"h","startTime":"2026-12-02T05:00:00.000Z","kind":"main"}` + "\n"
	msg := func(id, typ, text string) string {
		return `{"id":"` + id + `","timestamp":"2026-12-02T05:00:00.000Z","type":"` + typ + `","content":[{"text":"` + text + `"}]}` + "\n"
	}
	for _, tt := range []struct {
		name, log string
		want      []string
	}{
		{"in order", head + msg("a", "user", "hi") + msg("b", "gemini", "yo"), []string{"prompt hi", "assistant yo"}},
		{"replaced in place", head + msg("a", "user", "hi") + msg("b", "gemini", "") + msg("c", "user", "more") + msg("b", "gemini", "yo"),
			[]string{"prompt hi", "assistant yo", "prompt more"}},
		{"set messages", head + msg("a", "user", "hi") + `{"$set":{"messages":[` + msg("x", "user", "new")[:len(msg("x", "user", "new"))-1] + `]}}` + "\n",
			[]string{"prompt new"}},
		{"rewind", head + msg("a", "user", "hi") + msg("b", "gemini", "yo") + msg("c", "user", "more") + `{"$rewindTo":"b"}` + "\n",
			[]string{"prompt hi"}},
		{"rewind to unknown", head + msg("a", "user", "hi") + `{"$rewindTo":"zz"}` + "\n", nil},
		{"unknown message type", head + msg("a", "user", "hi") + msg("b", "mystery", "?"), []string{"prompt hi", "other mystery"}},
		{"calls without toolCalls", head + msg("a", "user", "hi") +
			`{"id":"b","type":"gemini","content":[{"functionCall":{"id":"c1","name":"write_file","args":{"file_path":"/workspace/x"}}}]}` + "\n" +
			`{"id":"c","type":"user","content":[{"functionResponse":{"id":"c1","name":"write_file","response":{"output":"written"}}}]}` + "\n",
			[]string{"prompt hi", "tool_call ", "tool_result written", "edit "}},
		{"injected context", head + msg("a", "user", "<session_context>\\nlinux\\n</session_context>") + msg("b", "info", "note"),
			[]string{"other info: note"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := replay([]byte(tt.log))
			var got []string
			for _, s := range c.steps() {
				got = append(got, string(s.Kind)+" "+s.Text)
			}
			if c.SessionID != "s1" || len(got) != len(tt.want) || !slices.Equal(got, tt.want) {
				t.Errorf("session %q, steps %q, want s1, %q", c.SessionID, got, tt.want)
			}
		})
	}
}

// FuzzReplay: no session file makes the replay panic.
func FuzzReplay(f *testing.F) {
	dir, _ := clitest.RecordedTranscript(f, recording)
	clitest.SeedLines(f, dir)
	f.Fuzz(func(t *testing.T, data []byte) { replay(data).steps() })
}
