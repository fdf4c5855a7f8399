package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/alchemic-studio/alfred/state"
)

// TestE2EKubernetesNodes plays the scenario on the two nodes of the test
// cluster (scripts/k8s.sh), moving the runs from one node to the other with
// cordons, as an operator would: nothing in the runner knows of it. The
// analysis runs on the first node, the development on the second and
// resumes the analysis' session there (the session folder travels with the
// run, not with the node). Then the node of a held ci_fix run is drained
// as `kubectl drain` does (cordoned, its Pod evicted): the run fails as a
// deleted Pod's does, and the retry resumes the session on the other node.
func TestE2EKubernetesNodes(t *testing.T) {
	k := newKube(t)
	a, b := k.twoNodes()
	placed := k.watchPlacement()
	k.cordon(b)
	s := start(t, newFakeWorld(t), k.option)
	s.beforeDevelopment = func() { k.uncordon(b); k.cordon(a) } // one node schedulable at every moment
	s.toPullRequest()                                           // it checks that the development resumed the analysis' session
	placed.on(s.phaseRun("analysis"), a)
	placed.on(s.lastRun(), b)

	var drained, other string
	failed, retry := k.podGoneMidRun(s, func(victim corev1.Pod) {
		drained, other = victim.Spec.NodeName, a
		if drained == a {
			other = b
		}
		k.drain(victim, other)
	})
	if drained != b {
		t.Errorf("the held ci_fix run ran on %q, want %s (the only schedulable node)", drained, b)
	}
	placed.on(failed, drained)
	placed.on(retry, other)
	s.w.close(s.n)
	s.waitStatus("done")
	k.nothingLeft(s.instance)
}

// twoNodes returns the test cluster's two nodes (ALFRED_TEST_K8S_NODES),
// each Ready, and uncordons them when the test ends.
func (k *kube) twoNodes() (a, b string) {
	t := k.t
	nodes := strings.Fields(need(t, "ALFRED_TEST_K8S_NODES", "the two-node test cluster of scripts/k8s.sh start"))
	if len(nodes) != 2 {
		t.Fatalf("ALFRED_TEST_K8S_NODES=%q: want two nodes (restart the cluster with a scripts/k8s.sh that starts two)", nodes)
	}
	for _, n := range nodes {
		node, err := k.client.CoreV1().Nodes().Get(context.Background(), n, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("node %s: %v", n, err)
		}
		ready := false
		for _, c := range node.Status.Conditions {
			ready = ready || c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
		}
		if !ready || node.Spec.Unschedulable {
			t.Fatalf("node %s: Ready %v, cordoned %v; want Ready and schedulable", n, ready, node.Spec.Unschedulable)
		}
	}
	t.Cleanup(func() {
		for _, n := range nodes {
			k.setUnschedulable(n, false)
		}
	})
	return nodes[0], nodes[1]
}

func (k *kube) cordon(node string)   { k.setUnschedulable(node, true) }
func (k *kube) uncordon(node string) { k.setUnschedulable(node, false) }

// setUnschedulable cordons (uncordons) node, as kubectl cordon does.
func (k *kube) setUnschedulable(node string, on bool) {
	patch := fmt.Appendf(nil, `{"spec":{"unschedulable":%v}}`, on)
	if _, err := k.client.CoreV1().Nodes().Patch(context.Background(), node, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		k.t.Fatalf("set node %s unschedulable=%v: %v", node, on, err)
	}
}

// drain does what `kubectl drain` does to the node of victim: cordon it and
// evict its Pods (victim, the only Pod there; at once, as the deletion of
// podDeletedMidRun); other is uncordoned first, so that the retry has a node.
func (k *kube) drain(victim corev1.Pod, other string) {
	k.uncordon(other)
	k.cordon(victim.Spec.NodeName)
	zero := int64(0)
	ev := &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Name: victim.Name, Namespace: victim.Namespace},
		DeleteOptions: &metav1.DeleteOptions{GracePeriodSeconds: &zero},
	}
	if err := k.client.CoreV1().Pods(k.namespace).EvictV1(context.Background(), ev); err != nil {
		k.t.Fatalf("evict Pod %s from node %s: %v", victim.Name, victim.Spec.NodeName, err)
	}
}

// placement records the node each run's Pod was scheduled on (the Pods are
// gone once their run ends), from a watch of the namespace's run Pods.
type placement struct {
	t     testing.TB
	mu    sync.Mutex
	nodes map[string]string // run ID (the Pod's alfred.run label) -> node
}

// watchPlacement starts recording until the test ends.
func (k *kube) watchPlacement() *placement {
	t := k.t
	p := &placement{t: t, nodes: map[string]string{}}
	ctx, cancel := context.WithCancel(context.Background())
	sel := metav1.ListOptions{LabelSelector: "alfred.run"}
	list, err := k.client.CoreV1().Pods(k.namespace).List(ctx, sel)
	if err != nil {
		t.Fatalf("list Pods: %v", err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		rv := list.ResourceVersion
		for ctx.Err() == nil {
			opts := sel
			opts.ResourceVersion, opts.AllowWatchBookmarks = rv, true
			w, err := k.client.CoreV1().Pods(k.namespace).Watch(ctx, opts)
			if err != nil {
				time.Sleep(200 * time.Millisecond)
				continue
			}
			rv = p.record(w, rv)
			w.Stop()
		}
	}()
	return p
}

// record reads w until it ends and returns the last resource version seen.
func (p *placement) record(w watch.Interface, rv string) string {
	for ev := range w.ResultChan() {
		pod, ok := ev.Object.(*corev1.Pod)
		if !ok {
			continue // an error: watch again from rv
		}
		rv = pod.ResourceVersion
		if run := pod.Labels["alfred.run"]; run != "" && pod.Spec.NodeName != "" {
			p.mu.Lock()
			p.nodes[run] = pod.Spec.NodeName
			p.mu.Unlock()
		}
	}
	return rv
}

// on checks that run r's Pod was scheduled on node.
func (p *placement) on(r state.Run, node string) {
	p.t.Helper()
	var got string
	deadline := time.Now().Add(10 * time.Second) // the watch may lag the bot's record
	for got == "" && time.Now().Before(deadline) {
		p.mu.Lock()
		got = p.nodes[r.ID]
		p.mu.Unlock()
		time.Sleep(100 * time.Millisecond)
	}
	if got != node {
		p.t.Errorf("the %s run %s (%s) ran on node %q, want %s", r.Phase, r.ID, r.Status, got, node)
	} else {
		p.t.Logf("the %s run %s (%s) ran on node %s", r.Phase, r.ID, r.Status, got)
	}
}

// phaseRun is the first run of phase.
func (s *scenario) phaseRun(phase string) state.Run {
	for _, r := range s.runs {
		if r.Phase == phase {
			return r
		}
	}
	s.t.Fatalf("no %s run among %d", phase, len(s.runs))
	return state.Run{}
}
