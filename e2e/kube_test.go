package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	kubeRunner "github.com/alchemic-studio/alfred/sandbox/kube"
	"github.com/alchemic-studio/alfred/state"
)

// TestE2EKubernetes plays the scenario with ALFRED_RUNNER=kubernetes on the
// two-node cluster make test starts (scripts/k8s.sh): every run is a Pod
// of its own, sealed (no network: the gateway's socket relayed through the
// API server), its worktree and session copied in and back. The session the
// analysis creates is resumed by the development in another Pod; a Pod
// deleted in the middle of a run fails that run, which is retried and
// resumes the session as it was; closing the issue removes the session
// state; no Pod, Secret or NetworkPolicy of the bot is left.
func TestE2EKubernetes(t *testing.T) {
	started := time.Now()
	k := newKube(t)
	s := start(t, newFakeWorld(t), k.option)
	s.toPullRequest()
	s.sealed()
	k.podDeletedMidRun(s)
	s.w.close(s.n)
	s.waitStatus("done")
	s.stateGone()
	k.nothingLeft(s.instance)
	t.Logf("e2e on Kubernetes: wall time %s; webhook to the agent being started %s", time.Since(started).Round(time.Millisecond), s.webhookToAgent.Round(time.Millisecond))
}

// kube is the test cluster.
type kube struct {
	t          testing.TB
	kubeconfig string
	namespace  string
	client     kubernetes.Interface
}

func newKube(t testing.TB) *kube {
	t.Helper()
	k := &kube{t: t,
		kubeconfig: need(t, "ALFRED_TEST_KUBECONFIG", "the test cluster of scripts/k8s.sh start"),
		namespace:  need(t, "ALFRED_TEST_K8S_NAMESPACE", "the test cluster of scripts/k8s.sh start")}
	cfg, err := clientcmd.BuildConfigFromFlags("", k.kubeconfig)
	if err != nil {
		t.Fatalf("kubeconfig %s: %v", k.kubeconfig, err)
	}
	if k.client, err = kubernetes.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	return k
}

// option imports the agent image into the cluster's containerd (no
// registry) and points the bot at the cluster.
func (k *kube) option(t testing.TB, _ *bot, image, _ string) []string {
	t.Helper()
	imp := exec.Command("bash", "../scripts/k8s.sh", "import", image)
	if out, err := imp.CombinedOutput(); err != nil {
		t.Fatalf("scripts/k8s.sh import %s: %v\n%s", image, err, out)
	}
	return []string{"ALFRED_RUNNER=kubernetes", "ALFRED_KUBECONFIG=" + k.kubeconfig, "ALFRED_K8S_NAMESPACE=" + k.namespace}
}

// pods lists the Pods of the bot's instance.
func (k *kube) pods(instance string) []corev1.Pod {
	list, err := k.client.CoreV1().Pods(k.namespace).List(context.Background(), metav1.ListOptions{LabelSelector: "alfred.instance=" + instance})
	if err != nil {
		k.t.Fatalf("list Pods: %v", err)
	}
	return list.Items
}

// podDeletedMidRun holds a ci_fix run (its session folder tells the image's
// wrapper to wait), deletes its Pod while the agent runs, and checks that
// the run failed, was retried, and the retry resumed the session.
func (k *kube) podDeletedMidRun(s *scenario) {
	k.podGoneMidRun(s, func(victim corev1.Pod) {
		if err := k.client.CoreV1().Pods(k.namespace).Delete(context.Background(), victim.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
			s.t.Fatalf("delete Pod %s: %v", victim.Name, err)
		}
	})
}

// podGoneMidRun holds a ci_fix run, has remove end its Pod while the agent
// runs, checks that the run failed, was retried, and the retry resumed the
// session, and returns the failed run and the retry.
func (k *kube) podGoneMidRun(s *scenario, remove func(corev1.Pod)) (failed, retry state.Run) {
	t := s.t
	slow := filepath.Join(s.stateDir(), "e2e-slow")
	os.WriteFile(slow, nil, 0o644)
	s.w.status(s.mb.HeadSHA, "failure", "1 test failed")
	victim := k.heldAgentPod(s)
	os.Remove(slow) // the retry runs at once; the removed Pod had its own copy
	remove(victim)
	waitFor(t, 3*time.Minute, "the ci_fix retried", func() bool {
		s.waitStatus("in_ci")
		return s.mb.CIFixAttempts == 1 && s.lastRun().Phase == "ci_fix" && s.lastRun().Status == state.RunSucceeded
	})
	var fails int
	for _, r := range s.runs {
		if r.Phase == "ci_fix" && r.Status == state.RunFailed {
			fails++
			failed = r
			t.Logf("the run whose Pod was removed: %s", r.Outcome)
		}
	}
	if fails != 1 {
		t.Errorf("ci_fix runs failed: %d, want the one whose Pod was removed", fails)
	}
	if l := s.lastSession(); !l.Resumed || l.NativeSessionID == nil || *l.NativeSessionID != s.native {
		t.Errorf("the retry's session: %+v, want %s resumed", l, s.native)
	}
	return failed, s.lastRun()
}

// heldAgentPod waits for the Pod of the instance whose agent runs: the
// held run's.
func (k *kube) heldAgentPod(s *scenario) corev1.Pod {
	var held *corev1.Pod
	waitFor(s.t, 2*time.Minute, "the held ci_fix run's Pod", func() bool {
		for _, p := range k.pods(s.instance) {
			for _, c := range p.Status.ContainerStatuses {
				if c.Name == "agent" && c.State.Running != nil {
					held = &p
				}
			}
		}
		return held != nil
	})
	return *held
}

// nothingLeft checks that no Pod, Secret or NetworkPolicy of the instance is
// left once the runs and the detections ended, but the standing policy of
// its sealed runs, which must deny them all traffic; the test deletes it.
func (k *kube) nothingLeft(instance string) {
	ctx, api := context.Background(), k.client.NetworkingV1().NetworkPolicies(k.namespace)
	np, err := api.Get(ctx, kubeRunner.SealedPolicyName(instance), metav1.GetOptions{})
	switch {
	case err != nil:
		k.t.Errorf("the NetworkPolicy of the sealed runs: %v", err)
	case len(np.Spec.Ingress)+len(np.Spec.Egress) > 0 || len(np.Spec.PolicyTypes) != 2 || np.Spec.PodSelector.MatchLabels[kubeRunner.LabelSealed] != "true":
		k.t.Errorf("the NetworkPolicy of the sealed runs does not deny them all traffic: %+v", np.Spec)
	default:
		if err := api.Delete(ctx, np.Name, metav1.DeleteOptions{}); err != nil {
			k.t.Errorf("delete the NetworkPolicy of the sealed runs: %v", err)
		}
	}
	var left []string
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(500 * time.Millisecond) {
		if left = k.objects(instance); len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			k.t.Fatalf("left in the cluster: %s", strings.Join(left, ", "))
		}
	}
}

// objects lists the Pods, Secrets and NetworkPolicies of the instance.
func (k *kube) objects(instance string) []string {
	ctx, sel := context.Background(), metav1.ListOptions{LabelSelector: "alfred.instance=" + instance}
	var left []string
	for _, p := range k.pods(instance) {
		left = append(left, "Pod/"+p.Name)
	}
	secrets, err := k.client.CoreV1().Secrets(k.namespace).List(ctx, sel)
	if err != nil {
		k.t.Fatalf("list Secrets: %v", err)
	}
	for _, o := range secrets.Items {
		left = append(left, "Secret/"+o.Name)
	}
	policies, err := k.client.NetworkingV1().NetworkPolicies(k.namespace).List(ctx, sel)
	if err != nil {
		k.t.Fatalf("list NetworkPolicies: %v", err)
	}
	for _, o := range policies.Items {
		left = append(left, "NetworkPolicy/"+o.Name)
	}
	return left
}
