package kube

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
)

// errPodGone: the Pod was deleted under the run (by Cleanup, an operator).
var errPodGone = errors.New("kube: the Pod was deleted during the run")

// podWatch follows one Pod's status for the whole run, through watches
// that are reopened when they end.
type podWatch struct {
	stop    func()
	mu      sync.Mutex
	pod     *corev1.Pod
	err     error         // the watch failed for good or the Pod is gone
	changed chan struct{} // closed and replaced at every change
}

// watchPod starts following created; call stop when done.
func (r *Runner) watchPod(created *corev1.Pod) *podWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &podWatch{pod: created, changed: make(chan struct{}), stop: cancel}
	go r.follow(ctx, w, created.Name, created.ResourceVersion)
	return w
}

// follow watches the Pod from resource version rv until ctx ends or the Pod
// is gone. A watch that ends is reopened where it stopped; one that fails
// (an expired version, a dropped connection) makes it re-read the Pod first.
func (r *Runner) follow(ctx context.Context, w *podWatch, name, rv string) {
	failures := 0
	for ctx.Err() == nil {
		next, err := r.watchOnce(ctx, w, name, rv)
		switch {
		case errors.Is(err, errPodGone):
			w.set(nil, err)
			return
		case err == nil:
			rv, failures = next, 0
			continue
		}
		if failures++; failures > 10 {
			w.set(nil, fmt.Errorf("kube: watch Pod %s: %w", name, err))
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
		p, gerr := r.client.CoreV1().Pods(r.namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(gerr) {
			w.set(nil, errPodGone)
			return
		}
		if gerr == nil {
			w.set(p, nil)
			rv = p.ResourceVersion
		}
	}
}

// watchOnce follows one watch to its end and returns the last resource
// version it saw; errPodGone when the Pod was deleted.
func (r *Runner) watchOnce(ctx context.Context, w *podWatch, name, rv string) (string, error) {
	wi, err := r.client.CoreV1().Pods(r.namespace).Watch(ctx, metav1.ListOptions{
		FieldSelector:       fields.OneTermEqualSelector("metadata.name", name).String(),
		ResourceVersion:     rv,
		AllowWatchBookmarks: true,
	})
	if err != nil {
		return rv, err
	}
	defer wi.Stop()
	for ev := range wi.ResultChan() {
		switch ev.Type {
		case watch.Added, watch.Modified, watch.Bookmark:
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			rv = p.ResourceVersion
			if ev.Type != watch.Bookmark {
				w.set(p, nil)
			}
		case watch.Deleted:
			return rv, errPodGone
		case watch.Error:
			return rv, apierrors.FromObject(ev.Object)
		}
	}
	return rv, nil
}

// set records a newer Pod or a final error and wakes the waiters.
func (w *podWatch) set(p *corev1.Pod, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if p != nil {
		w.pod = p
	}
	if err != nil {
		w.err = err
	}
	close(w.changed)
	w.changed = make(chan struct{})
}

// until waits for cond to hold (or fail) on the latest Pod, or ctx.
func (w *podWatch) until(ctx context.Context, cond func(*corev1.Pod) (bool, error)) (*corev1.Pod, error) {
	for {
		w.mu.Lock()
		p, err, changed := w.pod, w.err, w.changed
		w.mu.Unlock()
		if done, cerr := cond(p); cerr != nil || done {
			return p, cerr
		}
		if err != nil {
			return p, err
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return p, ctx.Err()
		}
	}
}

// status returns the status of the container name, init or not.
func status(p *corev1.Pod, name string) *corev1.ContainerStatus {
	for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

// running holds when container name runs.
func running(name string) func(*corev1.Pod) (bool, error) {
	return func(p *corev1.Pod) (bool, error) {
		if err := startFailure(p); err != nil {
			return false, err
		}
		s := status(p, name)
		if s != nil && s.State.Terminated != nil {
			return false, fmt.Errorf("kube: container %s ended before its time: exit %d %s %s", name, s.State.Terminated.ExitCode, s.State.Terminated.Reason, s.State.Terminated.Message)
		}
		return s != nil && s.State.Running != nil, nil
	}
}

// ended holds when the agent has ended.
func ended(p *corev1.Pod) (bool, error) {
	s := status(p, ctrAgent)
	return s != nil && s.State.Terminated != nil, nil
}

// fatalReasons are the waiting reasons of a container that will not start
// by itself (a pull may be retried, but a bot run should not wait for it).
var fatalReasons = map[string]bool{
	"ErrImageNeverPull": true, "ErrImagePull": true, "ImagePullBackOff": true, "InvalidImageName": true,
	"CreateContainerConfigError": true, "CreateContainerError": true, "RunContainerError": true,
	"PreCreateHookError": true, "CrashLoopBackOff": true,
}

// startFailure says why the Pod will never start its containers, or nil.
// A Pod the scheduler cannot place for lack of resources may fit later: the
// start deadline decides; any other unschedulable Pod fails at once.
func startFailure(p *corev1.Pod) error {
	if p.Status.Phase == corev1.PodFailed {
		return fmt.Errorf("kube: Pod %s failed: %s %s", p.Name, p.Status.Reason, p.Status.Message)
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable &&
			!strings.Contains(c.Message, "Insufficient") {
			return fmt.Errorf("kube: Pod %s cannot be scheduled: %s", p.Name, c.Message)
		}
	}
	for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, s := range list {
			if w := s.State.Waiting; w != nil && fatalReasons[w.Reason] {
				return fmt.Errorf("kube: container %s of Pod %s cannot start: %s: %s", s.Name, p.Name, w.Reason, w.Message)
			}
		}
	}
	return nil
}

// pending describes why a Pod is still pending, for the start deadline's error.
func pending(p *corev1.Pod) string {
	var b strings.Builder
	fmt.Fprintf(&b, "phase %s", p.Status.Phase)
	for _, c := range p.Status.Conditions {
		if c.Status != corev1.ConditionTrue && c.Message != "" {
			fmt.Fprintf(&b, "; %s: %s", c.Type, c.Message)
		}
	}
	for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, s := range list {
			if w := s.State.Waiting; w != nil {
				fmt.Fprintf(&b, "; %s waiting: %s %s", s.Name, w.Reason, w.Message)
			}
		}
	}
	return b.String()
}

// latest is the latest Pod and the watch's final error, if any.
func (w *podWatch) latest() (*corev1.Pod, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pod, w.err
}

// agentEnded says whether the latest Pod shows the agent ended (or the Pod
// gone: nothing more will come).
func agentEnded(w *podWatch) bool {
	p, err := w.latest()
	done, _ := ended(p)
	return done || err != nil
}

// agentPending says whether the latest Pod shows the agent not started yet
// and able to start.
func agentPending(w *podWatch) bool {
	p, err := w.latest()
	if err != nil || startFailure(p) != nil {
		return false
	}
	s := status(p, ctrAgent)
	return s == nil || s.State.Running == nil && s.State.Terminated == nil
}

// seen holds when the kubelet has reported the Pod (its helper's status is
// there): its containers may start any moment.
func seen(p *corev1.Pod) (bool, error) {
	if err := startFailure(p); err != nil {
		return false, err
	}
	return status(p, ctrHelper) != nil, nil
}

// endedOrFailed holds when the agent has ended; it fails when a container
// of the Pod cannot start.
func endedOrFailed(p *corev1.Pod) (bool, error) {
	if err := startFailure(p); err != nil {
		return false, err
	}
	return ended(p)
}
