package kube

import (
	"context"
	"errors"
	"io"
	"log/slog"
)

// errPrimedEnded: the primed copy-out's exec ended before it was told to go.
var errPrimedEnded = errors.New("kube: the primed copy-out ended")

// primedCopy is a copy-out whose exec is opened while the agent runs: its
// shell in the helper waits for a line, then runs the copy-out, so the end
// of a run does not wait for a new exec to be set up through the API server
// and the kubelet. When it fails (its connection dropped during a long run,
// say), the copy-out runs again as a new exec: it is idempotent.
type primedCopy struct {
	r      *Runner
	p      *plan
	log    *slog.Logger
	goW    *io.PipeWriter
	cancel context.CancelFunc
	result chan readResult
}

// primeCopy opens the copy-out of p, which waits; ctx must outlive a
// canceled run.
func (r *Runner) primeCopy(ctx context.Context, p *plan, log *slog.Logger) *primedCopy {
	ctx, cancel := context.WithCancel(ctx)
	goR, goW := io.Pipe()
	c := &primedCopy{r: r, p: p, log: log, goW: goW, cancel: cancel, result: make(chan readResult, 1)}
	go func() {
		out, err := r.copyBackAfter(ctx, p, goR, log)
		goR.CloseWithError(errPrimedEnded) // a later go fails at once
		c.result <- readResult{out, err}
	}()
	return c
}

// run tells the primed copy-out to go and returns its outcome, or that of a
// new copy-out when it failed; ctx bounds either.
func (c *primedCopy) run(ctx context.Context) (copyOut, error) {
	defer c.cancel()
	stop := context.AfterFunc(ctx, c.cancel)
	defer stop()
	_, _ = c.goW.Write([]byte("go\n"))
	c.goW.Close()
	res := <-c.result
	if res.err == nil {
		return res.out, nil
	}
	c.log.Debug("the primed copy-out failed; copying out anew", "err", res.err)
	return c.r.copyBack(ctx, c.p, c.log)
}

// abandon ends the primed copy-out unused.
func (c *primedCopy) abandon() {
	c.cancel()
	c.goW.CloseWithError(errPrimedEnded)
}
