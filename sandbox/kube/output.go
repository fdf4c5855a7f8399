package kube

import (
	"context"
	"log/slog"
	"time"

	"github.com/alchemic-studio/alfred/sandbox"
)

// drainTimeout bounds the wait for the log stream to end after the agent did.
const drainTimeout = 10 * time.Second

// stderrTail follows the agent's stderr file in the helper as it grows.
var stderrTail = []string{"/bin/sh", "-c", tailScript}

// tailEndTimeout bounds the wait for the stderr tail to end by itself after
// the agent did; after it, it is cut.
const tailEndTimeout = 3 * time.Second

// output streams the agent's stdout (its container log, thanks to the
// wrapper) and its stderr (the file the wrapper writes, followed in the
// helper) to the Spec's writers as they come.
type output struct {
	stdout, stderr *sandbox.Capture
	end            *endLine // between the log and stdout
	stopLog        context.CancelFunc
	stopTail       context.CancelFunc
	logDone        chan struct{}
	tailDone       chan struct{}
}

// startOutput starts following both streams; ctx must outlive a canceled run.
func (r *Runner) startOutput(ctx context.Context, p *plan, w *podWatch, log *slog.Logger) *output {
	o := &output{
		stdout: sandbox.NewCapture(p.spec.Stdout), stderr: sandbox.NewCapture(p.spec.Stderr),
		logDone: make(chan struct{}), tailDone: make(chan struct{}),
	}
	logCtx, stopLog := context.WithCancel(ctx)
	tailCtx, stopTail := context.WithCancel(ctx)
	o.stopLog, o.stopTail = stopLog, stopTail
	o.end = newEndLine(o.stdout, p.endMark)
	go func() {
		defer close(o.logDone)
		r.followLog(logCtx, p.name, o.end, logState{
			ended:   func() bool { return agentEnded(w) || o.ended() },
			pending: func() bool { return agentPending(w) },
		}, log)
	}()
	go func() {
		defer close(o.tailDone)
		err := r.exec(tailCtx, p.name, ctrHelper, stderrTail, nil, o.stderr)
		if err != nil && tailCtx.Err() == nil {
			log.Debug("stderr tail ended", "err", err)
		}
	}()
	return o
}

// ended says whether the wrapper's end line arrived: the agent has ended
// and its stdout is whole.
func (o *output) ended() bool {
	_, ok := o.end.Code()
	return ok
}

// finishLog waits for the log stream to end (the agent has ended); it ends
// it at once when the end line arrived.
func (o *output) finishLog(log *slog.Logger) {
	if o.ended() {
		o.stopLog()
	}
	select {
	case <-o.logDone:
	case <-time.After(drainTimeout):
		log.Warn("the agent's log stream did not end after the agent; closing it")
		o.stopLog()
		<-o.logDone
	}
	o.stopLog()
	o.end.Flush()
}

// finishTail waits for the stderr tail to end, which the copy-out's start
// asks it to; one still running after tailEndTimeout is cut.
func (o *output) finishTail() {
	select {
	case <-o.tailDone:
	case <-time.After(tailEndTimeout):
		o.stopTail()
		<-o.tailDone
	}
	o.stopTail()
}

// stderrFrom settles stderr once the copy-out brought the whole file: what
// the tail had not forwarded yet is forwarded now.
func (o *output) stderrFrom(c copyOut) []byte {
	streamed := o.stderr.Bytes()
	if !c.hasStderr {
		return streamed
	}
	if len(c.stderr) > len(streamed) {
		_, _ = o.stderr.Write(c.stderr[len(streamed):])
	}
	return c.stderr
}
