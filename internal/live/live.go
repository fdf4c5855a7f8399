// Package live keeps the output of a run while it goes: a bounded buffer of
// complete, redacted lines that any number of readers follow without ever
// holding up the writer, closed with the run's end. The engine feeds it from
// the sandbox's Stdout and Stderr; the run page streams it, and the engine's
// stall watchdog asks it when the process last wrote (LastWrite).
//
// Lines are redacted whole, so a secret split across two writes is still
// hidden: a partial last line waits for its end. A line that grows past
// MaxLine is cut, at a place no secret straddles. Only a secret that itself
// holds a line break can show, split over two lines.
package live

import (
	"bytes"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/alchemic-studio/alfred/internal/redact"
)

// DefaultMaxBytes bounds what an Output keeps when New is given no bound.
const DefaultMaxBytes = 1 << 20

// MaxLine is the longest line kept whole; a longer one is cut into pieces.
const MaxLine = 64 << 10

// lineOverhead is what each kept line counts against the bound beside its
// text, so that many short lines are bounded too.
const lineOverhead = 32

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

	mu      sync.Mutex
	lines   []string      // the tail kept
	first   int           // index of lines[0] among every line written
	size    int           // what lines count against maxBytes
	end     *End          // set once by Close
	changed chan struct{} // closed and replaced at every change
	stdout  stream
	stderr  stream
}

// New returns an empty Output that hides secrets and keeps at most about
// maxBytes of the newest lines (0: DefaultMaxBytes).
func New(secrets []string, maxBytes int) *Output {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	o := &Output{maxBytes: maxBytes, now: time.Now, changed: make(chan struct{})}
	for _, s := range secrets {
		if len(s) >= redact.MinLen {
			o.secrets = append(o.secrets, s)
			o.longest = max(o.longest, len(s))
		}
	}
	o.stdout.o, o.stderr.o = o, o
	return o
}

// AddSecrets hides more values from the lines written from now on (a run's
// own secrets, known once it starts, such as its model gateway token).
func (o *Output) AddSecrets(secrets ...string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, s := range secrets {
		if len(s) >= redact.MinLen {
			o.secrets = append(o.secrets, s)
			o.longest = max(o.longest, len(s))
		}
	}
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
		if len(s.partial) > 0 {
			o.add(string(s.partial))
			s.partial = nil
		}
	}
	o.end = &end
	o.notify()
}

// Snapshot is what a reader gets from Read.
type Snapshot struct {
	// Lines are the lines kept from the index asked for on.
	Lines []string
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

// add keeps one line, redacted, and drops the oldest past the bound. The
// caller holds mu.
func (o *Output) add(line string) {
	line = redact.Secrets(line, o.secrets)
	line = strings.TrimRight(line, "\r")
	if i := strings.LastIndexByte(line, '\r'); i >= 0 {
		line = line[i+1:] // a carriage return starts the line over, as on a terminal
	}
	o.lines = append(o.lines, line)
	o.size += len(line) + lineOverhead
	for o.size > o.maxBytes && len(o.lines) > 1 {
		o.size -= len(o.lines[0]) + lineOverhead
		o.lines[0] = ""
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
	o       *Output
	partial []byte
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
	if len(p) > 0 {
		o.lastWrite.Store(o.now().UnixNano())
	}
	s.partial = append(s.partial, p...)
	added := false
	for {
		i := bytes.IndexByte(s.partial, '\n')
		if i < 0 {
			break
		}
		o.add(string(s.partial[:i]))
		s.partial, added = s.partial[i+1:], true
	}
	if len(s.partial) > MaxLine {
		if c := o.safeCut(string(s.partial)); c > 0 {
			o.add(string(s.partial[:c]))
			s.partial, added = s.partial[c:], true
		}
	}
	if added {
		s.partial = bytes.Clone(s.partial) // let go of what was read
		o.notify()
	}
	return len(p), nil
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
