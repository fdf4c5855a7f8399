package agents

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/alchemic-studio/alfred/internal/safefs"
)

// Transcripts: what a resumable CLI kept of a session, read back from the
// mailbox's session folder into one list of steps, the same for every CLI.
// A CLI package implements TranscriptReader next to its CLI; the engine
// calls ReadTranscript with the session folder on the host (the one it
// mounts at Descriptor.SessionStatePath) and the native session id recorded
// on the run. Readers never fail on what a transcript holds: an entry they
// do not know is a StepOther, and a last line torn by a killed CLI is
// dropped (TranscriptLines). Context a CLI injects into the conversation
// (environment, skills, instructions) and its bookkeeping entries give no
// step. Only a missing or unreadable transcript is an error
// (ErrNoTranscript when there is none).
//
// The session folder is the sandbox's: what is in it is untrusted data.
// Readers read it only through SessionFiles (internal/safefs): regular
// files reached without a symlink, inside the folder, at most
// MaxTranscriptBytes for one session, never blocking; a FIFO, a device, a
// symlink (to /dev/zero, to a host file, to another folder), a file too
// large is an error whose text is one sentence for the run's note ("session
// file x/abc.jsonl is a FIFO, not a regular file: not read"), returned at
// once, with nothing read.

// StepKind is what one step of a transcript is.
type StepKind string

// Step kinds.
const (
	StepPrompt     StepKind = "prompt"      // a prompt the CLI was given
	StepAssistant  StepKind = "assistant"   // text the model answered
	StepToolCall   StepKind = "tool_call"   // a tool the model called: Tool, Args
	StepToolResult StepKind = "tool_result" // what the call gave back, summarized
	StepEdit       StepKind = "edit"        // a file a tool wrote or changed: Path
	StepOther      StepKind = "other"       // anything else kept: an entry the reader does not know, an unreadable one, a CLI's error note
)

// Step is one normalized step of a session transcript.
type Step struct {
	Kind StepKind `json:"kind"`
	// At is when the CLI recorded it; zero when the entry has no time.
	At time.Time `json:"at,omitzero"`
	// Text is the prompt or answer (clipped to MaxTextBytes), the tool
	// result's summary (Summary), or for StepOther what the entry was.
	Text string `json:"text,omitempty"`
	// Tool names the tool of a call, of its result and of its edits.
	Tool string `json:"tool,omitempty"`
	// CallID ties a call to its result and edits, when the CLI records one.
	CallID string `json:"call_id,omitempty"`
	// Args are the call's arguments as compact JSON, clipped to MaxArgsBytes.
	Args string `json:"args,omitempty"`
	// Path is the file an edit wrote, as the CLI saw it (inside the
	// sandbox), clipped to MaxPathBytes.
	Path string `json:"path,omitempty"`
	// Failed marks a tool result the CLI recorded as an error.
	Failed bool `json:"failed,omitempty"`
	// Partial marks an answer's fragment that goes on the text of the
	// answer before it (a stream's delta); only stream decoders set it.
	Partial bool `json:"partial,omitempty"`
}

// Bounds of the text a step keeps.
const (
	MaxTextBytes   = 8 << 10 // a prompt or an answer
	MaxArgsBytes   = 1 << 10 // a call's arguments
	MaxResultBytes = 1 << 10 // a tool result summary
	MaxResultLines = 10      // a tool result summary
	MaxPathBytes   = 4 << 10 // the file of an edit (PATH_MAX)
	maxNameBytes   = 200     // a tool's name, a call's id, what an other step is
)

const (
	clippedMarker   = "…"
	unreadableEntry = "unreadable entry"
)

// TranscriptReader is what a CLI implements when it can read its sessions
// back. ReadTranscript reads session nativeSessionID from stateDir, the
// host folder mounted at Descriptor.SessionStatePath, in the order the CLI
// recorded it. The error wraps ErrNoTranscript when stateDir holds no
// transcript of that session.
type TranscriptReader interface {
	ReadTranscript(stateDir, nativeSessionID string) ([]Step, error)
}

// ErrNoTranscript: the session folder holds no transcript of the session.
var ErrNoTranscript = errors.New("no transcript of the session")

// MaxTranscriptBytes bounds what a transcript reader reads of one session:
// the files it reads from the session folder, together (one file, for
// most CLIs). 64 MiB holds a long session many times over (the recorded
// two-prompt sessions are tens of KiB); a transcript over it is not read,
// and the run's note says so.
const MaxTranscriptBytes = 64 << 20

// SessionFiles reads the files of one session folder for a transcript
// reader, as untrusted data (internal/safefs), within one budget of
// MaxTranscriptBytes for all it reads.
type SessionFiles struct {
	dir  string
	left int64
}

// NewSessionFiles reads the session folder stateDir.
func NewSessionFiles(stateDir string) *SessionFiles {
	return &SessionFiles{dir: stateDir, left: MaxTranscriptBytes}
}

// Read reads the file rel (slash-separated, relative to the folder) when
// it is a regular file reached without a symlink and within the budget.
// The error wraps fs.ErrNotExist when there is no such file; a refusal
// wraps safefs.ErrSymlink, ErrNotRegular, ErrTooLarge or ErrOutside, and
// reads as the run's note: "session file x/abc.jsonl is a FIFO, not a
// regular file: not read".
func (s *SessionFiles) Read(rel string) ([]byte, error) {
	data, err := safefs.ReadFile(s.dir, rel, s.left)
	if errors.Is(err, safefs.ErrTooLarge) && s.left < MaxTranscriptBytes {
		err = &safefs.Error{Path: rel, Reason: "would take the session's files over the " + safefs.Size(MaxTranscriptBytes) + " limit", Err: safefs.ErrTooLarge}
	}
	if refused, ok := errors.AsType[*safefs.Error](err); ok {
		return nil, fmt.Errorf("session file %w: not read", refused)
	}
	if err != nil {
		return nil, fmt.Errorf("read session file: %w", err)
	}
	s.left -= int64(len(data))
	return data, nil
}

// Glob is the entries of the session folder that match pattern
// (safefs.Glob): relative paths, sorted, under real folders only (a
// symlinked folder is not walked), none a folder. A planted FIFO or link
// is among them, for Read to refuse with a note rather than leave the
// transcript silently missing. A folder too large to search is an error
// ("the search for session files */*.jsonl goes through over 10000 folder
// entries, the limit: none read").
func (s *SessionFiles) Glob(pattern string) ([]string, error) {
	matches, err := safefs.Glob(s.dir, pattern)
	if refused, ok := errors.AsType[*safefs.Error](err); ok {
		return nil, fmt.Errorf("the search for session files %w: none read", refused)
	}
	if err != nil {
		return nil, fmt.Errorf("search session files: %w", err)
	}
	return matches, nil
}

// ModTime is the modification time of the entry rel itself (a symlink is
// not followed).
func (s *SessionFiles) ModTime(rel string) (time.Time, error) {
	fi, err := safefs.Lstat(s.dir, rel)
	if refused, ok := errors.AsType[*safefs.Error](err); ok {
		return time.Time{}, fmt.Errorf("session file %w: not read", refused)
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("session file: %w", err)
	}
	return fi.ModTime(), nil
}

// ErrNoTranscriptReader: the adapter does not read transcripts.
var ErrNoTranscriptReader = errors.New("the adapter reads no transcripts")

// ReadTranscript reads a session's transcript with a's CLI: stateDir is the
// session folder on the host, id the native session id of the run.
func ReadTranscript(a Adapter, stateDir, id string) ([]Step, error) {
	l, ok := a.(*Local)
	if !ok {
		return nil, fmt.Errorf("adapter %s: %w", a.ID(), ErrNoTranscriptReader)
	}
	r, ok := l.CLI().(TranscriptReader)
	if !ok {
		return nil, fmt.Errorf("adapter %s: %w", a.ID(), ErrNoTranscriptReader)
	}
	if id == "" {
		return nil, fmt.Errorf("adapter %s: read transcript: no session id", a.ID())
	}
	steps, err := r.ReadTranscript(stateDir, id)
	if err != nil {
		return nil, fmt.Errorf("adapter %s: %w", a.ID(), err)
	}
	return steps, nil
}

// TranscriptLines splits a JSON Lines transcript into its non-blank lines.
// A last line that is not valid JSON (a write torn when the CLI was killed)
// is dropped; other lines are returned as they are, for the reader to make
// an UnreadableStep of those it cannot parse.
func TranscriptLines(data []byte) [][]byte {
	var lines [][]byte
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		if line = bytes.TrimSpace(line); len(line) > 0 {
			lines = append(lines, line)
		}
	}
	if n := len(lines); n > 0 && !json.Valid(lines[n-1]) {
		lines = lines[:n-1]
	}
	return lines
}

// UnreadableStep is the step of a line a reader could not parse.
func UnreadableStep() Step { return Step{Kind: StepOther, Text: unreadableEntry} }

// OtherStep is the step of an entry a reader keeps without knowing it:
// what names it (its type) and when.
func OtherStep(what string, at time.Time) Step {
	return Step{Kind: StepOther, Text: Clip(what, 1, maxNameBytes), At: at}
}

// Timed is s recorded at at: a transcript's step made with a stream's
// helper (CallStep, ResultStep, EditStep).
func (s Step) Timed(at time.Time) Step {
	s.At = at
	return s
}

// TextStep is a prompt or an answer, clipped to MaxTextBytes; ok is false
// when text is blank (no step).
func TextStep(kind StepKind, text string, at time.Time) (Step, bool) {
	if strings.TrimSpace(text) == "" {
		return Step{}, false
	}
	return Step{Kind: kind, Text: Clip(text, 0, MaxTextBytes), At: at}, true
}

// Summary is a tool result as a step keeps it: its first MaxResultLines
// lines, at most MaxResultBytes, trailing space trimmed.
func Summary(result string) string {
	return Clip(strings.TrimRight(result, " \t\r\n"), MaxResultLines, MaxResultBytes)
}

// Args are a call's arguments as a step keeps them: compact JSON (a JSON
// string holding JSON is unwrapped, as some CLIs store arguments), clipped
// to MaxArgsBytes.
func Args(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil && json.Valid([]byte(s)) {
		raw = json.RawMessage(s)
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return Clip(string(raw), 0, MaxArgsBytes)
	}
	return Clip(buf.String(), 0, MaxArgsBytes)
}

// Clip keeps the first lines lines of s (all when lines <= 0) and at most
// maxBytes bytes of them, cut on a rune boundary; a clipped text ends with
// "…".
func Clip(s string, lines, maxBytes int) string {
	out, cut := s, false
	if lines > 0 {
		if i := nthNewline(out, lines); i >= 0 && strings.TrimSpace(out[i:]) != "" {
			out, cut = out[:i], true
		}
	}
	if len(out) > maxBytes {
		n := maxBytes
		for n > 0 && !utf8.RuneStart(out[n]) {
			n--
		}
		out, cut = out[:n], true
	}
	if cut {
		out = strings.TrimRight(out, " \t\r\n") + clippedMarker
	}
	return out
}

// nthNewline is the index of the n-th "\n" of s, -1 when s has fewer.
func nthNewline(s string, n int) int {
	off := 0
	for range n {
		i := strings.IndexByte(s[off:], '\n')
		if i < 0 {
			return -1
		}
		off += i + 1
	}
	return off - 1
}

// ParseTime reads an RFC 3339 timestamp; zero when it is not one.
func ParseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}

// UnixMilli is a time in milliseconds since the epoch; zero for 0.
func UnixMilli(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}
