package kube

import (
	"context"
	"log/slog"
	"time"

	"github.com/alchemic-studio/alfred/sandbox"
)

// drainTimeout bounds the wait for the log stream to end after the agent did.
const drainTimeout = 10 * time.Second

// output streams the agent's stdout (its container log, thanks to the
// wrapper) to the Spec's writer as it comes; its stderr (the file the
// wrapper writes) comes through the primed copy-out (prime.go), which
// follows the file in the helper.
type output struct {
	stdout, stderr *sandbox.Capture
	end            *endLine // between the log and stdout
	stopLog        context.CancelFunc
	logDone        chan struct{}
}

// startOutput starts following the log; ctx must outlive a canceled run.
func (r *Runner) startOutput(ctx context.Context, p *plan, w *podWatch, log *slog.Logger) *output {
	o := &output{
		stdout: sandbox.NewCapture(p.spec.Stdout), stderr: sandbox.NewCapture(p.spec.Stderr),
		logDone: make(chan struct{}),
	}
	logCtx, stopLog := context.WithCancel(ctx)
	o.stopLog = stopLog
	o.end = newEndLine(o.stdout, p.endMark)
	go func() {
		defer close(o.logDone)
		r.followLog(logCtx, p.name, o.end, logState{
			ended:   func() bool { return agentEnded(w) || o.ended() },
			pending: func() bool { return agentPending(w) },
		}, log)
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

// stderrFrom settles stderr once the copy-out brought the whole file: what
// the primed copy-out had not forwarded yet is forwarded now.
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
