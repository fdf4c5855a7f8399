package kube

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
)

// testNodes are the test cluster's nodes (ALFRED_TEST_K8S_NODES, which
// scripts/k8s.sh exports): two, so that a run may land on either.
func testNodes(t *testing.T) []string {
	t.Helper()
	nodes := strings.Fields(os.Getenv("ALFRED_TEST_K8S_NODES"))
	if len(nodes) != 2 {
		t.Fatalf("ALFRED_TEST_K8S_NODES=%q: want the two nodes of scripts/k8s.sh start (restart the cluster with the current script)", os.Getenv("ALFRED_TEST_K8S_NODES"))
	}
	return nodes
}

// TestPolicyOnEachNode: a Pod on either node reaches a listener Pod on the
// other over the one Pod network, and no longer does once a deny-all
// NetworkPolicy (the runner's sealing) selects it, after which the listener
// still answers an unsealed Pod: the one NetworkPolicy enforcer guards the
// Pods of both nodes. Each node hands out addresses of its own range.
func TestPolicyOnEachNode(t *testing.T) {
	t.Parallel()
	c := clusterEnv(t)
	nodes := testNodes(t)
	ranges := map[string]netip.Prefix{nodes[0]: netip.MustParsePrefix("10.244.0.0/24"), nodes[1]: netip.MustParsePrefix("10.244.1.0/24")}
	for i, from := range nodes {
		to := nodes[1-i]
		t.Run("from "+from, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			target := listenerPod(ctx, t, c, to)[0]
			if ip, err := netip.ParseAddr(target.host); err != nil || !ranges[to].Contains(ip) {
				t.Errorf("the listener Pod on %s has the address %s, want one of %s", to, target.host, ranges[to])
			}
			if got := probeFrom(ctx, t, c, from, false, target); got != "open" {
				t.Fatalf("an unsealed Pod on %s did not reach the listener on %s (%s): %q", from, to, target.host, got)
			}
			if got := probeFrom(ctx, t, c, from, true, target); got != "closed" {
				t.Errorf("a sealed Pod on %s reached the listener on %s (%s): %q", from, to, target.host, got)
			}
			if got := probeFrom(ctx, t, c, from, false, target); got != "open" {
				t.Fatalf("the listener on %s no longer answers an unsealed Pod (%q): the sealed Pod's failure proves nothing", to, got)
			}
		})
	}
}

// probeFrom runs a Pod on node that connects to target and returns what it
// printed: "open" or "closed ...". A sealed one is selected by a deny-all
// NetworkPolicy (no rules, Ingress and Egress, as the runner's) made before
// it; it tries for up to 30 s, since the enforcer applies a policy to a
// new Pod a moment after the Pod got its address: on a node that no enforcer
// guards it stays open.
func probeFrom(ctx context.Context, t *testing.T, c testCluster, node string, sealed bool, target netTarget) string {
	t.Helper()
	try := fmt.Sprintf(`out=$(nc -w 2 %s %d </dev/null 2>&1) && [ "$out" = %s ]`, target.host, target.port, listenerHello)
	script := `if ` + try + `; then echo open; else echo "closed $out"; fi`
	if sealed {
		script = `i=0; while [ $i -lt 30 ]; do if ` + try + `; then i=$((i + 1)); sleep 1; else echo "closed"; exit 0; fi; done; echo open`
	}
	label := "probe-" + rand.String(8)
	if sealed {
		policy := &networkingv1.NetworkPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: label},
			Spec: networkingv1.NetworkPolicySpec{
				PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"alfred.test-probe": label}},
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
			},
		}
		policies := c.client.NetworkingV1().NetworkPolicies(c.namespace)
		if _, err := policies.Create(ctx, policy, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create the NetworkPolicy %s: %v", label, err)
		}
		t.Cleanup(func() { _ = policies.Delete(context.Background(), label, metav1.DeleteOptions{}) })
	}
	pods := c.client.CoreV1().Pods(c.namespace)
	pod := restrictedPod(c, "alfred-probe-", map[string]string{"alfred.test-probe": label}, node, script)
	created, err := pods.Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create the probe Pod: %v", err)
	}
	t.Cleanup(func() {
		_ = pods.Delete(context.Background(), created.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	})
	var last *corev1.Pod
	err = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		p, err := pods.Get(ctx, created.Name, metav1.GetOptions{})
		last = p
		return err == nil && (p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed), err
	})
	if err != nil || last.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("probe Pod %s on %s did not succeed: %v\n%s", created.Name, node, err, describe(last))
	}
	if last.Spec.NodeName != node {
		t.Fatalf("probe Pod %s ran on %s, want %s", created.Name, last.Spec.NodeName, node)
	}
	out, err := pods.GetLogs(created.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		t.Fatalf("log of the probe Pod %s: %v", created.Name, err)
	}
	t.Logf("probe from %s (sealed %v, Pod %s): %s", node, sealed, last.Status.PodIP, strings.TrimSpace(string(out)))
	return strings.TrimSpace(string(out))
}
