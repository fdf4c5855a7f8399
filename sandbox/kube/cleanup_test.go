package kube

import (
	"context"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestRunnerCleanupRemovesLeftovers(t *testing.T) {
	t.Parallel()
	r := newTestRunner(t)
	ctx := context.Background()
	c := r.c
	// What a crashed bot left: a Pod (running), its Secret and its
	// NetworkPolicy, of this instance, and a Pod of another instance that
	// must survive.
	leftover := func(instance string) string {
		p := &plan{name: "alfred-run-" + randomHex(6), spec: nil}
		l := map[string]string{LabelManaged: "true", LabelInstance: instance, LabelRunner: "crashed", LabelPod: p.name}
		meta := metav1.ObjectMeta{Name: p.name, Labels: l}
		pod := &corev1.Pod{ObjectMeta: meta, Spec: corev1.PodSpec{
			RestartPolicy:                corev1.RestartPolicyNever,
			AutomountServiceAccountToken: ptr.To(false),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](agentUID),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name: "sleep", Image: c.image, ImagePullPolicy: corev1.PullNever, Command: []string{"sleep", "300"},
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr.To(false),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
		}}
		if _, err := c.client.CoreV1().Pods(c.namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create leftover Pod: %v", err)
		}
		if instance == r.opts.Instance {
			if _, err := c.client.CoreV1().Secrets(c.namespace).Create(ctx, &corev1.Secret{ObjectMeta: meta}, metav1.CreateOptions{}); err != nil {
				t.Fatalf("create leftover Secret: %v", err)
			}
			// A policy per run, as the runner made before the standing one.
			np := &networkingv1.NetworkPolicy{ObjectMeta: meta, Spec: networkingv1.NetworkPolicySpec{
				PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{LabelPod: p.name}},
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
			}}
			if _, err := c.client.NetworkingV1().NetworkPolicies(c.namespace).Create(ctx, np, metav1.CreateOptions{}); err != nil {
				t.Fatalf("create leftover NetworkPolicy: %v", err)
			}
		}
		return p.name
	}
	mine := leftover(r.opts.Instance)
	if err := r.ensureSealed(ctx); err != nil { // the standing policy, which stays
		t.Fatal(err)
	}
	otherInstance := "other-" + randomHex(4)
	other := leftover(otherInstance)
	t.Cleanup(func() {
		_ = c.client.CoreV1().Pods(c.namespace).Delete(ctx, other, now)
	})

	// The next start of the bot: a new runner of the same instance. The
	// first runner's own objects (none live now) would be kept.
	next, err := New(ctx, Options{Kubeconfig: os.Getenv("ALFRED_TEST_KUBECONFIG"), Namespace: c.namespace, Instance: r.opts.Instance})
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	removed, err := next.Cleanup(ctx)
	if err != nil {
		t.Fatalf("Cleanup: %v", err)
	}
	if removed != 3 {
		t.Errorf("Cleanup removed %d objects, want 3 (Pod, Secret, NetworkPolicy)", removed)
	}
	if _, err := c.client.CoreV1().Pods(c.namespace).Get(ctx, mine, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("leftover Pod %s still exists: %v", mine, err)
	}
	if _, err := c.client.CoreV1().Pods(c.namespace).Get(ctx, other, metav1.GetOptions{}); err != nil {
		t.Errorf("the other instance's Pod was touched: %v", err)
	}
	standing := SealedPolicyName(r.opts.Instance)
	if _, err := c.client.NetworkingV1().NetworkPolicies(c.namespace).Get(ctx, standing, metav1.GetOptions{}); err != nil {
		t.Errorf("the standing NetworkPolicy %s of the sealed runs: %v; want it kept", standing, err)
	}
	if removed, err := next.Cleanup(ctx); err != nil || removed != 0 {
		t.Errorf("second Cleanup: %d, %v; want 0, nil", removed, err)
	}
}

// TestRunnerCleanupKeepsOwnRuns: a runner's Cleanup never deletes its
// own live run.
func TestRunnerCleanupKeepsOwnRuns(t *testing.T) {
	t.Parallel()
	r := newTestRunner(t)
	removed, cleanErr := -1, error(nil)
	spec := r.spec(`echo up; sleep 1; echo still here`)
	spec.Stdout = onFirstWrite(func() { removed, cleanErr = r.Cleanup(context.Background()) })
	res := r.run(t, spec)
	if removed != 0 || cleanErr != nil {
		t.Errorf("Cleanup during the runner's own run: %d, %v; want 0, nil", removed, cleanErr)
	}
	if string(res.Stdout) != "up\nstill here\n" || res.ExitCode != 0 {
		t.Errorf("the run: stdout %q exit %d", res.Stdout, res.ExitCode)
	}
}
