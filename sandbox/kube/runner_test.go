package kube

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/sandbox"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// testRunner is a Kubernetes runner with an instance of its own, whose
// objects are checked to be gone when the test ends.
type testRunner struct {
	*Runner
	c testCluster
}

func newTestRunner(t testing.TB, edit ...func(*Options)) *testRunner {
	t.Helper()
	c := clusterEnv(t)
	instance := "test-" + randomHex(4)
	opts := Options{
		Kubeconfig:      os.Getenv("ALFRED_TEST_KUBECONFIG"),
		Namespace:       c.namespace,
		Instance:        instance,
		KillGrace:       time.Second,
		ImagePullPolicy: corev1.PullNever, // no registry: the image was imported into containerd
		StartTimeout:    time.Minute,
		// Warnings only: New's notice on every test would drown the output.
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	for _, e := range edit {
		e(&opts)
	}
	r, err := New(context.Background(), opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if left := instanceObjects(t, c, instance); len(left) > 0 {
			t.Errorf("objects left behind by instance %s: %v", instance, left)
		}
		// The standing policy of the sealed runs outlives them by design.
		standing := SealedPolicyName(instance)
		if err := c.client.NetworkingV1().NetworkPolicies(c.namespace).Delete(context.Background(), standing, now); ignoreNotFound(err) != nil {
			t.Errorf("delete the NetworkPolicy %s: %v", standing, err)
		}
		r.Close()
	})
	return &testRunner{Runner: r, c: c}
}

// instanceObjects lists the Pods, Secrets and NetworkPolicies of an
// instance, but for the standing NetworkPolicy of its sealed runs.
func instanceObjects(t testing.TB, c testCluster, instance string) []string {
	t.Helper()
	ctx := context.Background()
	o := metav1.ListOptions{LabelSelector: labels.SelectorFromSet(labels.Set{LabelInstance: instance}).String()}
	var names []string
	pods, err := c.client.CoreV1().Pods(c.namespace).List(ctx, o)
	if err != nil {
		t.Fatalf("list Pods: %v", err)
	}
	for _, p := range pods.Items {
		names = append(names, "Pod/"+p.Name)
	}
	secrets, err := c.client.CoreV1().Secrets(c.namespace).List(ctx, o)
	if err != nil {
		t.Fatalf("list Secrets: %v", err)
	}
	for _, s := range secrets.Items {
		names = append(names, "Secret/"+s.Name)
	}
	policies, err := c.client.NetworkingV1().NetworkPolicies(c.namespace).List(ctx, o)
	if err != nil {
		t.Fatalf("list NetworkPolicies: %v", err)
	}
	for _, n := range policies.Items {
		if n.Name != SealedPolicyName(instance) {
			names = append(names, "NetworkPolicy/"+n.Name)
		}
	}
	return names
}

// spec returns a Spec running a busybox shell script as the agent user.
func (r *testRunner) spec(script string) sandbox.Spec {
	return sandbox.Spec{
		Image: r.c.image,
		UID:   agentUID,
		GID:   agentUID,
		Argv:  []string{"/bin/sh", "-c", script},
		Env:   map[string]string{"PATH": "/bin"},
	}
}

func (r *testRunner) run(t *testing.T, spec sandbox.Spec) *sandbox.Result {
	t.Helper()
	res, err := r.Run(context.Background(), spec)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

// ownedDir makes a host folder owned by the agent user, for read-write mounts.
func ownedDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "owned")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, agentUID, agentUID); err != nil {
		t.Fatalf("chown %s (the tests run as root): %v", dir, err)
	}
	return dir
}

// TestClientRateLimit: the runs of a Runner share its client, whose own
// rate limit must not be client-go's 5 requests a second (16 runs at once
// waited on it for tens of seconds); a kubeconfig's own limit is kept.
func TestClientRateLimit(t *testing.T) {
	r := newTestRunner(t)
	if got := r.client.CoreV1().RESTClient().GetRateLimiter().QPS(); got != clientQPS {
		t.Errorf("the client's rate limit is %v requests a second, want %v", got, float32(clientQPS))
	}
	if r.config.Burst != clientBurst {
		t.Errorf("the client's burst is %d, want %d", r.config.Burst, clientBurst)
	}
}
