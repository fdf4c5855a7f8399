// Package live keeps the output of a run while it goes: a bounded buffer of
// complete, redacted lines that any number of readers follow without ever
// holding up the writer, closed with the run's end. The engine feeds it from
// the sandbox's Stdout and Stderr; the run page streams it, and the engine's
// stall watchdog asks it when the process last wrote (LastWrite) and what the
// agent last did (LastStep).
//
// Each kept line is typed (Line): a line of the standard error is KindStderr;
// a line of the standard output is decoded by the run's Decoder, when it has
// one, into the steps of the agent's event stream (assistant text, tool
// calls, results, edits), and is KindText when it is no event (or there is
// no decoder). Raw events are never kept: a reader gets steps or plain text.
//
// Lines are redacted whole, so a secret split across two writes is still
// hidden: a partial last line waits for its end. A decoded line is redacted
// twice: the raw line before it is decoded, and every field of its steps
// after (a secret escaped in the JSON shows unescaped once decoded; JSON
// arguments are redacted string by string). A line that grows past MaxLine
// is cut, at a place no secret straddles; on a decoded stream, an event
// longer than MaxEventLine is dropped, with a note. Only a secret that itself
// holds a line break can show, split over two lines.
package live

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/alchemic-studio/alfred/internal/redact"
)

// DefaultMaxBytes bounds what an Output keeps when New is given no bound.
const DefaultMaxBytes = 1 << 20

// MaxLine is the longest line kept whole; a longer one is cut into pieces.
const MaxLine = 64 << 10

// MaxEventLine is the longest line of a decoded stream read as one event
// (a tool result may carry a whole file); a longer one is dropped with a
// note, never shown as pieces of raw JSON.
const MaxEventLine = 4 << 20

// lineOverhead is what each kept line counts against the bound beside its
// text, so that many short lines are bounded too.
const lineOverhead = 32

// Kinds of lines beside the steps of a decoded stream (whose kinds are the
// agents' step kinds: assistant, tool_call, tool_result, edit, other).
const (
	KindText   = "text"   // a line of the standard output that is no event
	KindStderr = "stderr" // a line of the standard error
	KindNote   = "note"   // what the buffer says itself (an event too long to show)
)

// Line is one kept line: plain text, or one step the agent took.
type Line struct {
	Kind   string `json:"kind"`
	Text   string `json:"text,omitempty"`
	Tool   string `json:"tool,omitempty"`
	Args   string `json:"args,omitempty"`
	Path   string `json:"path,omitempty"`
	Failed bool   `json:"failed,omitempty"`
	// Partial: an answer's fragment that goes on the answer before it.
	Partial bool `json:"partial,omitempty"`
}

// stepKinds are the kinds of the agents' steps (agents.StepKind); a
// decoded step of any other kind is kept as "other".
var stepKinds = []string{"prompt", "assistant", "tool_call", "tool_result", "edit", "other"}

// Step tells whether the line is a step of the agent (not text, an error
// line or a note).
func (l Line) Step() bool { return slices.Contains(stepKinds, l.Kind) }

func (l Line) size() int { return len(l.Text) + len(l.Tool) + len(l.Args) + len(l.Path) + lineOverhead }

// Decoder turns one complete line of the standard output into the steps
// it shows; ok is false when the line is no event of the stream (it is
// kept as KindText). It must never block.
type Decoder func(line []byte) (steps []Line, ok bool)

// End is how the run ended.
type End struct {
	Status  string `json:"status"`
	Outcome string `json:"outcome,omitempty"`
}

// Output is the live output of one run. Safe for concurrent use.
type Output struct {
	secrets  []string // the values hidden, long enough to hide
	longest  int      // length of the longest of them
	maxBytes int
	now      func() time.Time // stamps lastWrite; time.Now

	lastWrite atomic.Int64 // unix nanos of the last write, 0 before the first

	mu       sync.Mutex
	decode   Decoder       // nil: every stdout line is text
	lines    []Line        // the tail kept
	first    int           // index of lines[0] among every line written
	size     int           // what lines count against maxBytes
	lastStep *Line         // the last step kept, even when dropped since
	lastCall *Line         // the last tool call kept, even when dropped since
	end      *End          // set once by Close
	changed  chan struct{} // closed and replaced at every change
	stdout   stream
	stderr   stream
}

// New returns an empty Output that hides secrets and keeps at most about
// maxBytes of the newest lines (0: DefaultMaxBytes).
func New(secrets []string, maxBytes int) *Output {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	o := &Output{maxBytes: maxBytes, now: time.Now, changed: make(chan struct{})}
	o.addSecrets(secrets)
	o.stdout.o, o.stderr.o = o, o
	o.stderr.kind = KindStderr
	return o
}

// AddSecrets hides more values from the lines written from now on (a run's
// own secrets, known once it starts, such as its model gateway token).
func (o *Output) AddSecrets(secrets ...string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.addSecrets(secrets)
}

func (o *Output) addSecrets(secrets []string) {
	for _, s := range secrets {
		if len(s) >= redact.MinLen {
			o.secrets = append(o.secrets, s)
			o.longest = max(o.longest, len(s))
		}
	}
}

// Decode has the standard output's lines written from now on decoded by d
// (the run's CLI's event stream); nil: kept as text.
func (o *Output) Decode(d Decoder) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.decode = d
}

// Stdout is the writer of the process's standard output.
func (o *Output) Stdout() io.Writer { return &o.stdout }

// Stderr is the writer of the process's standard error.
func (o *Output) Stderr() io.Writer { return &o.stderr }

// LastWrite is when the process last wrote to its standard output or error
// (a partial line counts; a write after Close does not); zero before its
// first write. It takes no lock: a watchdog may ask it as often as it likes.
func (o *Output) LastWrite() time.Time {
	n := o.lastWrite.Load()
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// LastStep is the last step of the agent decoded from its output (redacted),
// even when the bound has dropped it since; false before the first.
func (o *Output) LastStep() (Line, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.lastStep == nil {
		return Line{}, false
	}
	return *o.lastStep, true
}

// LastCall is the last tool call of the agent decoded from its output
// (redacted): what a last step that is a tool's result answers.
func (o *Output) LastCall() (Line, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.lastCall == nil {
		return Line{}, false
	}
	return *o.lastCall, true
}

// Close ends the output with how the run ended: the partial lines left are
// kept, and readers learn the end. Writes after Close are dropped; a second
// Close changes nothing.
func (o *Output) Close(end End) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.end != nil {
		return
	}
	for _, s := range []*stream{&o.stdout, &o.stderr} {
		if len(s.partial) > 0 && !s.skipping {
			s.line(s.partial)
		}
		s.partial = nil
	}
	o.end = &end
	o.notify()
}

// Snapshot is what a reader gets from Read.
type Snapshot struct {
	// Lines are the lines kept from the index asked for on.
	Lines []Line
	// Skipped counts the lines asked for that were dropped to keep the bound.
	Skipped int
	// Next is the index to read from next time.
	Next int
	// End is how the run ended, once it has: no line follows Lines then.
	End *End
	// Changed is closed when there is more to read.
	Changed <-chan struct{}
}

// Read returns the lines from index from (0 is the first line written) and
// a channel closed at the next change. It never waits.
func (o *Output) Read(from int) Snapshot {
	o.mu.Lock()
	defer o.mu.Unlock()
	total := o.first + len(o.lines)
	from = min(max(from, 0), total)
	snap := Snapshot{Next: total, End: o.end, Changed: o.changed}
	if from < o.first {
		snap.Skipped, from = o.first-from, o.first
	}
	snap.Lines = slices.Clone(o.lines[from-o.first:])
	return snap
}

// text is a plain line as kept: redacted, a carriage return starting it
// over as on a terminal, at most MaxLine bytes (a line of a decoded stream
// that is no event may be longer: it was read whole, to be decoded).
func (o *Output) text(raw []byte) string {
	line := redact.Secrets(string(raw), o.secrets)
	line = strings.TrimRight(line, "\r")
	if i := strings.LastIndexByte(line, '\r'); i >= 0 {
		line = line[i+1:]
	}
	if len(line) > MaxLine {
		n := MaxLine
		for n > 0 && !utf8.RuneStart(line[n]) {
			n--
		}
		line = line[:n] + " [cut]"
	}
	return line
}

// steps decodes a stdout line with the decoder, redacting the raw line
// before and every field after; false when it is no event. The caller
// holds mu.
func (o *Output) steps(raw []byte) ([]Line, bool) {
	if o.decode == nil {
		return nil, false
	}
	steps, ok := o.decode([]byte(redact.Secrets(string(raw), o.secrets)))
	if !ok {
		return nil, false
	}
	for i := range steps {
		s := &steps[i]
		s.Text = redact.Secrets(s.Text, o.secrets)
		s.Tool = redact.Secrets(s.Tool, o.secrets)
		s.Path = redact.Secrets(s.Path, o.secrets)
		s.Args = redactJSON(s.Args, o.secrets)
		if !s.Step() {
			s.Kind = "other"
		}
	}
	return steps, true
}

// redactJSON hides secrets in JSON text string by string (a secret written
// with escapes is found once decoded), and in the text itself when it is
// not JSON.
func redactJSON(text string, secrets []string) string {
	if text == "" || len(secrets) == 0 {
		return text
	}
	var v any
	if json.Unmarshal([]byte(text), &v) != nil {
		return redact.Secrets(text, secrets)
	}
	v = redactValue(v, secrets)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return redact.Secrets(text, secrets)
	}
	return redact.Secrets(strings.TrimSuffix(b.String(), "\n"), secrets)
}

func redactValue(v any, secrets []string) any {
	switch x := v.(type) {
	case string:
		return redact.Secrets(x, secrets)
	case []any:
		for i := range x {
			x[i] = redactValue(x[i], secrets)
		}
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[redact.Secrets(k, secrets)] = redactValue(e, secrets)
		}
		return out
	}
	return v
}

// keep adds one line and drops the oldest past the bound. The caller holds
// mu.
func (o *Output) keep(l Line) {
	if l.Step() {
		last := l
		o.lastStep = &last
		if l.Kind == "tool_call" {
			o.lastCall = &last
		}
	}
	o.lines = append(o.lines, l)
	o.size += l.size()
	for o.size > o.maxBytes && len(o.lines) > 1 {
		o.size -= o.lines[0].size()
		o.lines[0] = Line{}
		o.lines = o.lines[1:]
		o.first++
	}
}

// notify wakes the readers. The caller holds mu.
func (o *Output) notify() {
	close(o.changed)
	o.changed = make(chan struct{})
}

// stream is one of the process's outputs: it holds the partial last line.
type stream struct {
	o        *Output
	kind     string // KindStderr; "" for the standard output
	partial  []byte
	skipping bool // an event too long to show is being dropped up to its end
}

// line keeps one complete line of the stream. The caller holds mu.
func (s *stream) line(raw []byte) {
	o := s.o
	if s.kind == "" {
		if steps, ok := o.steps(raw); ok {
			for _, st := range steps {
				o.keep(st)
			}
			return
		}
	}
	kind := s.kind
	if kind == "" {
		kind = KindText
	}
	o.keep(Line{Kind: kind, Text: o.text(raw)})
}

// Write keeps the complete lines of p and holds back the partial last one.
// It never fails and never waits on a reader.
func (s *stream) Write(p []byte) (int, error) {
	o := s.o
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.end != nil {
		return len(p), nil
	}
	n := len(p)
	if n > 0 {
		o.lastWrite.Store(o.now().UnixNano())
	}
	added := false
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk, p = p[:i], p[i+1:]
		} else {
			p = nil
		}
		if !s.skipping {
			s.partial = append(s.partial, chunk...)
		}
		if i >= 0 {
			if !s.skipping {
				s.line(s.partial)
				added = true
			}
			s.partial, s.skipping = s.partial[:0], false
		}
		added = s.tooLong() || added
	}
	if added {
		s.partial = bytes.Clone(s.partial) // let go of what was read
		o.notify()
	}
	return n, nil
}

// tooLong deals with a partial line past its bound: on a decoded stream an
// event too long to show is dropped with a note, elsewhere the line is cut
// where no secret straddles. True when a line was kept. The caller holds mu.
func (s *stream) tooLong() bool {
	o := s.o
	if s.kind == "" && o.decode != nil {
		if len(s.partial) <= MaxEventLine {
			return false
		}
		o.keep(Line{Kind: KindNote, Text: fmt.Sprintf("[a line over %d MiB not shown]", MaxEventLine>>20)})
		s.partial, s.skipping = s.partial[:0], true
		return true
	}
	if len(s.partial) <= MaxLine {
		return false
	}
	if c := o.safeCut(string(s.partial)); c > 0 {
		s.line(s.partial[:c])
		s.partial = append(s.partial[:0], s.partial[c:]...)
		return true
	}
	return false
}

// safeCut is where a long partial line may be cut: every secret that starts
// before it ends before it, and what follows it is too short to hold the
// start of a secret that is not complete yet. 0 means not yet.
func (o *Output) safeCut(s string) int {
	c := len(s) - max(o.longest-1, 0)
	for moved := true; moved && c > 0; {
		moved = false
		for _, secret := range o.secrets {
			for i := 0; i < c; {
				j := strings.Index(s[i:], secret)
				if j < 0 || i+j >= c {
					break
				}
				if end := i + j + len(secret); end > c {
					c, moved = end, true
				}
				i += j + 1
			}
		}
	}
	return max(c, 0)
}
