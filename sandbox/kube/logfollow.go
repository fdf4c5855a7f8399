package kube

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The log follower's reconnects: at most logRetries attempts in a row that
// bring nothing new, waiting logBackoff before the first, doubled each time
// up to logBackoffMax.
const (
	logRetries    = 5
	logBackoff    = 250 * time.Millisecond
	logBackoffMax = 4 * time.Second
)

// maxStampLen bounds the timestamp the kubelet puts before each line
// (RFC 3339 with nanoseconds is 30 bytes).
const maxStampLen = 64

// logCursor is how far a log was passed on, across streams: the timestamp of
// the last line begun, how many lines began at that very instant, and how
// many bytes of the last one were passed on.
type logCursor struct {
	last time.Time
	n    int
	done int64
}

// since is the SinceTime a new stream starts from: nil before any line, else
// the last line's timestamp (the API sends it to the second, rounded down,
// so the stream repeats that second, which the filter drops).
func (c *logCursor) since() *metav1.Time {
	if c.last.IsZero() {
		return nil
	}
	t := metav1.NewTime(c.last)
	return &t
}

// logFilter reads one log stream of the kubelet with timestamps ("TS
// content\n"; a line the container wrote in parts carries one timestamp),
// strips them and passes on to out only what the cursor has not seen: lines
// before the cursor's, the first n-1 of its instant, and the bytes of the
// last one already passed on are dropped. Streams of one container log
// repeat it identically, so nothing is doubled or lost.
type logFilter struct {
	cur    *logCursor
	out    io.Writer
	stamp  []byte // the timestamp being read at a line's start
	inLine bool
	skip   int64     // bytes of the current line to drop; -1: all of it
	prev   time.Time // this stream's previous line's timestamp
	k      int       // lines of this stream begun at prev
}

func newLogFilter(cur *logCursor, out io.Writer) *logFilter {
	return &logFilter{cur: cur, out: out}
}

// Write takes the stream's bytes in any chunks.
func (f *logFilter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if !f.inLine {
			i := bytes.IndexByte(p, ' ')
			if i < 0 {
				f.stamp = append(f.stamp, p...)
				if len(f.stamp) > maxStampLen {
					return n, fmt.Errorf("kube: agent log line without a timestamp: %.64q", f.stamp)
				}
				return n, nil
			}
			f.stamp = append(f.stamp, p[:i]...)
			p = p[i+1:]
			if err := f.begin(); err != nil {
				return n, err
			}
			continue
		}
		chunk := p
		if i := bytes.IndexByte(p, '\n'); i >= 0 {
			chunk = p[:i+1]
			f.inLine = false
		}
		p = p[len(chunk):]
		if err := f.pass(chunk); err != nil {
			return n, err
		}
	}
	return n, nil
}

// begin starts a line at the timestamp read and decides what of it to drop.
func (f *logFilter) begin() error {
	ts, err := time.Parse(time.RFC3339Nano, string(f.stamp))
	if err != nil {
		return fmt.Errorf("kube: agent log line with a bad timestamp: %w", err)
	}
	f.stamp, f.inLine = f.stamp[:0], true
	if ts.Equal(f.prev) {
		f.k++
	} else {
		f.prev, f.k = ts, 1
	}
	c := f.cur
	switch {
	case ts.After(c.last) || ts.Equal(c.last) && f.k > c.n:
		c.last, c.n, c.done = ts, f.k, 0
		f.skip = 0
	case ts.Equal(c.last) && f.k == c.n:
		f.skip = c.done
	default:
		f.skip = -1
	}
	return nil
}

// pass passes on what of chunk (part of one line) is new.
func (f *logFilter) pass(chunk []byte) error {
	if f.skip < 0 {
		return nil
	}
	d := min(f.skip, int64(len(chunk)))
	chunk, f.skip = chunk[d:], f.skip-d
	if len(chunk) == 0 {
		return nil
	}
	f.cur.done += int64(len(chunk))
	_, err := f.out.Write(chunk)
	return err
}

// logState tells followLog where the agent is.
type logState struct {
	ended   func() bool // the agent has ended: a stream that ends is the end
	pending func() bool // the agent has not started yet, as far as the watch knows
}

// followLog copies the agent container's log to out from its start, through
// broken streams: each new stream starts at the last line seen and the
// filter drops what was passed on already. Before the first line, a stream
// refused while the agent is pending (not started, or its start not reported
// yet) is asked again after stageRetry. It returns when a stream ended and
// ended() holds, with ctx, or after logRetries attempts in a row that
// brought nothing.
func (r *Runner) followLog(ctx context.Context, pod string, out io.Writer, st logState, log *slog.Logger) {
	cur := &logCursor{}
	backoff := logBackoff
	for failures, waits := 0, 0; ; {
		before := *cur
		err := r.readLog(ctx, pod, cur, out)
		if ctx.Err() != nil {
			return
		}
		if err == nil && st.ended() {
			return
		}
		if err != nil && cur.last.IsZero() && st.pending() {
			select {
			case <-ctx.Done():
				return
			case <-time.After(stageRetry(waits)):
			}
			waits++
			continue
		}
		if *cur != before {
			failures, backoff = 0, logBackoff
		}
		if failures++; failures > logRetries {
			log.Warn("the agent's log stream broke; giving up", "attempts", failures, "err", err)
			return
		}
		log.Info("the agent's log stream ended early; reconnecting", "since", cur.last, "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, logBackoffMax)
	}
}

// readLog reads one stream of the agent's log from the cursor to its end.
func (r *Runner) readLog(ctx context.Context, pod string, cur *logCursor, out io.Writer) error {
	opts := &corev1.PodLogOptions{Container: ctrAgent, Follow: true, Timestamps: true, SinceTime: cur.since()}
	stream, err := r.client.CoreV1().Pods(r.namespace).GetLogs(pod, opts).Stream(ctx)
	if err != nil {
		return fmt.Errorf("kube: follow the agent's log: %w", err)
	}
	defer stream.Close()
	if _, err := io.Copy(newLogFilter(cur, out), stream); err != nil {
		return fmt.Errorf("kube: read the agent's log: %w", err)
	}
	return nil
}
