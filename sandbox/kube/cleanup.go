package kube

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/utils/ptr"
)

// now deletes without waiting: the agent has been stopped already.
var now = metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}

// remove deletes the objects of run p that may exist and waits until the
// Pod is gone. A Pod whose deletion failed stays counted in Running.
func (r *Runner) remove(ctx context.Context, p *plan, objs *made, log *slog.Logger) error {
	ctx, cancel := context.WithTimeout(ctx, teardownTimeout)
	defer cancel()
	var errs []error
	if objs.pod {
		err := r.deletePod(ctx, p.name)
		if err == nil && objs.counted {
			r.running.Add(-1)
		}
		errs = append(errs, err)
	}
	if objs.secret {
		errs = append(errs, ignoreNotFound(r.client.CoreV1().Secrets(r.namespace).Delete(ctx, p.name, now)))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("kube: delete the objects of %s: %w", p.name, err)
	}
	log.Debug("run's objects deleted")
	return nil
}

// deletePod deletes a Pod at once and waits until the API server no longer
// has it.
func (r *Runner) deletePod(ctx context.Context, name string) error {
	pods := r.client.CoreV1().Pods(r.namespace)
	if err := ignoreNotFound(pods.Delete(ctx, name, now)); err != nil {
		return err
	}
	for {
		_, err := pods.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("Pod %s still there: %w", name, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// Cleanup deletes the Pods, Secrets and NetworkPolicies of this instance
// that another runner made for its runs, such as the leftovers of a bot
// that crashed, and returns how many objects it deleted. Call it once when
// the bot starts: it would also delete the live runs of another process of
// the same instance.
func (r *Runner) Cleanup(ctx context.Context) (int, error) {
	// A run's objects name their runner: those of another runner. The
	// instance's objects that name none (the standing NetworkPolicy of
	// the sealed runs) outlive runs.
	named, _ := labels.NewRequirement(LabelRunner, selection.Exists, nil)
	other, _ := labels.NewRequirement(LabelRunner, selection.NotEquals, []string{r.id})
	sel := labels.SelectorFromSet(labels.Set{LabelManaged: "true", LabelInstance: r.opts.Instance}).Add(*named, *other)
	list := metav1.ListOptions{LabelSelector: sel.String()}
	kinds := []struct {
		kind string
		list func() ([]metav1.ObjectMeta, error)
		del  func(name string) error
	}{
		{"Pod", r.listPods(ctx, list), func(n string) error { return r.client.CoreV1().Pods(r.namespace).Delete(ctx, n, now) }},
		{"Secret", r.listSecrets(ctx, list), func(n string) error { return r.client.CoreV1().Secrets(r.namespace).Delete(ctx, n, now) }},
		{"NetworkPolicy", r.listPolicies(ctx, list), func(n string) error {
			return r.client.NetworkingV1().NetworkPolicies(r.namespace).Delete(ctx, n, now)
		}},
	}
	removed := 0
	var errs []error
	for _, k := range kinds {
		metas, err := k.list()
		if err != nil {
			errs = append(errs, fmt.Errorf("list leftover %ss: %w", k.kind, err))
			continue
		}
		for _, m := range metas {
			if err := ignoreNotFound(k.del(m.Name)); err != nil {
				errs = append(errs, fmt.Errorf("delete leftover %s %s: %w", k.kind, m.Name, err))
				continue
			}
			removed++
			r.log.Info("deleted a leftover", "kind", k.kind, "name", m.Name, "runner_of_it", m.Labels[LabelRunner])
		}
	}
	if err := errors.Join(errs...); err != nil {
		return removed, fmt.Errorf("kube: %w", err)
	}
	return removed, nil
}

func (r *Runner) listPods(ctx context.Context, o metav1.ListOptions) func() ([]metav1.ObjectMeta, error) {
	return func() ([]metav1.ObjectMeta, error) { return metasOf(r.client.CoreV1().Pods(r.namespace).List(ctx, o)) }
}

func (r *Runner) listSecrets(ctx context.Context, o metav1.ListOptions) func() ([]metav1.ObjectMeta, error) {
	return func() ([]metav1.ObjectMeta, error) {
		return metasOf(r.client.CoreV1().Secrets(r.namespace).List(ctx, o))
	}
}

func (r *Runner) listPolicies(ctx context.Context, o metav1.ListOptions) func() ([]metav1.ObjectMeta, error) {
	return func() ([]metav1.ObjectMeta, error) {
		return metasOf(r.client.NetworkingV1().NetworkPolicies(r.namespace).List(ctx, o))
	}
}

// metasOf is the names and labels of a list's objects, whatever their kind.
func metasOf(list runtime.Object, err error) ([]metav1.ObjectMeta, error) {
	if err != nil {
		return nil, err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	metas := make([]metav1.ObjectMeta, 0, len(items))
	for _, it := range items {
		a, err := meta.Accessor(it)
		if err != nil {
			return nil, err
		}
		metas = append(metas, metav1.ObjectMeta{Name: a.GetName(), Labels: a.GetLabels()})
	}
	return metas, nil
}
