package kube

import (
	"bytes"
	"io"
	"strconv"
	"sync"
)

// maxCodeLen bounds the exit code of an end line ("255", or a negative one).
const maxCodeLen = 12

// endLine passes the agent's stdout on and takes out the wrapper's last
// line, "\nMARK CODE\n" (MARK random for each run): a "\n" that may start it
// is held back until what follows shows it is not the end line. Once it
// arrived, Done is closed and Code is the agent's exit code. No output
// matches MARK by chance; an agent that reads it from the wrapper's command
// line and prints the line ends its own run early, as exiting would.
type endLine struct {
	out  io.Writer
	mark []byte // "\n" + MARK + " "

	mu   sync.Mutex
	held []byte
	code int
	seen bool
	done chan struct{}
}

func newEndLine(out io.Writer, mark string) *endLine {
	return &endLine{out: out, mark: []byte("\n" + mark + " "), done: make(chan struct{})}
}

// Write passes on what cannot be part of the end line.
func (e *endLine) Write(p []byte) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.seen { // what a leftover process wrote after the wrapper's end
		_, err := e.out.Write(p)
		return len(p), err
	}
	data := append(e.held, p...)
	pass, hold := e.split(data)
	e.held = append([]byte(nil), hold...)
	if len(pass) > 0 {
		if _, err := e.out.Write(pass); err != nil {
			return len(p), err
		}
	}
	return len(p), nil
}

// split returns what of data to pass on and what to hold; it records the
// end line when data holds it whole.
func (e *endLine) split(data []byte) (pass, hold []byte) {
	if i := bytes.Index(data, e.mark); i >= 0 {
		rest := data[i+len(e.mark):]
		j := bytes.IndexByte(rest, '\n')
		if j < 0 && len(rest) <= maxCodeLen {
			return data[:i], data[i:]
		}
		if code, err := strconv.Atoi(string(rest[:max(j, 0)])); j >= 0 && j <= maxCodeLen && err == nil {
			e.code, e.seen = code, true
			close(e.done)
			return append(data[:i:i], rest[j+1:]...), nil
		}
		// Not the wrapper's line: pass it on and look again after it.
		more, hold := e.split(data[i+1:])
		return append(data[:i+1:i+1], more...), hold
	}
	k := markStart(data, e.mark)
	return data[:k], data[k:]
}

// markStart is where the longest end of data that starts mark (and is
// shorter than it) begins, or len(data): what a stream that takes a mark
// out holds back until more comes.
func markStart(data, mark []byte) int {
	for k := min(len(mark)-1, len(data)); k > 0; k-- {
		if bytes.HasPrefix(mark, data[len(data)-k:]) {
			return len(data) - k
		}
	}
	return len(data)
}

// Done is closed when the end line arrived.
func (e *endLine) Done() <-chan struct{} { return e.done }

// Code is the agent's exit code from the end line; ok is false before it.
func (e *endLine) Code() (code int, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.code, e.seen
}

// Flush passes on what was held back: the stream ended without the end
// line (the wrapper was killed).
func (e *endLine) Flush() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.held) > 0 {
		_, _ = e.out.Write(e.held)
		e.held = nil
	}
}
