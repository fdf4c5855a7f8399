package kube

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/alchemic-studio/alfred/sandbox"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// copyTimeout bounds the copy-out of a run's worktree and session.
const copyTimeout = 10 * time.Minute

// made notes which objects of a run may exist, for the teardown.
type made struct {
	secret, pod bool
	counted     bool // the Pod is counted in Running
}

// Run creates the run's Secret and Pod (a sealed one after making sure of
// the standing NetworkPolicy), stages the files, waits for the agent's end,
// its timeout or ctx (signalling it at the timeout or on ctx), copies the
// worktree and the session back, and deletes the objects, whatever the
// outcome. When only the teardown failed, Run returns
// the Result and the error.
func (r *Runner) Run(ctx context.Context, spec sandbox.Spec) (*sandbox.Result, error) {
	p, err := r.plan(&spec)
	if err != nil {
		return nil, err
	}
	log := r.log.With("pod", p.name)
	// The calls that clean up must not depend on ctx, which may be canceled.
	teardown := context.WithoutCancel(ctx)
	objs := &made{}
	res, err := r.runPod(ctx, teardown, p, objs, log)
	if rmErr := r.remove(teardown, p, objs, log); rmErr != nil {
		err = errors.Join(err, rmErr)
	}
	return res, err
}

// runPod makes the objects and runs the agent to its end.
func (r *Runner) runPod(ctx, teardown context.Context, p *plan, objs *made, log *slog.Logger) (*sandbox.Result, error) {
	t0 := time.Now()
	w, err := r.create(ctx, p, objs)
	if err != nil {
		return nil, err
	}
	defer w.stop()
	if err := r.start(ctx, p, w, log); err != nil {
		return nil, err
	}
	started := time.Now()
	log.Debug("staged, the agent starts", "since_create", started.Sub(t0))
	// The helper took the staging: it runs. The relays start beside the
	// agent, whose forwarder waits for their sockets; the copy-out is
	// primed, and follows stderr meanwhile.
	relays := r.startRelays(teardown, p, log)
	defer relays.stop()
	out := r.startOutput(teardown, p, w, log)
	primed := r.primeCopy(teardown, p, out.stderr, log)
	outcome, code, waitErr := r.await(ctx, teardown, p, w, out, log)
	relays.stop()
	out.finishLog(log)
	duration := time.Since(started)
	log.Debug("agent ended", "outcome", outcome, "duration", duration)
	copyCtx, cancel := context.WithTimeout(teardown, copyTimeout)
	defer cancel()
	copied, copyErr := primed.run(copyCtx)
	log.Debug("copied out", "took", time.Since(started)-duration, "err", copyErr)
	if waitErr != nil {
		return nil, errors.Join(waitErr, copyErr)
	}
	return &sandbox.Result{
		Outcome:  outcome,
		ExitCode: code,
		Stdout:   out.stdout.Bytes(),
		Stderr:   out.stderrFrom(copied),
		Started:  started,
		Duration: duration,
	}, copyErr
}

// create makes the Secret, makes sure of the standing NetworkPolicy of a
// sealed run, then makes the Pod, and starts watching it.
func (r *Runner) create(ctx context.Context, p *plan, objs *made) (*podWatch, error) {
	if s := r.secret(p); s != nil {
		objs.secret = true // a create that timed out may still have made it
		if _, err := r.client.CoreV1().Secrets(r.namespace).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("kube: create Secret %s: %w", s.Name, err)
		}
	}
	if p.denyNet {
		if err := r.ensureSealed(ctx); err != nil {
			return nil, err
		}
	}
	objs.pod = true
	created, err := r.client.CoreV1().Pods(r.namespace).Create(ctx, r.pod(p), metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("kube: create Pod %s in namespace %s: %w", p.name, r.namespace, err)
	}
	r.running.Add(1)
	objs.counted = true
	return r.watchPod(created), nil
}

// start stages the files as soon as the stage container takes them, within
// the start deadline. The agent starts when the stage container ends; the
// runner does not wait for the kubelet to report it: the log is followed
// from then on and a container that cannot start fails await.
func (r *Runner) start(ctx context.Context, p *plan, w *podWatch, log *slog.Logger) error {
	startCtx, cancel := context.WithTimeout(ctx, r.opts.StartTimeout)
	defer cancel()
	t0 := time.Now()
	if err := r.stage(startCtx, p, w); err != nil {
		return r.startErr(ctx, startCtx, w, err)
	}
	log.Debug("staged", "took", time.Since(t0))
	return nil
}

// startErr explains why the agent did not start.
func (r *Runner) startErr(ctx, startCtx context.Context, w *podWatch, err error) error {
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("kube: before the agent started: %w", ctx.Err())
	case startCtx.Err() != nil:
		p, _ := w.until(context.Background(), func(*corev1.Pod) (bool, error) { return true, nil })
		return fmt.Errorf("kube: Pod %s did not start within %s (%s): %w", p.Name, r.opts.StartTimeout, pending(p), err)
	}
	return err
}

// await waits for the agent's end, its timeout or ctx, and returns how the
// run ended; at the timeout or on ctx it stops the agent first.
func (r *Runner) await(ctx, teardown context.Context, p *plan, w *podWatch, o *output, log *slog.Logger) (sandbox.Outcome, int, error) {
	runCtx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	code, err := untilEnd(runCtx, w, o)
	if err == nil {
		return sandbox.OutcomeExited, code, nil
	}
	outcome := sandbox.OutcomeTimeout
	switch {
	case ctx.Err() != nil:
		outcome = sandbox.OutcomeCanceled
	case runCtx.Err() == nil:
		return "", -1, fmt.Errorf("kube: wait for the agent: %w", err)
	}
	log.Debug("stopping the agent", "outcome", outcome)
	r.stop(teardown, p, w, o, log)
	return outcome, -1, nil
}

// untilEnd waits for the agent's end, whichever comes first: the wrapper's
// end line in its stdout, or the kubelet's report (when a container cannot
// start, an error). It returns the agent's exit code.
func untilEnd(ctx context.Context, w *podWatch, o *output) (int, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type report struct {
		pod *corev1.Pod
		err error
	}
	watched := make(chan report, 1)
	go func() {
		pod, err := w.until(ctx, endedOrFailed)
		watched <- report{pod, err}
	}()
	select {
	case <-o.end.Done():
		code, _ := o.end.Code()
		return code, nil
	case rep := <-watched:
		if rep.err != nil {
			return -1, rep.err
		}
		return int(status(rep.pod, ctrAgent).State.Terminated.ExitCode), nil
	}
}

// stop sends SIGTERM to the agent's processes, then SIGKILL after the grace
// period, and waits for the agent's end.
func (r *Runner) stop(ctx context.Context, p *plan, w *podWatch, o *output, log *slog.Logger) {
	for _, sig := range []string{"TERM", "KILL"} {
		sigCtx, cancel := context.WithTimeout(ctx, teardownTimeout)
		if err := r.signal(sigCtx, p.name, sig); err != nil {
			log.Warn("signal the agent failed", "signal", sig, "err", err)
		}
		cancel()
		wait := r.opts.KillGrace
		if sig == "KILL" {
			wait = teardownTimeout
		}
		waitCtx, cancel := context.WithTimeout(ctx, wait)
		_, err := untilEnd(waitCtx, w, o)
		cancel()
		if err == nil {
			return
		}
	}
	log.Warn("the agent did not end after SIGKILL; deleting its Pod")
}
